// /graphql: graphql-yoga over the Pothos schema, with depth, alias, cost and token limits (graphql-armor), a
// body limit on the bytes read, GraphiQL outside production (served from the package, so it works offline),
// and every non-domain error masked.
import { createGraphQLError, createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  type execute,
  type GraphQLSchema,
  type validate,
  type ValidationRule,
} from 'graphql';
import type { Context } from '../../schema/context.ts';
import { textProblem } from '../../schema/lib/storable.ts';
import { unstorableRefusal } from '../middleware/input-guard.ts';
import { classifyError } from '../errors/classify.ts';
import { withoutSuggestions } from './executor.ts';
import type { Logger } from 'pino';
import type { Tracing } from '../tracing.ts';

/** The most a request body may hold, counted on the bytes read (a chunked body has no Content-Length). */
export const GRAPHQL_BODY_LIMIT = 1_000_000;

const storableStrings: ValidationRule = (context) => ({
  StringValue(node) {
    const problem = textProblem(node.value);
    if (problem)
      context.reportError(
        new GraphQLError(`String values ${problem}`, { nodes: [node], extensions: { code: 'invalid_request' } }),
      );
  },
});

/** A NUL or a lone surrogate cannot be stored and deep nesting is never ours: refused before execution, in the
 *  variables, and (written as an escape) in the document's own string literals. */
const inputGuard: Plugin = {
  // `variables` and `extensions` of a GET or a form post are JSON inside the query string: yoga's parser lets
  // the SyntaxError through as a 500. It is the client's mistake.
  onRequestParse({ requestParser, setRequestParser }) {
    if (!requestParser) return;
    setRequestParser(async (request) => {
      try {
        return await requestParser(request);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        throw createGraphQLError('The request is invalid: variables and extensions must be JSON objects', {
          extensions: { code: 'invalid_request', http: { status: 400 } },
        });
      }
    });
  },
  onParams({ params, setResult }) {
    const refusal = unstorableRefusal([
      [params.query, 'query'],
      [params.variables, 'variables'],
    ]);
    if (refusal) setResult({ errors: [refusal] });
  },
  onValidate({ addValidationRule }) {
    addValidationRule(storableStrings);
  },
};

export interface YogaServerContext {
  tessera: Context;
}

/** What graphql-js's validate and execute answer: envelop types the functions it hands a plugin as `any`, for any
 *  version of graphql. */
type Validated = ReturnType<typeof validate>;
type Executed = ReturnType<typeof execute>;

/**
 * Production tells a stranger nothing about the schema: no introspection without credentials, and no error names a
 * field, type or enum value it was not asked about ("Did you mean ...?"), in validation or in variables' coercion.
 * The rule goes through addValidationRule, so yoga's validation cache keys the anonymous answer apart.
 */
const quietInProduction: Plugin<YogaServerContext> = {
  onValidate({ context, addValidationRule, validateFn, setValidationFn }) {
    if (!context.tessera?.actor) addValidationRule(NoSchemaIntrospectionCustomRule);
    setValidationFn(
      (schema, document, rules, options, typeInfo) =>
        validateFn(schema, document, rules, { ...options, hideSuggestions: true }, typeInfo) as Validated,
    );
  },
  // The executor passes the option on to its own checks, though not to every graphql-js call it makes: maskError
  // strips what slips through (withoutSuggestions).
  onExecute({ executeFn, setExecuteFn }) {
    setExecuteFn((args) => executeFn({ ...args, hideSuggestions: true } as typeof args) as Executed);
  },
};

export function createGraphqlServer(
  schema: GraphQLSchema,
  options: { production: boolean; logger: Logger; tracing?: Tracing },
): YogaServerInstance<YogaServerContext, Context> {
  const traced = options.tracing;
  return createYoga<YogaServerContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    // Same-origin only: the portal calls it from the server side, and a browser on another origin (another port, a
    // sibling subdomain: same-site, so the Lax cookie goes along) must not read an admin's answers. Yoga's default
    // reflects any Origin with credentials.
    cors: false,
    graphiql: !options.production,
    // Its bundle is ~30 MB of strings on the heap: loaded by the first request for the page, never at start.
    renderGraphiQL: async (graphiql) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(graphiql),
    landingPage: false,
    maxRequestBodySize: GRAPHQL_BODY_LIMIT,
    // Expected domain errors are answers, not incidents; maskError below logs the unexpected ones.
    logging: {
      debug: (...args: unknown[]) => options.logger.debug({ args }, 'graphql'),
      info: (...args: unknown[]) => options.logger.debug({ args }, 'graphql'),
      warn: (...args: unknown[]) => options.logger.warn({ args }, 'graphql'),
      error: (...args: unknown[]) => options.logger.debug({ args }, 'graphql error'),
    },
    context: ({ tessera }) => tessera,
    maskedErrors: {
      maskError: (error, message) => {
        if (!(error instanceof GraphQLError)) return error as Error;
        const where = { nodes: error.nodes, path: error.path };
        const what = classifyError(error);
        // Variables that do not fit the operation's types ($l: Int given "abc", an unknown input field, a
        // required one missing): graphql words them for the client, and they are the client's mistake, not an
        // incident. Errors that already carry a code (validation, body too large) keep theirs.
        if (what.kind === 'request' && !error.extensions.code) {
          const text = options.production ? withoutSuggestions(what.message) : what.message;
          return new GraphQLError(text, {
            ...where,
            extensions: { ...error.extensions, code: 'invalid_request', http: { status: 400 } },
          });
        }
        if (!error.originalError) return error;
        if (what.kind === 'domain')
          return new GraphQLError(what.error.message, { ...where, extensions: what.error.extensions });
        // The database down or saturated: 503 with Retry-After, as on every other interface.
        if (what.kind === 'unavailable') {
          const unavailable = what.error;
          return new GraphQLError(unavailable.message, {
            ...where,
            extensions: {
              code: unavailable.code,
              http: { status: 503, headers: { 'Retry-After': String(unavailable.retryAfterSeconds) } },
            },
          });
        }
        options.logger.error({ err: error.originalError }, 'graphql resolver failed');
        return new GraphQLError(message, { ...where, extensions: { code: 'internal_error' } });
      },
    },
    plugins: [
      inputGuard,
      ...(options.production ? [quietInProduction] : []),
      EnvelopArmorPlugin({
        maxDepth: { n: 10 },
        maxAliases: { n: 15 },
        maxDirectives: { n: 20 },
        maxTokens: { n: 2000 },
        costLimit: { maxCost: 5000 },
        blockFieldSuggestion: { enabled: options.production },
      }),
      ...(traced ? [traced.graphqlPlugin] : []),
    ],
  });
}
