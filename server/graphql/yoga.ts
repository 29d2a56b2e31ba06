// /graphql: graphql-yoga over the Pothos schema, with depth, alias, cost and token limits (graphql-armor),
// GraphiQL outside production, and every non-domain error masked.
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { Context } from '../../schema/context.ts';
import { DomainError, ValidationError } from '../../schema/errors/index.ts';
import { unstorableInput } from '../middleware/input-guard.ts';
import type { Logger } from 'pino';

const noNulInStrings: ValidationRule = (context) => ({
  StringValue(node) {
    if (node.value.includes('\u0000')) {
      context.reportError(new GraphQLError('String values must not contain NUL (U+0000) characters', { nodes: [node], extensions: { code: 'invalid_request' } }));
    }
  },
});

/** A NUL cannot be stored (PostgreSQL text) and deep nesting is never ours: refused before execution, in
 *  the variables, and (written as an escape) in the document's own string literals. */
const inputGuard: Plugin = {
  onParams({ params, setResult }) {
    const problems = unstorableInput([[params.query, 'query'], [params.variables, 'variables']]);
    if (problems.length) setResult({ errors: [new ValidationError('The request is invalid', problems)] });
  },
  onValidate({ addValidationRule }) {
    addValidationRule(noNulInStrings);
  },
};

export interface YogaServerContext {
  tessera: Context;
}

export function createGraphqlServer(schema: GraphQLSchema, options: { production: boolean; logger: Logger }): YogaServerInstance<YogaServerContext, Context> {
  return createYoga<YogaServerContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: !options.production,
    landingPage: false,
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
        const located = error as GraphQLError;
        const original = located.originalError;
        if (!original) return located;
        const where = { nodes: located.nodes, path: located.path };
        if (original instanceof DomainError) return new GraphQLError(original.message, { ...where, extensions: original.extensions });
        options.logger.error({ err: original }, 'graphql resolver failed');
        return new GraphQLError(message, { ...where, extensions: { code: 'internal_error' } });
      },
    },
    plugins: [
      inputGuard,
      EnvelopArmorPlugin({
        maxDepth: { n: 10 },
        maxAliases: { n: 15 },
        maxDirectives: { n: 20 },
        maxTokens: { n: 2000 },
        costLimit: { maxCost: 5000 },
        blockFieldSuggestion: { enabled: options.production },
      }),
    ],
  });
}
