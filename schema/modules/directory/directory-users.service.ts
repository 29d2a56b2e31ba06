// Users from a directory (docs/architecture.md#directory-provisioning).
import type { Context } from '../../context.ts';
import type { DirectoryUser, DirectoryUserInput, ListPage, Listed, ScimCaller, UserWhere } from './directory.types.ts';

export async function listDirectoryUsers(_ctx: Context, _caller: ScimCaller, _page: ListPage<UserWhere>): Promise<Listed<DirectoryUser>> {
  throw new Error('not yet');
}
export async function getDirectoryUser(_ctx: Context, _caller: ScimCaller, _id: string): Promise<DirectoryUser> {
  throw new Error('not yet');
}
export async function createDirectoryUser(_ctx: Context, _caller: ScimCaller, _input: DirectoryUserInput): Promise<DirectoryUser> {
  throw new Error('not yet');
}
/** PUT, or a PATCH applied by the caller to the version it read: refused (409, retry) when the user changed since. */
export async function replaceDirectoryUser(_ctx: Context, _caller: ScimCaller, _id: string, _input: DirectoryUserInput, _expectedVersion?: number): Promise<DirectoryUser> {
  throw new Error('not yet');
}
export async function deleteDirectoryUser(_ctx: Context, _caller: ScimCaller, _id: string): Promise<void> {
  throw new Error('not yet');
}
