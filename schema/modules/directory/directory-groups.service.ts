// Groups from a directory, and what they give their members (docs/architecture.md#directory-provisioning).
import type { Context } from '../../context.ts';
import type { DirectoryGroup, DirectoryGroupChange, DirectoryGroupInput, GroupWhere, ListPage, Listed, ScimCaller } from './directory.types.ts';

/** `withMembers` false leaves members out (excludedAttributes=members, or a list of many groups). */
export async function listDirectoryGroups(_ctx: Context, _caller: ScimCaller, _page: ListPage<GroupWhere>, _withMembers = true): Promise<Listed<DirectoryGroup>> {
  throw new Error('not yet');
}
export async function getDirectoryGroup(_ctx: Context, _caller: ScimCaller, _id: string, _withMembers = true): Promise<DirectoryGroup> {
  throw new Error('not yet');
}
export async function createDirectoryGroup(_ctx: Context, _caller: ScimCaller, _input: DirectoryGroupInput): Promise<DirectoryGroup> {
  throw new Error('not yet');
}
export async function changeDirectoryGroup(_ctx: Context, _caller: ScimCaller, _id: string, _change: DirectoryGroupChange): Promise<DirectoryGroup> {
  throw new Error('not yet');
}
export async function deleteDirectoryGroup(_ctx: Context, _caller: ScimCaller, _id: string): Promise<void> {
  throw new Error('not yet');
}
