// OAuth clients: registered by an organization's admins, owned by that organization. The secret is shown
// once and stored as a SHA-256 hash; a disabled client answers invalid_client everywhere (how the protocol
// authenticates a client is oauth/client-authentication.ts). A public client (token_endpoint_auth_method "none":
// a single-page, mobile or command-line app) has no secret, no client_credentials and no `api` scope
// (docs/architecture.md#apps-without-secrets); which kind a client is stays as it was registered.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { organizationInScope, requireActor, requireOrgRole } from '../../auth/access.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvents } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { isKnownScope } from '../oauth/scopes.ts';
import { revokeGrants } from '../oauth/revocation.service.ts';
import { ValidationError } from '../../errors/index.ts';
import {
  CliClientIsTesseras,
  OAuthClientNotFound,
  PublicClientHasNoSecret,
  REDIRECT_URI_REQUIRED,
  RedirectUriRequired,
} from './clients.errors.ts';
import { SIGNING_ALGS } from '../../keys/signing-keys.ts';

export const CLIENT_ID_PREFIX = 'tsc_';
export const CLIENT_SECRET_PREFIX = 'tscs_';
const GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
] as const;
export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_post', 'none'] as const;

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

const CONTROL_OR_SPACE = /[\u0000-\u0020\u007f-\u009f]/;

/**
 * The URL `value` when it is written exactly as the URL parser writes it, else a problem. Parsers silently drop
 * tabs and newlines and trim spaces, so "https://app.example/cb\nx" would be registered as one string and
 * followed by a browser as another: only the parser's own spelling is stored.
 */
function canonicalUrl(value: string): URL | string {
  if (CONTROL_OR_SPACE.test(value)) return 'must not contain spaces or control characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.hash || value.includes('#')) return 'must not have a fragment (#...)';
  if (url.href !== value) return `must be written as ${url.href}`;
  return url;
}

/** Redirect URIs: absolute, canonical, no fragment, https (or http on a loopback host, or a native app's own scheme). */
export const redirectUri = z
  .string()
  .max(2048)
  .superRefine((value, ctx) => {
    const url = canonicalUrl(value);
    if (typeof url === 'string') return void ctx.addIssue({ code: 'custom', message: url });
    if (url.protocol === 'https:') return;
    if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return;
    if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)) return; // reverse-domain scheme (RFC 8252)
    ctx.addIssue({
      code: 'custom',
      message: 'must be an absolute https URL without a fragment (http only for localhost)',
    });
  });

/**
 * A resource (RFC 8707) a client may ask tokens for: an absolute https URL (http only on a loopback host), canonical
 * and without a fragment, compared exactly with what a request names and written into the tokens' `aud`.
 */
const resource = z
  .string()
  .max(2048)
  .superRefine((value, ctx) => {
    const url = canonicalUrl(value);
    if (typeof url === 'string') return void ctx.addIssue({ code: 'custom', message: url });
    if (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname))) return;
    ctx.addIssue({ code: 'custom', message: 'must be an absolute https URL (http only for localhost)' });
  });

const origin = z
  .string()
  .max(2048)
  .refine((value) => {
    if (CONTROL_OR_SPACE.test(value)) return false;
    try {
      const url = new URL(value);
      return (
        url.origin === value && (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname)))
      );
    } catch {
      return false;
    }
  }, 'must be an origin such as https://app.example.com (no path, spaces or control characters)');

const scope = z
  .string()
  .refine(
    isKnownScope,
    'is not a known scope (openid, profile, email, organization, offline_access, api or a product slug)',
  );

const clientFields = {
  name: fields.name,
  description: z.string().trim().max(1000, 'must be at most 1000 characters'),
  redirectUris: z.array(redirectUri).max(20, 'at most 20'),
  postLogoutRedirectUris: z.array(redirectUri).max(20, 'at most 20'),
  allowedOrigins: z.array(origin).max(20, 'at most 20'),
  resources: z.array(resource).max(20, 'at most 20'),
  allowedScopes: z.array(scope).min(1, 'must name at least one scope').max(100),
  grantTypes: z
    .array(
      z.enum(GRANT_TYPES, {
        message:
          'must be authorization_code, refresh_token, client_credentials or urn:ietf:params:oauth:grant-type:device_code',
      }),
    )
    .min(1, 'must name at least one grant type')
    .max(4, 'at most 4'),
  idTokenSignedResponseAlg: z.enum(SIGNING_ALGS, { message: 'must be RS256, ES256 or EdDSA' }),
  enabled: z.boolean(),
  consentRequired: z.boolean(),
};

