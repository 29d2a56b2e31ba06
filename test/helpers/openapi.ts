// Checks replies against the committed OpenAPI document (docs/architecture.md#rest-conventions): finds the documented operation for a concrete
// request, asserts that the status is documented for it, and validates headers and body with ajv.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import document from '../../openapi.json' with { type: 'json' };
import type { Reply } from './http.ts';

// The document is JSON of any shape: a loose type keeps the walkers short.
type Json = any;

export interface OpenApiDocument {
  openapi: string;
  info: Json;
  paths: Record<string, Record<string, Json>>;
  components?: Record<string, Record<string, Json>>;
  security?: Record<string, string[]>[];
  [key: string]: Json;
}

export const openapi = document as unknown as OpenApiDocument;

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface DocumentedOperation {
  /** Upper case, as in the route tables. */
  method: string;
  /** The documented template, e.g. /v1/organizations/{id}. */
  path: string;
  operationId: string;
  operation: Json;
  pathItem: Json;
}

/** Follows local `$ref`s ("#/components/...") until a value without one. */
export function resolveRef<T = Json>(value: Json, doc: OpenApiDocument = openapi): T {
  let current = value;
  for (let hops = 0; current && typeof current === 'object' && typeof current.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error(`$ref cycle at ${current.$ref}`);
    current = pointer(doc, current.$ref);
    if (current === undefined) throw new Error(`unresolvable $ref ${value.$ref}`);
  }
  return current as T;
}

/** The value at a local JSON pointer ("#/a/b~1c"), or undefined. */
export function pointer(doc: Json, ref: string): Json {
  if (!ref.startsWith('#/')) return undefined;
  let node = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

export function documentedOperations(doc: OpenApiDocument = openapi): DocumentedOperation[] {
  const out: DocumentedOperation[] = [];
  for (const [path, pathItem] of Object.entries(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = pathItem[method];
      if (operation)
        out.push({ method: method.toUpperCase(), path, operationId: operation.operationId, operation, pathItem });
    }
  }
  return out;
}

// ---- matching a concrete request to a documented operation -----------------------------------------------

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const matchers = documentedOperations().map((op) => ({
  op,
  params: (op.path.match(/\{[^}]+\}/g) ?? []).length,
  regex: new RegExp(
    `^${op.path
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith('{') ? '[^/]+' : escape(part)))
      .join('')}$`,
  ),
}));
// Concrete paths before templated ones (OpenAPI's rule), so /api/v1/users/me never reads as a template.
matchers.sort((a, b) => a.params - b.params);

/** The documented operation for a concrete request (`/v1/users/abc?limit=1`), or undefined. */
export function findOperation(method: string, path: string): DocumentedOperation | undefined {
  const bare = path.split(/[?#]/)[0]!;
  return matchers.find((m) => m.op.method === method.toUpperCase() && m.regex.test(bare))?.op;
}

// ---- schemas: OpenAPI 3.0 to JSON Schema for ajv -----------------------------------------------------------

const DOC_ID = 'https://tessera.invalid/openapi.json';

/**
 * OpenAPI 3.0 schema objects to JSON Schema: `nullable: true` becomes "or null" (a nullable enum still lists
 * null itself, as 3.0.3 asks), and `#/components/schemas/X` points into the definitions added to ajv.
 */
export function toJsonSchema(node: Json): Json {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'nullable') continue;
    if (key === '$ref' && typeof value === 'string') {
      out.$ref = value.replace(/^#\/components\/schemas\//, `${DOC_ID}#/definitions/`);
    } else if (key === 'properties' && value && typeof value === 'object') {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, toJsonSchema(schema)]));
    } else {
      out[key] = toJsonSchema(value);
    }
  }
  if (node.nullable === true) {
    const simple = typeof out.type === 'string' && !out.$ref && !out.allOf && !out.anyOf && !out.oneOf;
    if (simple) return { ...out, type: [out.type, 'null'] };
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

function createAjv(doc: OpenApiDocument): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const definitions = Object.fromEntries(
    Object.entries(doc.components?.schemas ?? {}).map(([name, s]) => [name, toJsonSchema(s)]),
  );
  ajv.addSchema({ $id: DOC_ID, definitions });
  return ajv;
}

const ajv = createAjv(openapi);
const compiled = new Map<string, ValidateFunction>();

/** Compiles every response schema in the document, of every media type (fails on a schema ajv cannot compile). */
export function compileAllResponseSchemas(): number {
  let count = 0;
  for (const op of documentedOperations()) {
    for (const [status, response] of Object.entries<Json>(op.operation.responses ?? {})) {
      for (const mediaType of Object.keys(resolveRef(response)?.content ?? {})) {
        if (responseValidator(op, status, mediaType)) count++;
      }
    }
  }
  return count;
}

