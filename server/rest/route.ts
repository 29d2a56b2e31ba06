// A REST route is a row in a table: method, path, one GraphQL operation, how to build its variables from the
// request, and how to shape its data into the documented response. route() types a row from its operation's
// document; mountRoutes turns a table into handlers.
import type Router from '@koa/router';
import type { DocumentNode } from 'graphql';
import type Koa from 'koa';
import type { Context } from '../../schema/context.ts';
import { DomainError, UnauthenticatedError, UserError, ValidationError } from '../../schema/errors/index.ts';
import { camelCase, snakeCase } from '../../schema/lib/case.ts';
import type { Executor, VariableValues } from '../graphql/executor.ts';
import type { TadaDocumentNode } from '../graphql/typed.ts';
import { requireStorable } from '../middleware/input-guard.ts';
import {
  DEVICE_COOKIE,
  deviceCookieAttributes,
  sessionCookieAttributes,
  type SessionCookie,
} from '../portal-contract.ts';

export interface RestRequest {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** The JSON body: always an object for routes that take one (checked before the route runs). */
  body: Record<string, unknown>;
  context: Context;
}

export interface RestResponse {
  status?: number;
  body?: unknown;
  /**
   * Sets the portal's session cookie to this session, or clears it (null); after a sign-in, the device cookie too
   * (docs/architecture.md#identity-sessions-and-tokens).
   */
  session?: { token: string; expiresAt: string; device?: { value: string; expiresAt: string } | null } | null;
}

interface RouteHead {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  summary: string;
  /** Callable without credentials (sign-in, accepting an invitation). */
  public?: boolean;
  /** Takes a JSON body (POST and PATCH do; a DELETE may opt in). */
  body?: boolean;
}

/** A row as written: its variables and its data are the types its operation's document gives. */
export interface RouteDefinition<Result, Variables> extends RouteHead {
  operation: TadaDocumentNode<Result, Variables>;
  variables?: (req: RestRequest) => VariableValues<NoInfer<Variables>>;
  respond: (data: Result, req: RestRequest) => RestResponse;
}

/** A row as a table holds it: whatever its types, it runs its operation and answers. */
export interface RestRoute extends RouteHead {
  operation: DocumentNode;
  answer: (run: Executor, req: RestRequest) => Promise<RestResponse>;
}

export function route<Result, Variables>(definition: RouteDefinition<Result, Variables>): RestRoute {
  const { variables, respond, ...head } = definition;
  return {
    ...head,
    // The variables are read before the promise: a refusal of them names the request's own fields, and throws past
    // restFieldNames, which renames only the operation's.
    answer: (run, req) => {
      const values = variables?.(req);
      return run(req.context, definition.operation, values).then((data) => respond(data, req));
    },
  };
}

function jsonBody(ctx: Koa.Context, wanted: boolean): Record<string, unknown> {
  const length = Number(ctx.get('Content-Length') || 0);
  const hasBody = length > 0 || ctx.get('Transfer-Encoding') !== '';
  if (!wanted || !hasBody) return {};
  if (!ctx.is('application/json')) {
    throw new DomainError('unsupported_media_type', 'Send the body as JSON (Content-Type: application/json)');
  }
  const body = (ctx.request as { body?: unknown }).body;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('The body must be a JSON object');
  return body as Record<string, unknown>;
}

function singleQuery(query: Record<string, string | string[] | undefined>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) throw new ValidationError(`Query parameter ${k} is given more than once`);
    out[k] = v;
  }
  return out;
}

/** Services name fields as GraphQL does (redirectUris.0); a REST caller sent redirect_uris. */
function restFieldNames(error: unknown): never {
  if (error instanceof UserError && error.details.length) {
    throw new UserError(
      error.code,
      error.message,
      error.details.map((d) => ({ ...d, path: snakeCase(d.path) })),
    );
  }
  throw error;
}

export function mountRoutes(router: Router, routes: readonly RestRoute[], run: Executor, cookie: SessionCookie) {
  for (const route of routes) {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete';
    router[method](route.path, async (ctx) => {
      const context = ctx.state.tessera as Context;
      if (!route.public && !context.actor)
        throw new UnauthenticatedError('Authentication required: send Authorization: Bearer <token>');
      const req: RestRequest = {
        params: ctx.params,
        query: singleQuery(ctx.query),
        body: jsonBody(ctx, route.body ?? (route.method === 'POST' || route.method === 'PATCH')),
        context,
      };
      requireStorable([
        [req.params, 'path'],
        [req.query, 'query'],
        [req.body, ''],
      ]);
      const { status = 200, body, session } = await route.answer(run, req).catch(restFieldNames);
      if (session !== undefined) {
        ctx.cookies.set(cookie.name, session?.token ?? null, {
          ...sessionCookieAttributes(cookie, session ? new Date(session.expiresAt) : undefined),
          overwrite: true,
        });
        if (session?.device)
          ctx.cookies.set(DEVICE_COOKIE, session.device.value, {
            ...deviceCookieAttributes(cookie, new Date(session.device.expiresAt)),
            overwrite: true,
          });
      }
      ctx.set('Cache-Control', 'no-store');
      ctx.status = status;
      if (body !== undefined) ctx.body = body;
    });
  }
}

/** ?limit= and ?cursor= of a list. A limit must be written as a whole number (not "abc", "1e3" or ""). */
export const page = (query: Record<string, string | undefined>) => ({
  limit: query.limit === undefined ? undefined : wholeNumber(query.limit, 'limit'),
  cursor: query.cursor,
});

/** A query parameter that must be a whole number; the range is the operation's to check. */
function wholeNumber(value: string, name: string): number {
  if (!/^-?\d+$/.test(value))
    throw new ValidationError('The request is invalid', [{ path: name, message: 'must be a whole number' }]);
  return Number(value);
}

/** Copies the listed snake_case body fields to camelCase variables, leaving absent ones out. */
export function pick(body: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) if (field in body) out[camelCase(field)] = body[field];
  return out;
}

/** The body as an operation's input: only the listed snake_case fields (onlyFields), given in camelCase (pick). */
export const fromBody = (body: Record<string, unknown>, fields: readonly string[]) =>
  pick(onlyFields(body, fields), fields);

/** Rejects body fields the route does not know, so that a typo is an error rather than silently ignored. */
export function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): Record<string, unknown> {
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    throw new ValidationError(
      'The body has unknown fields',
      unknown.map((k) => ({ path: k, message: `is not a known field (expected one of: ${allowed.join(', ')})` })),
    );
  }
  return body;
}
