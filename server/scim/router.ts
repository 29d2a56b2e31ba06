// /scim/v2: the SCIM 2.0 service provider a directory (Entra ID, Okta) provisions an organization through
// (docs/architecture.md#directory-provisioning). Steps, in order: the bearer token (its organization is the only one
// the request sees), its rate limit, the route, and every answer in SCIM's shapes; each request of an accepted token
// is then written to the directory's log. Like server/oidc, the endpoints call schema services directly.
import Router from '@koa/router';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { consume, scimTokenLimit, type RateLimitSettings } from '../../schema/limits/rate-limits.ts';
import { authenticateScimToken, recordScimRequest } from '../../schema/modules/directory/directory.service.ts';
import type { ScimCaller } from '../../schema/modules/directory/directory.types.ts';
import { bearerToken } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { reportLimits } from '../middleware/rate-limit.ts';
import { resourceTypes, schemas, serviceProviderConfig } from './discovery.ts';
import {
  createGroup,
  deleteGroup,
  getGroup,
  listGroups,
  patchGroupEndpoint,
  replaceGroup,
  searchGroups,
} from './groups.ts';
import { resourceId } from './params.ts';
import { listResponse, scimBase } from './resources.ts';
import { answerError, sendScim, type ScimOutcome } from './responses.ts';
import { ScimHttpError } from './scim.errors.ts';
import type { ScimState } from './state.ts';
import { createUser, deleteUser, getUser, listUsers, patchUserEndpoint, replaceUser, searchUsers } from './users.ts';

export const SCIM_PREFIX = '/scim/v2';

/** An id in a path, as the directory's ids are made: anything else (NUL, 1,000 characters) is no resource here. */
const ID = /^[\x21-\x7e]{1,100}$/;

const CHALLENGE = 'Bearer realm="tessera"';

/** The token's directory, or 401 (RFC 6750 3: the challenge says invalid_token when a token was given). */
async function authenticate(ctx: Koa.Context, base: ContextBase): Promise<{ caller: ScimCaller; state: ScimState }> {
  const invalid = () =>
    new ScimHttpError(401, 'The directory token is unknown or revoked', undefined, {
      'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"`,
    });
  const token = bearerToken(ctx.get('Authorization'), invalid);
  if (token === null)
    throw new ScimHttpError(401, 'Send the directory token as Authorization: Bearer <token>', undefined, {
      'WWW-Authenticate': CHALLENGE,
    });
  const context = makeContext(base, null, ctx.state.request as RequestState);
  const caller = await authenticateScimToken(context, token);
  if (!caller) throw invalid();
  return { caller, state: { context, caller, base: scimBase(base.settings.issuer()) } };
}

/** RFC 7644 4: the discovery endpoints take no filter, and answer 403 to one rather than seem to apply it. */
const noFilter: Koa.Middleware = async (ctx, next) => {
  if (ctx.query.filter !== undefined) throw new ScimHttpError(403, 'This endpoint takes no filter (RFC 7644 4)');
  await next();
};

/** The routes, without the token and the log around them: also what test/server/openapi.test.ts checks openapi.json against. */
export function scimRouter(): Router {
  const router = new Router({ prefix: SCIM_PREFIX });
  const base = (ctx: Koa.Context) => (ctx.state.scim as ScimState).base;
  router.param('id', async (id, ctx, next) => {
    if (!ID.test(id)) throw new ScimHttpError(404, 'No such resource');
    return next();
  });

  router.get('/Users', listUsers);
  router.post('/Users', createUser);
  router.post('/Users/.search', searchUsers);
  router.get('/Users/:id', getUser);
  router.put('/Users/:id', replaceUser);
  router.patch('/Users/:id', patchUserEndpoint);
  router.delete('/Users/:id', deleteUser);

  router.get('/Groups', listGroups);
  router.post('/Groups', createGroup);
  router.post('/Groups/.search', searchGroups);
  router.get('/Groups/:id', getGroup);
  router.put('/Groups/:id', replaceGroup);
  router.patch('/Groups/:id', patchGroupEndpoint);
  router.delete('/Groups/:id', deleteGroup);

  router.get('/ServiceProviderConfig', noFilter, (ctx) => sendScim(ctx, 200, serviceProviderConfig(base(ctx))));
  router.get('/ResourceTypes', noFilter, (ctx) => {
    const all = resourceTypes(base(ctx));
    sendScim(ctx, 200, listResponse(all, all.length, 1));
  });
  router.get('/ResourceTypes/:id', noFilter, (ctx) => {
    const found = resourceTypes(base(ctx)).find((t) => t.id === resourceId(ctx));
    if (!found) throw new ScimHttpError(404, 'No such resource type: User and Group are served');
    sendScim(ctx, 200, found);
  });
  router.get('/Schemas', noFilter, (ctx) => {
    const all = schemas(base(ctx));
    sendScim(ctx, 200, listResponse(all, all.length, 1));
  });
  router.get('/Schemas/:id', noFilter, (ctx) => {
    const id = resourceId(ctx).toLowerCase();
    const found = schemas(base(ctx)).find((s) => String(s.id).toLowerCase() === id);
    if (!found) throw new ScimHttpError(404, 'No such schema: the core User and Group schemas are served');
    sendScim(ctx, 200, found);
  });
  return router;
}

export interface ScimOptions {
  logger: Logger;
  rateLimits?: Partial<RateLimitSettings>;
}

export function scimEndpoint(base: ContextBase, { logger, rateLimits = {} }: ScimOptions): Koa.Middleware {
  const router = scimRouter();
  const served = router.routes();
  const allowed = router.allowedMethods();
  // A path served for other methods is answered 405 with Allow by allowedMethods, which runs when no route took it.
  const dispatch = async (ctx: Koa.Context): Promise<void> => {
    await served(ctx as Parameters<typeof served>[0], async () => {
      await allowed(ctx as Parameters<typeof allowed>[0], async () => {});
    });
  };

  const record = async (ctx: Koa.Context, state: ScimState, outcome: ScimOutcome) => {
    try {
      await recordScimRequest(state.context, state.caller, { method: ctx.method, path: ctx.path, ...outcome });
    } catch (error) {
      // The log is for the admins' page; a directory's request never fails because it could not be written.
      logger.warn({ err: error, requestId: state.context.request.requestId }, 'SCIM request not logged');
    }
  };

  return async (ctx, next) => {
    if (ctx.path !== SCIM_PREFIX && !ctx.path.startsWith(`${SCIM_PREFIX}/`)) {
      await next();
      return;
    }
    ctx.set('Cache-Control', 'no-store');
    let state: ScimState | undefined;
    let outcome: ScimOutcome;
    try {
      const accepted = await authenticate(ctx, base);
      state = accepted.state;
      ctx.state.scim = state;
      reportLimits(ctx, await consume(state.context, [scimTokenLimit(accepted.caller.tokenId, rateLimits)]));
      await dispatch(ctx);
      // A method no route knows (501 from allowedMethods) is answered as the REST routers do: 405 with Allow.
      if (ctx.status === 405 || ctx.status === 501) {
        throw new ScimHttpError(405, `${ctx.method} is not served at this path`, undefined, {
          Allow: ctx.response.get('Allow'),
        });
      }
      if (ctx.status === 404 && ctx.body === undefined)
        throw new ScimHttpError(404, `No endpoint ${ctx.method} ${ctx.path}`);
      outcome = { status: ctx.status };
    } catch (error) {
      outcome = answerError(ctx, error, logger);
    }
    if (state) await record(ctx, state, outcome);
  };
}
