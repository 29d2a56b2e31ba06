// Runs a GraphQL operation in-process: how the REST shims and the portals reach the schema. Documents are
// parsed and validated once. Errors come back as DomainErrors so callers map them through one table.
import { execute, parse, validate, type DocumentNode, type GraphQLError, type GraphQLSchema } from 'graphql';
import type { Context } from '../../schema/context.ts';
import type { UserErrorCode } from '../../schema/errors/codes.ts';
import { UserError, ValidationError } from '../../schema/errors/index.ts';
import { snakeCase } from '../../schema/lib/case.ts';
import { classifyError } from '../errors/classify.ts';
import { unstorableRefusal } from '../middleware/input-guard.ts';
import type { Tracing } from '../tracing.ts';

export type Executor = (
  ctx: Context,
  document: string,
  variables?: Record<string, unknown>,
) => Promise<Record<string, any>>;

export interface RawResult {
  data?: Record<string, unknown> | null;
  errors?: readonly GraphQLError[];
}

/** With `tracing`, each operation runs in its span, as yoga's do (docs/architecture.md#tracing). */
export function createExecutor(schema: GraphQLSchema, tracing?: Tracing) {
  const documents = new Map<string, DocumentNode>();
  const compile = (source: string) => {
    let doc = documents.get(source);
    if (!doc) {
      doc = parse(source);
      const problems = validate(schema, doc);
      if (problems.length) throw new Error(`invalid built-in operation: ${problems[0]!.message}`);
      documents.set(source, doc);
    }
    return doc;
  };

  /** The raw result (for the portal bridge, which speaks GraphQL). */
  const raw = async (ctx: Context, document: string, variables?: Record<string, unknown>): Promise<RawResult> => {
    const refusal = unstorableRefusal([[variables, '']]);
    if (refusal) return { errors: [refusal] };
    const doc = compile(document);
    // REST and the portal name no GraphQL enum or field: a suggestion would only leak the schema's names.
    const run = async () =>
      execute({ schema, document: doc, variableValues: variables, contextValue: ctx, hideSuggestions: true });
    return await (tracing ? tracing.traceOperation(doc, run) : run());
  };

  /** The data, or the first error as a DomainError (input coercion problems become invalid_request). */
  const run: Executor = async (ctx, document, variables) => {
    const result = await raw(ctx, document, variables);
    const error = result.errors?.[0];
    if (error) {
      const what = classifyError(error);
      if (what.kind === 'domain') throw what.error;
      // The variables did not fit the operation's types: a field problem named as REST names it.
      if (what.kind === 'request') throw coercionError(withoutSuggestions(what.message));
      throw error.originalError ?? error;
    }
    return result.data ?? {};
  };

  return { run, raw };
}

/** graphql's "Did you mean ...?" removed from a message: it names parts of the schema the caller did not ask about. */
export const withoutSuggestions = (message: string) => message.replace(/\s*Did you mean [^?]*\?/g, '');

/** Unwraps a mutation result union: a UserError member is thrown, anything else returned. */
export function unwrap<T>(
  value:
    | T
    | { __typename: 'UserError'; code: UserErrorCode; message: string; details?: { path: string; message: string }[] },
): T {
  const v = value as {
    __typename?: string;
    code?: UserErrorCode;
    message?: string;
    details?: { path: string; message: string }[];
  };
  if (v && v.__typename === 'UserError') throw new UserError(v.code!, v.message!, v.details ?? []);
  return value as T;
}

export const USER_ERROR_FIELDS = '... on UserError { __typename code message details { path message } }';

/**
 * 'Variable "$input" got invalid value 5 at "input.name"; String cannot represent...' -> a field problem at `name`.
 * `$input` wraps the body, so its fields are the body's; any other variable is a value of its own (`limit`, `role`).
 * A missing required field ('...; Field "name" of required type "String!" was not provided.') is named too.
 */
function coercionError(message: string): ValidationError {
  const match =
    /^Variable "\$(\w+)" (?:got invalid value .*?(?: at "\1([\w.[\]]*)")?; (.*)|of required type .*? was not provided\.?)$/s.exec(
      message,
    );
  if (!match) return new ValidationError(message);
  const [, variable, at = '', detail = 'is required'] = match;
  const segments = [...(variable === 'input' ? [] : [variable!]), ...at.split('.').filter(Boolean)];
  const missing = /^Field "(\w+)" of required type .* was not provided\.?$/s.exec(detail);
  if (missing) segments.push(missing[1]!);
  return new ValidationError('The request is invalid', [
    { path: snakeCase(segments.join('.')) || '(body)', message: missing ? 'is required' : detail },
  ]);
}
