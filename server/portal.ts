// The SvelteKit portal runs in this process. It reaches the service only through GraphQL: Koa hands it a
// bridge on the Node request (adapter-node passes the request to SvelteKit as `platform.req`).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GraphQLError } from 'graphql';
import type Koa from 'koa';
import { makeContext, type Actor, type ContextBase } from '../schema/context.ts';
import { ServiceUnavailableError } from '../schema/errors/unavailable.ts';
import { resolveActor } from '../schema/actor.ts';
import { classifyError } from './errors/classify.ts';
import type { createExecutor } from './graphql/executor.ts';
import type { RequestState } from './middleware/request.ts';
import type { SessionCookie, TesseraBridge } from './portal-contract.ts';

export type PortalHandler = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/** The database down or saturated: the portal answers 503 with Retry-After (hooks.server.ts), as the API does. */
function unavailableError(error = new ServiceUnavailableError()) {
  return { message: error.message, extensions: { code: error.code, retryAfter: error.retryAfterSeconds } };
}

/** A GraphQL error as the portal may see it: the domain's own errors and the client's mistakes as they are, anything else masked. */
function bridgeError(e: GraphQLError): { message: string; extensions: Record<string, unknown> } {
  const what = classifyError(e);
  switch (what.kind) {
    case 'domain':
      return { message: what.error.message, extensions: { ...what.error.extensions } };
    case 'request':
      return { message: what.message, extensions: { code: what.code } };
    case 'unavailable':
      return unavailableError(what.error);
    case 'internal':
      return { message: 'Unexpected error', extensions: { code: 'internal_error' } };
  }
}

export function portalBridge(
  base: ContextBase,
  executor: ReturnType<typeof createExecutor>,
  cookie: SessionCookie,
  handler: PortalHandler,
): Koa.Middleware {
  return async (ctx) => {
    const request = ctx.state.request as RequestState;
    const bridge: TesseraBridge = {
      cookie,
      graphql: async (document, variables, credentials) => {
        const anonymous = makeContext(base, null, request);
        let actor: Actor | null;
        try {
          actor = credentials?.sessionToken
            ? await resolveActor(anonymous, { sessionCookie: credentials.sessionToken })
            : null;
        } catch (error) {
          const what = classifyError(error);
          if (what.kind === 'unavailable') return { errors: [unavailableError(what.error)] };
          throw error;
        }
        const result = await executor.raw(makeContext(base, actor, request), document, variables);
        return {
          data: result.data ?? undefined,
          errors: result.errors?.map(bridgeError),
        };
      },
    };
    (ctx.req as IncomingMessage & { tessera?: TesseraBridge }).tessera = bridge;
    // Always overwritten, so a client cannot choose them; ctx.protocol honours X-Forwarded-Proto only behind a trusted proxy.
    ctx.req.headers['x-tessera-proto'] = ctx.protocol;
    ctx.req.headers['x-tessera-host'] = ctx.host;
    ctx.respond = false;
    await new Promise<void>((resolve) => {
      ctx.res.once('finish', resolve);
      ctx.res.once('close', resolve);
      handler(ctx.req, ctx.res, () => {
        ctx.res.statusCode = 404;
        ctx.res.end('Not found');
      });
    });
  };
}