/** What a public client may not have, as field problems (none for a confidential client). */
function publicClientProblems(c: {
  tokenEndpointAuthMethod: string;
  grantTypes: string[];
  allowedScopes: string[];
}): { path: string; message: string }[] {
  if (c.tokenEndpointAuthMethod !== 'none') return [];
  return [
    ...(c.grantTypes.includes('client_credentials')
      ? [{ path: 'grantTypes', message: 'a public client cannot use client_credentials: it keeps no secret' }]
      : []),
    ...(c.allowedScopes.includes('api')
      ? [{ path: 'allowedScopes', message: 'a public client cannot be granted api' }]
      : []),
  ];
}

const createInput = z
  .object({
    ...clientFields,
    description: clientFields.description.default(''),
    // Machine clients (client_credentials) have none; the rule below asks for one where the flow needs it.
    redirectUris: clientFields.redirectUris.default([]),
    postLogoutRedirectUris: clientFields.postLogoutRedirectUris.default([]),
    allowedOrigins: clientFields.allowedOrigins.default([]),
    resources: clientFields.resources.default([]),
    grantTypes: clientFields.grantTypes.default(['authorization_code', 'refresh_token']),
    idTokenSignedResponseAlg: clientFields.idTokenSignedResponseAlg.default('RS256'),
    enabled: clientFields.enabled.default(true),
    consentRequired: clientFields.consentRequired.default(true),
    tokenEndpointAuthMethod: z
      .enum(TOKEN_ENDPOINT_AUTH_METHODS, { message: 'must be client_secret_post or none' })
      .default('client_secret_post'),
    organizationId: fields.id.optional(),
  })
  .strict()
  .refine((c) => !c.grantTypes.includes('authorization_code') || c.redirectUris.length > 0, {
    path: ['redirectUris'],
    message: REDIRECT_URI_REQUIRED,
  })
  .superRefine((c, refinement) => {
    for (const problem of publicClientProblems(c))
      refinement.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
  });

const updateInput = z
  .object(
    Object.fromEntries(Object.entries(clientFields).map(([k, v]) => [k, v.optional()])) as {
      [K in keyof typeof clientFields]: z.ZodOptional<(typeof clientFields)[K]>;
    },
  )
  .strict();

/** Each value once, in the order given; a field left out stays left out, a list given stays a list. */
function dedupe(list: string[]): string[];
function dedupe(list: string[] | undefined): string[] | undefined;
function dedupe(list: string[] | undefined) {
  return list ? [...new Set(list)] : undefined;
}

async function loadOwned(ctx: Context, id: string) {
  const client = await ctx.db.oAuthClient.findFirst({
    where: { OR: [{ id }, { clientId: id }] },
    include: { organization: { select: { id: true, name: true } } },
  });
  if (!client) throw new OAuthClientNotFound();
  await requireOrgRole(ctx, client.organizationId, 'admin', 'OAuth client');
  return client;
}

export async function createClient(ctx: Context, input: unknown) {
  const data = parseClientInput(input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  await requireOrgRole(ctx, organizationId, 'admin');
  const actor = requireActor(ctx);
  return insertClient(ctx, data, {
    organizationId,
    createdById: actor.kind === 'apiKey' ? actor.createdById : actor.userId,
  });
}

/** A new client's fields, read by the rules of registration, or a ValidationError naming each problem. */
export const parseClientInput = (input: unknown) => parseInput(createInput, input);
export type ClientInput = ReturnType<typeof parseClientInput>;

/**
 * Stores a new client of `owner.organizationId`, with its event and audit entry, and returns it with its secret (null
 * for a public client), shown this once. `registrationTokenHash` is set for a client that registered itself (RFC
 * 7591, registration.service.ts), whose registration access token reads and changes it later.
 */
export async function insertClient(
  ctx: Context,
  data: ClientInput,
  owner: { organizationId: string; createdById: string | null; registrationTokenHash?: string; details?: object },
) {
  const secret = data.tokenEndpointAuthMethod === 'none' ? null : randomToken(CLIENT_SECRET_PREFIX);
  const client = await ctx.db.$transaction(async (tx) => {
    const client = await tx.oAuthClient.create({
      data: {
        clientId: randomToken(CLIENT_ID_PREFIX, 16),
        secretHash: secret && sha256(secret),
        tokenEndpointAuthMethod: data.tokenEndpointAuthMethod,
        organizationId: owner.organizationId,
        createdById: owner.createdById,
        registrationTokenHash: owner.registrationTokenHash ?? null,
        name: data.name,
        description: data.description,
        redirectUris: dedupe(data.redirectUris),
        postLogoutRedirectUris: dedupe(data.postLogoutRedirectUris),
        allowedOrigins: dedupe(data.allowedOrigins),
        resources: dedupe(data.resources),
        allowedScopes: dedupe(data.allowedScopes),
        grantTypes: dedupe(data.grantTypes),
        idTokenSignedResponseAlg: data.idTokenSignedResponseAlg,
        enabled: data.enabled,
        consentRequired: data.consentRequired,
      },
      include: { organization: { select: { id: true, name: true } } },
    });
    await emitEvents(
      tx,
      ['oauth.client.created', 'oauth_client.created'],
      client.organization,
      { client },
      { at: ctx.clock.now() },
    );
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.create',
        organizationId: owner.organizationId,
        targetType: 'oauth_client',
        targetId: client.id,
        ...(owner.details ? { details: { ...owner.details } } : {}),
      },
      tx,
    );
    return client;
  });
  return { ...client, clientSecret: secret };
}

