// The SchemaBuilder and its plugins, nothing else. Scope-auth runs first, errors before prisma (docs/architecture.md#layers).
import { GraphQLError, Kind } from 'graphql';
import SchemaBuilder, { type InputFieldBuilder } from '@pothos/core';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import ErrorsPlugin from '@pothos/plugin-errors';
import PrismaPlugin from '@pothos/plugin-prisma';
import type PrismaTypes from '../prisma/generated/pothos-types.ts';
import { getDatamodel } from '../prisma/generated/pothos-types.ts';
import type { Context, Role } from './context.ts';
import { ForbiddenError, InsufficientScopeError, UnauthenticatedError, UserError } from './errors/index.ts';
import { FirstPartyOnlyError } from './auth/access.errors.ts';
import { USER_ERROR_CODES } from './errors/codes.ts';
import { API_SCOPE, failedFirstParty, missingTokenScope, scopeInitializer } from './auth/scopes.ts';
import { ROLES } from './auth/roles.ts';
import { fields, TIMESTAMP_RULE } from './lib/input.ts';

export interface AuthScopes {
  /** Any authenticated caller: session, API key or OAuth token. */
  authenticated: boolean;
  /** A signed-in person (session or OAuth token with a user), not an API key. */
  person: boolean;
  /** A browser or bearer session (not an API key or an OAuth token): for account-level changes. */
  session: boolean;
  /**
   * No OAuth access token: a session, an API key, or a caller not signed in yet (a way in). Declared with
   * `firstParty()` (auth/scopes.ts) on what mints, changes or ends a credential or a way to sign in.
   */
  firstParty: boolean;
  /** Tessera's own command line signed in as a person (modules/clients/cli-client.ts), first-party though a token. */
  commandLine: boolean;
  /** Sessions and API keys pass; an OAuth access token only with this scope (docs/architecture.md#authorization). */
  tokenScope: string;
  /** The caller's own profile, organizations and session: an access token needs openid, profile, email or api. */
  profileRead: boolean;
  platformAdmin: boolean;
  /** At least this role in the organization; no role there at all answers 404. */
  orgRole: { organizationId: string; role: Role };
}

export const builder = new SchemaBuilder<{
  Context: Context;
  PrismaTypes: PrismaTypes;
  AuthScopes: AuthScopes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  plugins: [ScopeAuthPlugin, ErrorsPlugin, PrismaPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authScopes: scopeInitializer,
    unauthorizedError: (_parent, ctx, _info, result) => {
      const scope = missingTokenScope(result.failure);
      if (scope) return new InsufficientScopeError(scope);
      if (ctx.actor?.kind === 'oauth') {
        const kind = failedFirstParty(result.failure);
        if (kind)
          return new FirstPartyOnlyError('do this', kind === 'session' ? 'sign in' : 'use a session or an API key');
      }
      return ctx.actor ? new ForbiddenError() : new UnauthenticatedError();
    },
  },
  errors: { defaultTypes: [UserError], directResult: true },
  prisma: {
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
});

/** The builder's types, for helpers that take its refs (page-type.ts). */
export type BuilderTypes = typeof builder.$inferSchemaTypes;
/** What an input type's `fields` is given, for the fields that a domain's create and update inputs share. */
export type InputFields = InputFieldBuilder<BuilderTypes, 'InputObject'>;

// An OAuth access token acts only within its scopes: every root field needs `api` unless it opts out with
// `skipTypeScopes: true` and a scope of its own (auth/scopes.ts lists which ones do). Fields added later are
// covered without a word.
builder.queryType({ authScopes: { tokenScope: API_SCOPE } });
builder.mutationType({ authScopes: { tokenScope: API_SCOPE } });

// Read by the one rule for timestamps (lib/input.ts). A variable's problem is a GraphQLError, as graphql's own
// scalars throw, so that it reaches the client (and a REST field problem) as the rule's words; a literal's is a
// plain error, which graphql prefixes with the value and locates in the document.
builder.scalarType('DateTime', {
  description:
    'An RFC 3339 date-time with a zone, e.g. 2027-06-30T00:00:00Z or 2027-06-30T02:00:00.250+02:00; answered in UTC.',
  serialize: (value) => (value instanceof Date ? value.toISOString() : String(value)),
  parseValue: (value) => {
    const read = fields.timestamp.safeParse(value);
    if (!read.success) throw new GraphQLError(TIMESTAMP_RULE);
    return read.data;
  },
  parseLiteral: (node) => {
    const read = fields.timestamp.safeParse(node.kind === Kind.STRING ? node.value : undefined);
    if (!read.success) throw new TypeError(TIMESTAMP_RULE);
    return read.data;
  },
});
builder.scalarType('JSON', { serialize: (v) => v, parseValue: (v) => v });

// Shared by every domain that names a membership's role, so it is declared below them all.
export const RoleEnum = builder.enumType('Role', { values: ROLES });

const FieldProblemRef = builder.objectRef<{ path: string; message: string }>('FieldProblem').implement({
  fields: (t) => ({ path: t.exposeString('path'), message: t.exposeString('message') }),
});

/** Every code a UserError can carry; each domain's mutations list theirs in an enum of their own (mutation-errors.ts). */
export const UserErrorCodeEnum = builder.enumType('UserErrorCode', {
  values: Object.fromEntries(
    Object.entries(USER_ERROR_CODES).map(([code, description]) => [code, { value: code, description }]),
  ),
});

builder.objectType(UserError, {
  name: 'UserError',
  description:
    "A problem the caller can correct. `code` is stable; a mutation's result union names the enum of the codes it can answer.",
  fields: (t) => ({
    code: t.expose('code', { type: UserErrorCodeEnum }),
    message: t.exposeString('message'),
    details: t.field({ type: [FieldProblemRef], resolve: (e) => e.details }),
  }),
});
