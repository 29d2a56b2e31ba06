// /scim/v2/Groups (RFC 7644 3.3-3.6). Members are read only when the answer shows them: `excludedAttributes=members`
// (as Entra ID asks) or `attributes` without members skips them. PUT replaces the member list; PATCH changes it as a
// delta and answers 204, sparing a directory the whole list of a large group after each change.
import type { RouterMiddleware } from '@koa/router';
import type Koa from 'koa';
import {
  changeDirectoryGroup,
  createDirectoryGroup,
  deleteDirectoryGroup,
  getDirectoryGroup,
  listDirectoryGroups,
} from '../../schema/modules/directory/directory-groups.service.ts';
import { readScimBody } from './body.ts';
import { scimGroupWhere } from './filter.ts';
import { groupInputFromScim } from './input.ts';
import { queryParams, resourceId, resourceParams, searchParams, type ListParams } from './params.ts';
import { patchGroup, readPatchBody } from './patch.ts';
import { GROUP_SCHEMA, groupResource, listResponse, project, projection, wants } from './resources.ts';
import { sendScim } from './responses.ts';
import { scimState } from './state.ts';

async function list(ctx: Koa.Context, params: ListParams): Promise<void> {
  const { context, caller, base } = scimState(ctx);
  const where = params.filter === undefined ? {} : scimGroupWhere(params.filter);
  const p = projection(params.attributes, params.excludedAttributes, GROUP_SCHEMA);
  const withMembers = wants(p, 'members');
  const listed = await listDirectoryGroups(
    context,
    caller,
    { where, startIndex: params.startIndex, count: params.count },
    withMembers,
  );
  sendScim(
    ctx,
    200,
    listResponse(
      listed.resources.map((g) => project(groupResource(g, base, withMembers), p)),
      listed.totalResults,
      params.startIndex,
    ),
  );
}

function requested(ctx: Koa.Context) {
  const { attributes, excludedAttributes } = resourceParams(ctx);
  const p = projection(attributes, excludedAttributes, GROUP_SCHEMA);
  return { p, withMembers: wants(p, 'members') };
}

export const listGroups: RouterMiddleware = (ctx) => list(ctx, queryParams(ctx));

export const searchGroups: RouterMiddleware = async (ctx) => list(ctx, searchParams(await readScimBody(ctx)));

export const createGroup: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  const { p, withMembers } = requested(ctx);
  const group = await createDirectoryGroup(context, caller, groupInputFromScim(await readScimBody(ctx)));
  const resource = groupResource(group, base, withMembers);
  ctx.set('Location', (resource.meta as { location: string }).location);
  sendScim(ctx, 201, project(resource, p));
};

export const getGroup: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  const { p, withMembers } = requested(ctx);
  sendScim(
    ctx,
    200,
    project(
      groupResource(await getDirectoryGroup(context, caller, resourceId(ctx), withMembers), base, withMembers),
      p,
    ),
  );
};

export const replaceGroup: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  const { p, withMembers } = requested(ctx);
  const input = groupInputFromScim(await readScimBody(ctx));
  // PUT replaces the resource (RFC 7644 3.5.1): an absent externalId or member list is none.
  await changeDirectoryGroup(context, caller, resourceId(ctx), {
    displayName: input.displayName,
    externalId: input.externalId ?? null,
    members: input.members ?? [],
  });
  const group = await getDirectoryGroup(context, caller, resourceId(ctx));
  sendScim(ctx, 200, project(groupResource(group, base, withMembers), p));
};

export const patchGroupEndpoint: RouterMiddleware = async (ctx) => {
  const { context, caller } = scimState(ctx);
  const change = patchGroup(readPatchBody(await readScimBody(ctx)));
  await changeDirectoryGroup(context, caller, resourceId(ctx), change);
  ctx.status = 204;
};

export const deleteGroup: RouterMiddleware = async (ctx) => {
  const { context, caller } = scimState(ctx);
  await deleteDirectoryGroup(context, caller, resourceId(ctx));
  ctx.status = 204;
};