export async function listClients(ctx: Context, organizationId?: string | null, page?: PageInput) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  // A metadata document's client is no customer's registration (metadata-document.ts): the operator owns it only
  // as a place to keep it, so it is not listed among the operator's clients.
  const { limit, args } = paged(page, { organizationId: orgId, metadataDocument: false });
  return toPage(await ctx.db.oAuthClient.findMany(args), limit);
}

export async function getClient(ctx: Context, id: string) {
  return loadOwned(ctx, id);
}

export async function updateClient(ctx: Context, id: string, input: unknown) {
  const client = await loadOwned(ctx, id);
  const data = parseInput(updateInput, input);
  // Tessera's own command-line client may be turned off and on by the operator, and nothing else.
  if (client.platformWide && Object.keys(data).some((field) => field !== 'enabled')) throw new CliClientIsTesseras();
  return changeClient(ctx, client, data);
}

/** The fields of a client that change, as an update reads them (every one optional). */
export type ClientChange = ReturnType<typeof updateInput.parse>;

/**
 * Applies `data` to `client` with its audit entry, after the rules that span fields (a redirect URI for the code
 * flow, what a public client may not have). Disabling it ends its grants.
 */
export async function changeClient(
  ctx: Context,
  client: Prisma.OAuthClientGetPayload<object>,
  data: ClientChange,
  details: object = {},
) {
  const redirectUris = dedupe(data.redirectUris) ?? client.redirectUris;
  const grantTypes = dedupe(data.grantTypes) ?? client.grantTypes;
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    throw new RedirectUriRequired();
  }
  // The command line's client is public and granted api: only `enabled` reaches this far for it.
  const problems = client.platformWide
    ? []
    : publicClientProblems({
        tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
        grantTypes,
        allowedScopes: data.allowedScopes ?? client.allowedScopes,
      });
  if (problems.length) throw new ValidationError('The request is invalid', problems);
  return ctx.db.$transaction(async (tx) => {
    const updated = await tx.oAuthClient.update({
      where: { id: client.id },
      data: {
        ...data,
        redirectUris: dedupe(data.redirectUris),
        postLogoutRedirectUris: dedupe(data.postLogoutRedirectUris),
        allowedOrigins: dedupe(data.allowedOrigins),
        resources: dedupe(data.resources),
        allowedScopes: dedupe(data.allowedScopes),
        grantTypes: dedupe(data.grantTypes),
      },
    });
    if (data.enabled === false && client.enabled) {
      // A disabled client's tokens stop working at once: the grants they hang on end, with their refresh tokens.
      await revokeGrants(ctx, tx, { clientId: client.id });
    }
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.update',
        organizationId: client.organizationId,
        targetType: 'oauth_client',
        targetId: client.id,
        details: { fields: Object.keys(data), ...details },
      },
      tx,
    );
    return updated;
  });
}

export async function rotateClientSecret(ctx: Context, id: string) {
  const client = await loadOwned(ctx, id);
  if (client.secretHash === null) throw new PublicClientHasNoSecret();
  const secret = randomToken(CLIENT_SECRET_PREFIX);
  const updated = await ctx.db.oAuthClient.update({ where: { id: client.id }, data: { secretHash: sha256(secret) } });
  await recordAudit(ctx, {
    action: 'oauth_client.rotate_secret',
    organizationId: client.organizationId,
    targetType: 'oauth_client',
    targetId: client.id,
  });
  return { ...updated, clientSecret: secret };
}

export async function deleteClient(ctx: Context, id: string) {
  const client = await loadOwned(ctx, id);
  if (client.platformWide) throw new CliClientIsTesseras();
  await removeClient(ctx, client);
  return true;
}

/** Deletes `client` (its grants, codes and tokens go with it), with its event and audit entry. */
export async function removeClient(
  ctx: Context,
  client: Prisma.OAuthClientGetPayload<{ include: { organization: { select: { id: true; name: true } } } }>,
  details: object = {},
) {
  await ctx.db.$transaction(async (tx) => {
    await tx.oAuthClient.delete({ where: { id: client.id } });
    await emitEvents(
      tx,
      ['oauth.client.deleted', 'oauth_client.deleted'],
      client.organization,
      { client },
      { at: ctx.clock.now() },
    );
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.delete',
        organizationId: client.organizationId,
        targetType: 'oauth_client',
        targetId: client.id,
        details: { ...details },
      },
      tx,
    );
  });
}
