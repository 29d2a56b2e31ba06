// Dynamic client registration (RFC 7591) and its management protocol (RFC 7592), docs/architecture.md#apps-without-secrets.
// Open registration is off: an app registers only with an initial access token that an organization's admin made,
// which fixes the organization, the most scopes the client may be given and whether it is public. What registers
// gets a registration access token (kept as SHA-256 on the client's row) with which it reads, replaces and deletes
// its own registration at its registration_client_uri, and nothing else. Admins see and manage such a client as
// any other of theirs.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { organizationInScope, requireActor, requireOrgRole } from '../../auth/access.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { ValidationError } from '../../errors/index.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { InvalidClientMetadata, InvalidToken } from '../oauth/oauth.errors.ts';
import { isKnownScope } from '../oauth/scopes.ts';
import {
  changeClient,
  insertClient,
  parseClientInput,
  removeClient,
  type ClientChange,
  type ClientInput,
} from './clients.service.ts';
import { RegistrationTokenNotFound } from './clients.errors.ts';

export const INITIAL_ACCESS_TOKEN_PREFIX = 'tsit_';
export const REGISTRATION_ACCESS_TOKEN_PREFIX = 'tsrat_';
const DEFAULT_CLIENT_NAME = 'Registered application';

// ---- initial access tokens (an organization's admins) --------------------------------------------------------

const tokenInput = z
  .object({
    organizationId: fields.id.optional(),
    name: fields.name,
    scopes: z
      .array(z.string().refine(isKnownScope, 'is not a known scope'))
      .min(1, 'must name at least one scope')
      .max(100),
    public: z.boolean().default(false),
  })
  .strict()
  .refine((t) => !t.public || !t.scopes.includes('api'), {
    path: ['scopes'],
    message: 'a public client cannot be granted api',
  });

export async function createRegistrationToken(ctx: Context, input: unknown) {
  const data = parseInput(tokenInput, input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  await requireOrgRole(ctx, organizationId, 'admin');
  const actor = requireActor(ctx);
  const token = randomToken(INITIAL_ACCESS_TOKEN_PREFIX);
  const created = await ctx.db.$transaction(async (tx) => {
    const row = await tx.registrationToken.create({
      data: {
        organizationId,
        name: data.name,
        tokenHash: sha256(token),
        scopes: [...new Set(data.scopes)],
        public: data.public,
        createdById: actor.kind === 'apiKey' ? actor.createdById : actor.userId,
      },
    });
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.registration_token.create',
        organizationId,
        targetType: 'registration_token',
        targetId: row.id,
        details: { name: row.name, scopes: row.scopes, public: row.public },
      },
      tx,
    );
    return row;
  });
  return { ...created, token };
}

export async function listRegistrationTokens(ctx: Context, organizationId?: string | null) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  return ctx.db.registrationToken.findMany({
    where: { organizationId: orgId },
    orderBy: { createdAt: 'desc' },
    take: 100,
  });
}

export async function deleteRegistrationToken(ctx: Context, id: string) {
  const row = await ctx.db.registrationToken.findUnique({ where: { id } });
  if (!row) throw new RegistrationTokenNotFound();
  await requireOrgRole(ctx, row.organizationId, 'admin', 'Registration token');
  await ctx.db.$transaction(async (tx) => {
    await tx.registrationToken.delete({ where: { id } });
    await recordAudit(
      ctx,
      {
        action: 'oauth_client.registration_token.delete',
        organizationId: row.organizationId,
        targetType: 'registration_token',
        targetId: id,
      },
      tx,
    );
  });
  return true;
}

// ---- the protocol (the app itself, with a bearer token) ------------------------------------------------------

/** The client metadata Tessera reads (RFC 7591 2); any other member is ignored, as 2 says. */
const metadataShape = z.object({
  redirect_uris: z.array(z.string()).max(20).optional(),
  client_name: z.string().optional(),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).max(4).optional(),
  response_types: z.array(z.string()).max(4).optional(),
  scope: z.string().max(4096).optional(),
  post_logout_redirect_uris: z.array(z.string()).max(20).optional(),
  id_token_signed_response_alg: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});
