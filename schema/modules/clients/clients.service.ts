// OAuth clients: registered by an organization's admins, owned by that organization. The secret is shown
// once and stored as a SHA-256 hash; a disabled client answers invalid_client everywhere (how the protocol
// authenticates a client is oauth/client-authentication.ts).
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { organizationInScope, requireActor, requireOrgRole } from '../../auth/access.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvents } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { isKnownScope } from '../oauth/scopes.ts';
import { revokeGrants } from '../oauth/revocation.service.ts';
import { OAuthClientNotFound, REDIRECT_URI_REQUIRED, RedirectUriRequired } from './clients.errors.ts';
import { SIGNING_ALGS } from '../../keys/signing-keys.ts';

export const CLIENT_ID_PREFIX = 'tsc_';
export const CLIENT_SECRET_PREFIX = 'tscs_';
const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;

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
  allowedScopes: z.array(scope).min(1, 'must name at least one scope').max(100),
  grantTypes: z
    .array(z.enum(GRANT_TYPES, { message: 'must be authorization_code, refresh_token or client_credentials' }))
    .min(1, 'must name at least one grant type')
    .max(3, 'at most 3'),
  idTokenSignedResponseAlg: z.enum(SIGNING_ALGS, { message: 'must be RS256, ES256 or EdDSA' }),
  enabled: z.boolean(),
  consentRequired: z.boolean(),
};

const createInput = z
  .object({
    ...clientFields,
    description: clientFields.description.default(''),
    // Machine clients (client_credentials) have none; the rule below asks for one where the flow needs it.
    redirectUris: clientFields.redirectUris.default([]),
    postLogoutRedirectUris: clientFields.postLogoutRedirectUris.default([]),
    allowedOrigins: clientFields.allowedOrigins.default([]),
    grantTypes: clientFields.grantTypes.default(['authorization_code', 'refresh_token']),
    idTokenSignedResponseAlg: clientFields.idTokenSignedResponseAlg.default('RS256'),
    enabled: clientFields.enabled.default(true),
    consentRequired: clientFields.consentRequired.default(true),
    organizationId: fields.id.optional(),
  })
  .strict()
  .refine((c) => !c.grantTypes.includes('authorization_code') || c.redirectUris.length > 0, {
    path: ['redirectUris'],
    message: REDIRECT_URI_REQUIRED,
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
  const data = parseInput(createInput, input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  await requireOrgRole(ctx, organizationId, 'admin');
  const secret = randomToken(CLIENT_SECRET_PREFIX);
  const actor = requireActor(ctx);
  const client = await ctx.db.$transaction(async (tx) => {
    const client = await tx.oAuthClient.create({
      data: {
        clientId: randomToken(CLIENT_ID_PREFIX, 16),
        secretHash: sha256(secret),
        organizationId,
        createdById: actor.kind === 'apiKey' ? actor.createdById : actor.userId,
        name: data.name,
        description: data.description,
        redirectUris: dedupe(data.redirectUris),
        postLogoutRedirectUris: dedupe(data.postLogoutRedirectUris),
        allowedOrigins: dedupe(data.allowedOrigins),
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
      { action: 'oauth_client.create', organizationId, targetType: 'oauth_client', targetId: client.id },
      tx,
    );
    return client;
  });
  return { ...client, clientSecret: secret };
}

export async function listClients(ctx: Context, organizationId?: string | null, page?: PageInput) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  const { limit, args } = paged(page, { organizationId: orgId });
  return toPage(await ctx.db.oAuthClient.findMany(args), limit);
}

export async function getClient(ctx: Context, id: string) {
  return loadOwned(ctx, id);
}

export async function updateClient(ctx: Context, id: string, input: unknown) {
  const client = await loadOwned(ctx, id);
  const data = parseInput(updateInput, input);
  const redirectUris = dedupe(data.redirectUris) ?? client.redirectUris;
  const grantTypes = dedupe(data.grantTypes) ?? client.grantTypes;
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    throw new RedirectUriRequired();
  }
  return ctx.db.$transaction(async (tx) => {
    const updated = await tx.oAuthClient.update({
      where: { id: client.id },
      data: {
        ...data,
        redirectUris: dedupe(data.redirectUris),
        postLogoutRedirectUris: dedupe(data.postLogoutRedirectUris),
        allowedOrigins: dedupe(data.allowedOrigins),
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
        details: { fields: Object.keys(data) },
      },
      tx,
    );
    return updated;
  });
}

export async function rotateClientSecret(ctx: Context, id: string) {
  const client = await loadOwned(ctx, id);
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
      },
      tx,
    );
  });
  return true;
}
