// /scim/v2/Users (RFC 7644 3.3-3.6): each endpoint reads the request, calls one directory service with the token's
// caller, and answers the resource. PATCH is applied here to the version read, and applied again when the user
// changed in between (the service refuses a stale version), as a directory's retry would.
import { isDeepStrictEqual } from 'node:util';
import type { RouterMiddleware } from '@koa/router';
import type Koa from 'koa';
import {
  createDirectoryUser,
  deleteDirectoryUser,
  getDirectoryUser,
  listDirectoryUsers,
  replaceDirectoryUser,
} from '../../schema/modules/directory/directory-users.service.ts';
import { ScimVersionConflictError } from '../../schema/modules/directory/directory.errors.ts';
import { readScimBody } from './body.ts';
import { scimUserWhere } from './filter.ts';
import { userDocument, userInputFromScim } from './input.ts';
import { queryParams, resourceId, resourceParams, searchParams, type ListParams } from './params.ts';
import { patchUser, readPatchBody } from './patch.ts';
import { listResponse, project, projection, USER_SCHEMA, userResource } from './resources.ts';
import { sendScim } from './responses.ts';
import { scimState } from './state.ts';

/** How often a PATCH is applied again when the user changed under it. */
const PATCH_ATTEMPTS = 3;

async function list(ctx: Koa.Context, params: ListParams): Promise<void> {
  const { context, caller, base } = scimState(ctx);
  const where = params.filter === undefined ? {} : scimUserWhere(params.filter);
  const listed = await listDirectoryUsers(context, caller, {
    where,
    startIndex: params.startIndex,
    count: params.count,
  });
  const p = projection(params.attributes, params.excludedAttributes, USER_SCHEMA);
  sendScim(
    ctx,
    200,
    listResponse(
      listed.resources.map((u) => project(userResource(u, base), p)),
      listed.totalResults,
      params.startIndex,
    ),
  );
}

/** One user as the request's attributes parameters ask. */
function answer(ctx: Koa.Context, status: number, resource: Record<string, unknown>): void {
  const { attributes, excludedAttributes } = resourceParams(ctx);
  sendScim(ctx, status, project(resource, projection(attributes, excludedAttributes, USER_SCHEMA)));
}

export const listUsers: RouterMiddleware = (ctx) => list(ctx, queryParams(ctx));

export const searchUsers: RouterMiddleware = async (ctx) => list(ctx, searchParams(await readScimBody(ctx)));

export const createUser: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  const input = userInputFromScim(await readScimBody(ctx));
  const user = await createDirectoryUser(context, caller, input);
  const resource = userResource(user, base);
  ctx.set('Location', (resource.meta as { location: string }).location);
  answer(ctx, 201, resource);
};

export const getUser: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  answer(ctx, 200, userResource(await getDirectoryUser(context, caller, resourceId(ctx)), base));
};

export const replaceUser: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  const input = userInputFromScim(await readScimBody(ctx));
  answer(ctx, 200, userResource(await replaceDirectoryUser(context, caller, resourceId(ctx), input), base));
};

export const patchUserEndpoint: RouterMiddleware = async (ctx) => {
  const { context, caller, base } = scimState(ctx);
  const operations = readPatchBody(await readScimBody(ctx));
  for (let attempt = 1; ; attempt++) {
    const current = await getDirectoryUser(context, caller, resourceId(ctx));
    const input = patchUser(current, operations);
    // Entra ID sends changes of attributes Tessera does not keep (title, department): nothing to write for those.
    if (isDeepStrictEqual(input, userInputFromScim(userDocument(current))))
      return answer(ctx, 200, userResource(current, base));
    try {
      const user = await replaceDirectoryUser(context, caller, current.id, input, current.version);
      return answer(ctx, 200, userResource(user, base));
    } catch (error) {
      if (!(error instanceof ScimVersionConflictError) || attempt >= PATCH_ATTEMPTS) throw error;
    }
  }
};

export const deleteUser: RouterMiddleware = async (ctx) => {
  const { context, caller } = scimState(ctx);
  await deleteDirectoryUser(context, caller, resourceId(ctx));
  ctx.status = 204;
};