type Metadata = z.infer<typeof metadataShape>;

/** The RFC 7591 name of each of our fields, for the error a client library shows. */
const METADATA_NAMES: Record<string, string> = {
  name: 'client_name',
  redirectUris: 'redirect_uris',
  postLogoutRedirectUris: 'post_logout_redirect_uris',
  allowedScopes: 'scope',
  grantTypes: 'grant_types',
  idTokenSignedResponseAlg: 'id_token_signed_response_alg',
};

function readMetadata(body: unknown): Metadata {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidClientMetadata('Send the client metadata as a JSON object (RFC 7591 3.1)');
  const read = metadataShape.safeParse(body);
  if (read.success) return read.data;
  const issue = read.error.issues[0];
  throw new InvalidClientMetadata(`${issue?.path.join('.') ?? 'the metadata'} is not valid: ${issue?.message ?? ''}`);
}

/**
 * The client fields `metadata` asks for, within what `limits` allow (the initial access token's scopes and kind), as
 * registration's rules read them; refused with the RFC 7591 error that names the member.
 */
function clientInputOf(metadata: Metadata, limits: { scopes: string[]; public: boolean }): ClientInput {
  const method = limits.public ? 'none' : 'client_secret_post';
  if (metadata.token_endpoint_auth_method !== undefined && metadata.token_endpoint_auth_method !== method)
    throw new InvalidClientMetadata(
      `token_endpoint_auth_method must be ${method}: the token this client registers with makes ${limits.public ? 'public' : 'confidential'} clients`,
    );
  if (metadata.response_types?.some((r) => r !== 'code'))
    throw new InvalidClientMetadata('response_types may only be code');
  const scopes = metadata.scope === undefined ? limits.scopes : metadata.scope.split(' ').filter(Boolean);
  const beyond = scopes.filter((s) => !limits.scopes.includes(s));
  if (beyond.length)
    throw new InvalidClientMetadata(`scope goes beyond what this client may be given: ${beyond.join(' ')}`);
  try {
    return parseClientInput({
      name: metadata.client_name ?? DEFAULT_CLIENT_NAME,
      redirectUris: metadata.redirect_uris ?? [],
      postLogoutRedirectUris: metadata.post_logout_redirect_uris ?? [],
      allowedScopes: scopes,
      ...(metadata.grant_types ? { grantTypes: metadata.grant_types } : {}),
      ...(metadata.id_token_signed_response_alg
        ? { idTokenSignedResponseAlg: metadata.id_token_signed_response_alg }
        : {}),
      tokenEndpointAuthMethod: method,
      // An app that registered itself was vetted by no one: each person is asked.
      consentRequired: true,
    });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const problem = error.details[0];
    const field = problem?.path.split('.')[0] ?? '';
    const name = METADATA_NAMES[field] ?? field;
    throw new InvalidClientMetadata(
      `${name}${problem?.path.slice(field.length) ?? ''} ${problem?.message ?? 'is not valid'}`,
      field === 'redirectUris' || field === 'postLogoutRedirectUris'
        ? 'invalid_redirect_uri'
        : 'invalid_client_metadata',
    );
  }
}

type StoredClient = Awaited<ReturnType<typeof insertClient>>;

/** RFC 7591 3.2.1's client information response (RFC 7592 3 without the secret, which is not kept). */
function clientInformation(ctx: Context, client: Omit<StoredClient, 'clientSecret' | 'organization'>) {
  return {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    grant_types: client.grantTypes,
    response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    scope: client.allowedScopes.join(' '),
    id_token_signed_response_alg: client.idTokenSignedResponseAlg,
    registration_client_uri: `${ctx.settings.issuer()}/oauth/register/${client.clientId}`,
  };
}

/** The SHA-256 of a bearer token of the kind `prefix` names, or null for anything else (looked up as no row). */
const hashOfBearer = (token: string | null, prefix: string) =>
  token && token.startsWith(prefix) && token.length <= 200 ? sha256(token) : null;

