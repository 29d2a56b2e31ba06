// The query of a list (RFC 7644 3.4.2): filter, startIndex, count, attributes, excludedAttributes; or the same
// members of a POST .search body (RFC 7644 3.4.3). Paging is 1-based; out-of-range numbers are brought into range
// as 3.4.2.4 says, text that is not a number is refused.
import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import { expected } from '../../schema/lib/expected.ts';
import { MAX_RESULTS } from './discovery.ts';
import { ScimHttpError } from './scim.errors.ts';

export interface ListParams {
  filter?: string;
  startIndex: number;
  count: number;
  attributes?: string;
  excludedAttributes?: string;
}

const DEFAULT_COUNT = 100;
/** PostgreSQL's OFFSET takes more, but no directory pages this far. */
const MAX_START_INDEX = 1_000_000_000;

function integer(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\s*[-+]?\d{1,20}\s*$/.test(value)) return Number(value);
  throw new ScimHttpError(400, `${name} must be an integer`, 'invalidValue');
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) value = value.join(',');
  if (typeof value !== 'string') throw new ScimHttpError(400, `${name} must be a string`, 'invalidValue');
  if (value.length > 4_000) throw new ScimHttpError(400, `${name} is too long`, 'invalidValue');
  return value;
}

function params(source: Record<string, unknown>): ListParams {
  const lower = new Map(Object.entries(source).map(([k, v]) => [k.toLowerCase(), v]));
  const startIndex = integer(lower.get('startindex'), 'startIndex') ?? 1;
  const count = integer(lower.get('count'), 'count') ?? DEFAULT_COUNT;
  const filter = lower.get('filter');
  if (Array.isArray(filter))
    throw new ScimHttpError(400, 'Give one filter (join conditions with and)', 'invalidFilter');
  if (filter !== undefined && typeof filter !== 'string')
    throw new ScimHttpError(400, 'filter must be a string', 'invalidFilter');
  return {
    filter: filter,
    // RFC 7644 3.4.2.4: a startIndex below 1 is 1, a negative count is 0.
    startIndex: Math.min(Math.max(startIndex, 1), MAX_START_INDEX),
    count: Math.min(Math.max(count, 0), MAX_RESULTS),
    attributes: text(lower.get('attributes'), 'attributes'),
    excludedAttributes: text(lower.get('excludedattributes'), 'excludedAttributes'),
  };
}

export function queryParams(ctx: Koa.Context): ListParams {
  const query = ctx.query as Record<string, unknown>;
  for (const name of ['startIndex', 'count']) {
    if (Array.isArray(query[name])) throw new ScimHttpError(400, `Give ${name} once`, 'invalidValue');
  }
  return params(query);
}

/** A SearchRequest body (RFC 7644 3.4.3); attributes there are arrays of names. */
export function searchParams(body: unknown): ListParams {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ScimHttpError(400, 'The body must be a SearchRequest object', 'invalidSyntax');
  return params(body as Record<string, unknown>);
}

/** `attributes` and `excludedAttributes` of a request that returns one resource. */
export function resourceParams(ctx: Koa.Context): Pick<ListParams, 'attributes' | 'excludedAttributes'> {
  const { attributes, excludedAttributes } = params(ctx.query);
  return { attributes, excludedAttributes };
}

/** The resource's id in the path of a `/:id` route, whose form router.ts has already checked. */
export function resourceId(ctx: RouterContext): string {
  return expected(ctx.params.id, 'the id of a /:id route');
}
