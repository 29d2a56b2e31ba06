// Runs a GraphQL operation in-process: how the REST shims and the portals reach the schema. Documents are
// validated once (the portal's texts parsed once too). Errors come back as DomainErrors so callers map them through
// one table.
import { execute, parse, validate, type DocumentNode, type GraphQLError, type GraphQLSchema } from 'graphql';
import type { Context } from '../../schema/context.ts';
import { UserError, ValidationError } from '../../schema/errors/index.ts';
import { snakeCase } from '../../schema/lib/case.ts';
import { classifyError } from '../errors/classify.ts';
import { unstorableRefusal } from '../middleware/input-guard.ts';
import type { Tracing } from '../tracing.ts';
import { graphql, type ResultOf, type TadaDocumentNode } from './typed.ts';

/**
 * An operation's variables by name, their values (or their absence) as the request gave them: GraphQL's coercion
 * checks each against the document's types and words what it refuses (coercionError), so no caller checks twice.
 */
export type VariableValues<Variables> = { [Name in keyof Variables]?: unknown };

/** Runs a typed document (server/graphql/typed.ts) and answers its data as `ResultOf` the document says. */
export type Executor = <Result, Variables>(
  ctx: Context,
  document: TadaDocumentNode<Result, Variables>,
  variables?: VariableValues<Variables>,
) => Promise<Result>;

export interface RawResult {
  data?: Record<string, unknown> | null;
  errors?: readonly GraphQLError[];
}

/** With `tracing`, each operation runs in its span, as yoga's do (docs/architecture.md#tracing). */
export function createExecutor(schema: GraphQLSchema, tracing?: Tracing) {
  // The route tables' documents are module constants, checked on first use; the portal sends text, parsed once.
  const checked = new WeakSet<DocumentNode>();
  const parsed = new Map<string, DocumentNode>();
  const check = (doc: DocumentNode) => {
    if (checked.has(doc)) return doc;
    const [problem] = validate(schema, doc);
    if (problem) throw new Error(`invalid built-in operation: ${problem.message}`);
    checked.add(doc);
    return doc;
  };
  const compile = (document: string | DocumentNode) => {
    if (typeof document !== 'string') return check(document);
    let doc = parsed.get(document);
    if (!doc) parsed.set(document, (doc = check(parse(document))));
    return doc;
  };

  /** The raw result (for the portal bridge, which speaks GraphQL). */
  const raw = async (
    ctx: Context,
    document: string | DocumentNode,
    variables?: Record<string, unknown>,
  ): Promise<RawResult> => {
    const refusal = unstorableRefusal([[variables, '']]);
    if (refusal) return { errors: [refusal] };
    const doc = compile(document);
    // REST and the portal name no GraphQL enum or field: a suggestion would only leak the schema's names.
    const run = async () =>
      execute({ schema, document: doc, variableValues: variables, contextValue: ctx, hideSuggestions: true });
    return await (tracing ? tracing.traceOperation(doc, run) : run());
  };

  /** The data, or the first error as a DomainError (input coercion problems become invalid_request). */
  const run: Executor = async <Result, Variables>(
    ctx: Context,
    document: TadaDocumentNode<Result, Variables>,
    variables?: VariableValues<Variables>,
  ) => {
    const result = await raw(ctx, document, variables);
    const error = result.errors?.[0];
    if (error) {
      const what = classifyError(error);
      if (what.kind === 'domain') throw what.error;
      // The variables did not fit the operation's types: a field problem named as REST names it.
      if (what.kind === 'request') throw coercionError(withoutSuggestions(what.message));
      throw error.originalError ?? error;
    }
    if (!result.data) throw new Error('an operation answered neither data nor errors');
    // The document was validated against the schema, and its type is read from the same schema.graphql.
    return result.data as Result;
  };

  return { run, raw };
}

/** graphql's "Did you mean ...?" removed from a message: it names parts of the schema the caller did not ask about. */
export const withoutSuggestions = (message: string) => message.replace(/\s*Did you mean [^?]*\?/g, '');

/** How every mutation of the route tables selects its typed refusal. */
export const USER_ERROR_FIELDS = graphql(
  `fragment UserErrorFields on UserError { __typename code message details { path message } }`,
);

type Refusal = ResultOf<typeof USER_ERROR_FIELDS>;
const refused = (value: { __typename: string }): value is Refusal => value.__typename === 'UserError';

/** Unwraps a mutation result union: its UserError member (USER_ERROR_FIELDS) is thrown, any other returned. */
export function unwrap<T extends { __typename: string }>(value: T | Refusal): T {
  if (refused(value)) throw new UserError(value.code, value.message, value.details);
  return value;
}

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
  const [, variable = '', at = '', detail = 'is required'] = match;
  const segments = [...(variable === 'input' ? [] : [variable]), ...at.split('.').filter(Boolean)];
  const missing = /^Field "(\w+)" of required type .* was not provided\.?$/s.exec(detail)?.[1];
  if (missing) segments.push(missing);
  return new ValidationError('The request is invalid', [
    { path: snakeCase(segments.join('.')) || '(body)', message: missing ? 'is required' : detail },
  ]);
}
