// The SvelteKit portal runs in this process. It reaches the service only through GraphQL: Koa hands it a
// bridge on the Node request (adapter-node passes the request to SvelteKit as `platform.req`).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../schema/context.ts';
import { DomainError } from '../schema/errors/index.ts';
import { resolveActor } from '../schema/modules/auth/actor.service.ts';
import type { createExecutor } from './graphql/executor.ts';
import type { RequestState } from './middleware/request.ts';

export type PortalHandler = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

export interface TesseraBridge {
  graphql(document: string, variables?: Record<string, unknown>, credentials?: { sessionToken?: string | null }): Promise<{
    data?: unknown;
    errors?: { message: string; extensions?: { code?: string; [k: string]: unknown } }[];
  }>;
  cookie: { name: string; secure: boolean };
}

export function portalBridge(
  base: ContextBase,
  executor: ReturnType<typeof createExecutor>,
  cookie: { name: string; secure: boolean },
  handler: PortalHandler,
): Koa.Middleware {
  return async (ctx) => {
    const request = ctx.state.request as RequestState;
    const bridge: TesseraBridge = {
      cookie,
      graphql: async (document, variables, credentials) => {
        const anonymous = makeContext(base, null, request);
        const actor = credentials?.sessionToken ? await resolveActor(anonymous, { sessionCookie: credentials.sessionToken }) : null;
        const result = await executor.raw(makeContext(base, actor, request), document, variables);
        return {
          data: result.data ?? undefined,
          errors: result.errors?.map((e) =>
            e.originalError instanceof DomainError || !e.originalError
              ? { message: e.message, extensions: { ...e.extensions } }
              : { message: 'Unexpected error', extensions: { code: 'internal_error' } },
          ),
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