/** POST /oauth/register: the client `body` describes, in the organization of the initial access token. */
export async function registerClient(ctx: Context, bearer: string | null, body: unknown) {
  if (!bearer) throw new InvalidToken('An initial access token is required: open registration is off');
  const hash = hashOfBearer(bearer, INITIAL_ACCESS_TOKEN_PREFIX);
  const grant = hash ? await ctx.db.registrationToken.findUnique({ where: { tokenHash: hash } }) : null;
  if (!grant) throw new InvalidToken('The initial access token is not valid');
  const data = clientInputOf(readMetadata(body), grant);
  const registrationToken = randomToken(REGISTRATION_ACCESS_TOKEN_PREFIX);
  const client = await insertClient(ctx, data, {
    organizationId: grant.organizationId,
    createdById: grant.createdById,
    registrationTokenHash: sha256(registrationToken),
    details: { registrationTokenId: grant.id, via: 'dynamic_registration' },
  });
  await ctx.db.registrationToken.updateMany({ where: { id: grant.id }, data: { lastUsedAt: ctx.clock.now() } });
  return {
    ...clientInformation(ctx, client),
    ...(client.clientSecret ? { client_secret: client.clientSecret, client_secret_expires_at: 0 } : {}),
    registration_access_token: registrationToken,
  };
}

/** The client that `clientId` names, if `bearer` is its registration access token; else invalid_token (RFC 7592 3). */
async function registeredClient(ctx: Context, clientId: string, bearer: string | null) {
  const hash = hashOfBearer(bearer, REGISTRATION_ACCESS_TOKEN_PREFIX);
  const client = hash
    ? await ctx.db.oAuthClient.findUnique({
        where: { registrationTokenHash: hash },
        include: { organization: { select: { id: true, name: true } } },
      })
    : null;
  // A token of another client says nothing about this one: the same answer as no token (RFC 7592 2.1).
  if (!client || client.clientId !== clientId) throw new InvalidToken('The registration access token is not valid');
  return client;
}

/** GET /oauth/register/{client_id} (RFC 7592 2.1). */
export async function readRegisteredClient(ctx: Context, clientId: string, bearer: string | null) {
  return clientInformation(ctx, await registeredClient(ctx, clientId, bearer));
}

/**
 * PUT /oauth/register/{client_id} (RFC 7592 2.2): the metadata replaces what was registered, members left out
 * taking their defaults. The client stays the kind it is, and its scopes may narrow, never widen.
 */
export async function replaceRegisteredClient(ctx: Context, clientId: string, bearer: string | null, body: unknown) {
  const client = await registeredClient(ctx, clientId, bearer);
  const metadata = readMetadata(body);
  if (metadata.client_id !== clientId) throw new InvalidClientMetadata('client_id must be the client being updated');
  if (
    metadata.client_secret !== undefined &&
    (!client.secretHash || sha256(metadata.client_secret) !== client.secretHash)
  )
    throw new InvalidClientMetadata("client_secret is not this client's: a registration does not set its secret");
  const data = clientInputOf(metadata, {
    scopes: client.allowedScopes,
    public: client.tokenEndpointAuthMethod === 'none',
  });
  const change: ClientChange = {
    name: data.name,
    redirectUris: data.redirectUris,
    postLogoutRedirectUris: data.postLogoutRedirectUris,
    allowedScopes: data.allowedScopes,
    grantTypes: data.grantTypes,
    idTokenSignedResponseAlg: data.idTokenSignedResponseAlg,
  };
  return clientInformation(ctx, await changeClient(ctx, client, change, { via: 'dynamic_registration' }));
}

/** DELETE /oauth/register/{client_id} (RFC 7592 2.3): the client and everything it was granted. */
export async function deleteRegisteredClient(ctx: Context, clientId: string, bearer: string | null) {
  await removeClient(ctx, await registeredClient(ctx, clientId, bearer), { via: 'dynamic_registration' });
}
