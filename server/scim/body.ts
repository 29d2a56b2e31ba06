// A SCIM request's JSON body (RFC 7644 3.1, 3.8): application/scim+json or application/json, at most 1 MiB, UTF-8
// that decodes strictly (a body parser would turn bad bytes into U+FFFD and store them), and nothing a column cannot
// hold (NUL, lone surrogates; server/middleware/input-guard.ts).
import type Koa from 'koa';
import { requireStorable } from '../middleware/input-guard.ts';
import { ScimHttpError } from './scim.errors.ts';

/** A group of 10,000 members as ids fits with room to spare. */
export const SCIM_BODY_LIMIT = 1 << 20;

const JSON_TYPES = new Set(['application/scim+json', 'application/json']);

function checkHeaders(ctx: Koa.Context): void {
  const [type, ...params] = ctx
    .get('Content-Type')
    .split(';')
    .map((s) => s.trim().toLowerCase());
  // A directory always names its type; a body without one is read as JSON rather than refused.
  if (type && !JSON_TYPES.has(type))
    throw new ScimHttpError(415, 'Send the body as application/scim+json (or application/json)');
  const charset = params
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new ScimHttpError(415, 'Send the body in UTF-8');
  const encoding = ctx.get('Content-Encoding').trim().toLowerCase();
  if (encoding && encoding !== 'identity') throw new ScimHttpError(415, 'Send the body without a Content-Encoding');
  const length = Number(ctx.get('Content-Length') || 0);
  if (length > SCIM_BODY_LIMIT)
    throw new ScimHttpError(413, `The request body is larger than ${SCIM_BODY_LIMIT} bytes`);
}

async function readBytes(ctx: Koa.Context): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Counted on the bytes read, so a chunked body is held to the limit too; past it, reading stops.
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > SCIM_BODY_LIMIT)
      throw new ScimHttpError(413, `The request body is larger than ${SCIM_BODY_LIMIT} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The request's body as JSON, or a refusal: 415, 413, 400 invalidSyntax, 400 invalidValue. */
export async function readScimBody(ctx: Koa.Context): Promise<unknown> {
  checkHeaders(ctx);
  const bytes = await readBytes(ctx);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new ScimHttpError(400, 'The request body is not valid UTF-8', 'invalidSyntax');
  }
  if (!text.trim()) throw new ScimHttpError(400, 'The request has no body: send a JSON object', 'invalidSyntax');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ScimHttpError(400, 'The request body is not valid JSON', 'invalidSyntax');
  }
  requireStorable(
    [[body, '']],
    (problem) => new ScimHttpError(400, `${problem.path || '(body)'} ${problem.message}`, 'invalidValue'),
  );
  return body;
}