function responseValidator(op: DocumentedOperation, status: string, mediaType: string): ValidateFunction | null {
  const key = `${op.method} ${op.path} ${status} ${mediaType}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  const response = resolveRef(op.operation.responses[status]);
  const schema = response?.content?.[mediaType]?.schema;
  if (!schema) return null;
  const validate = ajv.compile(toJsonSchema(schema));
  compiled.set(key, validate);
  return validate;
}

const headerValidators = new Map<Json, ValidateFunction>();

/** A header's value against its schema: integers must be plain digits, then both are checked by ajv. */
function headerProblem(header: Json, value: string): string | null {
  const schema = resolveRef(header.schema ?? {});
  const integer = schema.type === 'integer';
  if (integer && !/^\d+$/.test(value)) return 'is not an integer';
  let validate = headerValidators.get(schema);
  if (!validate) {
    validate = ajv.compile(toJsonSchema(schema));
    headerValidators.set(schema, validate);
  }
  if (!validate(integer ? Number(value) : value)) return (validate.errors ?? []).map((e) => e.message).join(', ');
  return null;
}

/** The media type of a Content-Type value, without parameters: "application/json; charset=utf-8" -> "application/json". */
const essence = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();
const isJson = (mediaType: string) => /^application\/([\w.+-]+\+)?json$/.test(mediaType);

// ---- the assertion -----------------------------------------------------------------------------------------

const describeErrors = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? [])
    .map((e) => {
      const where = e.instancePath || '(body)';
      const extra =
        e.keyword === 'additionalProperties'
          ? ` "${(e.params as { additionalProperty: string }).additionalProperty}"`
          : '';
      return `  ${where} ${e.message}${extra}`;
    })
    .join('\n');

const show = (body: unknown) => {
  const text = typeof body === 'string' ? body : JSON.stringify(body, null, 2);
  return text && text.length > 2000 ? `${text.slice(0, 2000)}...` : text;
};

/**
 * Asserts that `reply` (from test/helpers/http.ts) to `method path` is what the document promises: the path and
 * method are documented, the status is listed for the operation, required headers are present and every documented
 * header that is present fits its schema, and the body is of a documented media type and validates against its
 * schema (JSON is parsed by the client; other types, such as the HTML error page, must be text), or is empty when
 * the response has no content. A redirect (3xx) is checked by its status and headers (Location): its body is the
 * framework's "Redirecting to ..." text and not part of the contract.
 * Returns the matched operation.
 */
export function expectMatchesOpenApi(
  method: string,
  path: string,
  reply: Pick<Reply, 'status' | 'body' | 'headers'>,
): DocumentedOperation {
  const what = `${method.toUpperCase()} ${path}`;
  const op = findOperation(method, path);
  if (!op) throw new Error(`${what} is not documented in openapi.json`);
  const status = String(reply.status);
  const responses = op.operation.responses as Record<string, Json>;
  const key =
    status in responses
      ? status
      : `${status[0]}XX` in responses
        ? `${status[0]}XX`
        : 'default' in responses
          ? 'default'
          : null;
  if (!key) {
    throw new Error(
      `${what} answered ${status}, but ${op.operationId} (${op.method} ${op.path}) documents only ${Object.keys(responses).join(', ')}\nbody: ${show(reply.body)}`,
    );
  }
  const response = resolveRef(responses[key]);

  for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
    const h = resolveRef(header);
    const value = reply.headers.get(name);
    if (value === null) {
      if (h.required)
        throw new Error(`${what} answered ${status} without the documented header ${name}\nbody: ${show(reply.body)}`);
      continue;
    }
    const problem = headerProblem(h, value);
    if (problem)
      throw new Error(
        `${what} answered ${status} with header ${name}: ${value}, which ${problem.startsWith('is ') ? problem : `does not fit its schema (${problem})`}`,
      );
  }

  if (/^3/.test(status)) return op;
  const content = (response.content ?? {}) as Record<string, Json>;
  const documentedTypes = Object.keys(content);
  const empty = reply.body === null || reply.body === '';
  if (documentedTypes.length === 0) {
    if (!empty)
      throw new Error(
        `${what} answered ${status} with a body, but the documented response has none\nbody: ${show(reply.body)}`,
      );
    return op;
  }
  const type = reply.headers.get('content-type') ?? '';
  const mediaType = essence(type);
  if (!documentedTypes.includes(mediaType)) {
    throw new Error(
      `${what} answered ${status} with content-type "${type}", documented ${documentedTypes.join(' or ')}\nbody: ${show(reply.body)}`,
    );
  }
  if (!isJson(mediaType) && typeof reply.body !== 'string') {
    throw new Error(
      `${what} answered ${status} with ${mediaType}, but the body is not text\nbody: ${show(reply.body)}`,
    );
  }
  const validate = responseValidator(op, key, mediaType);
  if (validate && !validate(reply.body)) {
    throw new Error(
      `${what} answered ${status}, which does not match the document (${op.operationId}, response ${key}, ${mediaType}):\n${describeErrors(validate.errors)}\nbody: ${show(reply.body)}`,
    );
  }
  return op;
}
