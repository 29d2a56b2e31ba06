// Reading OAuth parameters: the query of a GET, or a form or JSON body of a POST. A parameter given twice
// stays an array so the endpoint can refuse it (RFC 6749 3.1, 3.2).
import type Koa from 'koa';
import { InvalidRequest } from '../../schema/modules/oauth/oauth.errors.ts';
import { unstorableInput } from '../middleware/input-guard.ts';

export type Params = Record<string, string | string[] | undefined>;

export function requestParams(ctx: Koa.Context): Params {
  if (ctx.method === 'GET' || ctx.method === 'HEAD') return storable(ctx.query as Params);
  if (!ctx.is('application/x-www-form-urlencoded', 'application/json')) {
    throw new InvalidRequest('Send the parameters as application/x-www-form-urlencoded (or JSON)');
  }
  const body = formOrJsonBody(ctx);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequest('The body must be an object of parameters');
  return storable(body as Params);
}

/**
 * The parsed body: a form as the URL standard reads application/x-www-form-urlencoded, like the query of a GET
 * (names taken literally, a name given twice kept as an array), since the router's body parser hands forms over as
 * text (router.ts); JSON as parsed.
 */
export function formOrJsonBody(ctx: Koa.Context): unknown {
  const body = (ctx.request as { body?: unknown }).body;
  if (typeof body !== 'string' || !ctx.is('application/x-www-form-urlencoded')) return body;
  const form: Params = {};
  const fields = new URLSearchParams(body);
  for (const name of fields.keys()) {
    if (Object.hasOwn(form, name)) continue;
    const values = fields.getAll(name);
    Object.defineProperty(form, name, { value: values.length === 1 ? values[0] : values, writable: true, enumerable: true, configurable: true });
  }
  return form;
}

/** A NUL (client_id=a%00) would reach PostgreSQL, which cannot hold one in text (22021, a 500): refused here. */
function storable(params: Params): Params {
  const [problem] = unstorableInput([[params, '']]);
  if (problem) throw new InvalidRequest(`Parameter ${problem.path || '(name)'} ${problem.message}`);
  return params;
}

/** Parameters that must each appear once, as strings; anything else is invalid_request. */
export function singleValued(params: Params): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidRequest(`${key} must be given once, as a string`);
    out[key] = value;
  }
  return out;
}
