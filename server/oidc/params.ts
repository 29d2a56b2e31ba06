// Reading OAuth parameters: the query of a GET, or a form or JSON body of a POST. A parameter given twice
// stays an array so the endpoint can refuse it (RFC 6749 3.1, 3.2).
import type Koa from 'koa';
import { InvalidClient, InvalidRequest } from '../../schema/modules/oauth/oauth.errors.ts';
import { requireStorable } from '../middleware/input-guard.ts';

export type Params = Record<string, string | string[] | undefined>;

export function requestParams(ctx: Koa.Context): Params {
  if (ctx.method === 'GET' || ctx.method === 'HEAD') return storable(ctx.query);
  if (!ctx.is('application/x-www-form-urlencoded', 'application/json')) {
    throw new InvalidRequest('Send the parameters as application/x-www-form-urlencoded (or JSON)');
  }
  const body = formOrJsonBody(ctx);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InvalidRequest('The body must be an object of parameters');
  return storable(body as Params);
}

/** No OAuth request needs more; the body parser's qs stopped at as many. */
const MAX_FORM_FIELDS = 1000;

/**
 * The parsed body: a form as the URL standard reads application/x-www-form-urlencoded, like the query of a GET
 * (names taken literally, a name given twice kept as an array), since the router's body parser hands forms over as
 * text (router.ts); JSON as parsed.
 */
export function formOrJsonBody(ctx: Koa.Context): unknown {
  const body = (ctx.request as { body?: unknown }).body;
  if (typeof body !== 'string' || !ctx.is('application/x-www-form-urlencoded')) return body;
  const form: Params = {};
  let fields = 0;
  // One pass (getAll per name would be quadratic in a body of many names).
  for (const [name, value] of new URLSearchParams(body)) {
    if (++fields > MAX_FORM_FIELDS) throw new InvalidRequest(`The body has more than ${MAX_FORM_FIELDS} parameters`);
    const seen = Object.hasOwn(form, name) ? form[name] : undefined;
    if (Array.isArray(seen)) seen.push(value);
    else
      Object.defineProperty(form, name, {
        value: seen === undefined ? value : [seen, value],
        writable: true,
        enumerable: true,
        configurable: true,
      });
  }
  return form;
}

/** A NUL (client_id=a%00) would reach PostgreSQL, which cannot hold one in text (22021, a 500): refused here. */
function storable(params: Params): Params {
  requireStorable(
    [[params, '']],
    (problem) => new InvalidRequest(`Parameter ${problem.path || '(name)'} ${problem.message}`),
  );
  return params;
}

/** Parameters that must each appear once, as strings; anything else is invalid_request. */
export function singleValued(params: Params): Record<string, string> {
  return readOnce(params, []) as Record<string, string>;
}

/**
 * As singleValued, but `resource` may be repeated (RFC 8707 2) and stays as given, for the token and device
 * authorization endpoints, whose grants read it (oauth/resources.ts).
 */
export function singleValuedButResource(params: Params): Record<string, string | string[]> {
  return readOnce(params, ['resource']);
}

function readOnce(params: Params, repeatable: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (typeof value !== 'string' && !(Array.isArray(value) && repeatable.includes(key)))
      throw new InvalidRequest(`${key} must be given once, as a string`);
    out[key] = value;
  }
  return out;
}

/** Revocation and introspection authenticate clients by client_secret_post only: credentials in a header are refused. */
export function refuseHeaderAuth(ctx: Koa.Context): void {
  if (ctx.get('Authorization')) throw new InvalidClient('Client authentication must use client_secret_post');
}
