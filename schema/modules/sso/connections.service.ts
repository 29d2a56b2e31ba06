// Connections: the identity providers an organization's people sign in through (OpenID Connect, SAML 2.0), and the
// platform-wide ones shown as "Sign in with ..." on /login (OpenID Connect, GitHub). An organization's owners manage
// its connections and its admins read them; platform admins manage the platform-wide ones
// (docs/architecture.md#single-sign-on).
import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { NotFoundError, ValidationError } from '../../errors/index.ts';
import {
  organizationInScope,
  requireFirstParty,
  requireOrgRole,
  requireOwner,
  requirePlatformAdmin,
} from '../../auth/access.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { seal, unseal } from '../../lib/sealed.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { DomainInUseError, SignInOwnersOnlyError, UnverifiedDomainError } from './sso.errors.ts';
import { oidcModule, samlModule } from './protocols.ts';
import { domainOf } from '../../lib/email.ts';
import type { LoadedConnection } from './protocol.ts';

type Tx = Prisma.TransactionClient;

const text = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
const origin = fields.httpsUrl.transform((u, c) => {
  const url = new URL(u);
  if (url.username || url.password || url.search || url.hash)
    c.addIssue({ code: 'custom', message: 'must be an https URL without credentials, query or fragment' });
  return url.href.replace(/\/$/, '');
});
const roleMap = z
  .record(text(200), fields.role)
  .refine((m) => Object.keys(m).length <= 100, 'must map at most 100 values');
const pem = z
  .string()
  .max(20_000)
  .transform((value, c) => {
    const body = value.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
    const text = `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)?.join('\n') ?? ''}\n-----END CERTIFICATE-----\n`;
    try {
      new X509Certificate(text);
      return text;
    } catch {
      c.addIssue({ code: 'custom', message: 'must be an X.509 certificate (PEM or base64)' });
      return z.NEVER;
    }
  });

const common = {
  name: fields.name,
  enabled: z.boolean({ message: 'must be true or false' }).optional(),
  defaultRole: fields.role.optional(),
  requireSso: z.boolean({ message: 'must be true or false' }).optional(),
  seatSubscriptionId: fields.id.nullable().optional(),
  roleClaim: text(200).nullable().optional(),
  roleMap: roleMap.nullable().optional(),
  domains: z.array(z.string().max(253)).max(100, 'must list at most 100 domains').optional(),
};
const oidc = {
  issuer: origin,
  clientId: text(500),
  clientSecret: text(2000),
  scopes: z
    .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,100}$/, 'must be scope tokens (RFC 6749 3.3)'))
    .max(20)
    .optional(),
};
const saml = {
  metadataXml: z.string().min(1).max(500_000, 'must be at most 500 kB').optional(),
  entryPoint: fields.httpsUrl.optional(),
  idpCert: pem.optional(),
  idpEntityId: text(1000).optional(),
};

const createInput = z.discriminatedUnion(
  'type',
  [
    z
      .object({
        type: z.literal('oidc'),
        ...common,
        ...oidc,
        platform: z.boolean().optional(),
        organizationId: fields.id.optional(),
      })
      .strict(),
    z.object({ type: z.literal('saml'), ...common, ...saml, organizationId: fields.id.optional() }).strict(),
    z
      .object({
        type: z.literal('github'),
        name: fields.name,
        enabled: common.enabled,
        clientId: oidc.clientId,
        clientSecret: oidc.clientSecret,
        issuer: origin.optional(),
        platform: z.literal(true, { message: 'GitHub sign-in is platform-wide: give platform: true' }),
      })
      .strict(),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? 'must be oidc, saml or github' : undefined) },
);

const updateInput = z
  .object({
    ...common,
    name: common.name.optional(),
    issuer: oidc.issuer.optional(),
    clientId: oidc.clientId.optional(),
    clientSecret: oidc.clientSecret.optional(),
    scopes: oidc.scopes,
    ...saml,
  })
  .strict();

type CreateInput = z.output<typeof createInput>;
type UpdateInput = z.output<typeof updateInput>;

/** A connection as the API shows it: the secret never, whether there is one. */
export type ConnectionView = ReturnType<typeof present>;

const VIEW = { domains: { select: { domain: { select: { domain: true } } } } } as const;

type ConnectionRow = Prisma.SsoConnectionGetPayload<{ include: typeof VIEW }>;

function present(row: ConnectionRow) {
  const { domains, clientSecretEncrypted, ...rest } = row;
  return {
    ...rest,
    roleMap: row.roleMap as Record<string, Role> | null,
    domains: domains.map((d) => d.domain.domain).sort(),
    hasClientSecret: !!clientSecretEncrypted,
  };
}

/** The connection as the API shows it; one deleted meanwhile is not found, as it would be a moment later. */
async function findConnection(db: Tx | Context['db'], id: string) {
  const row = await db.ssoConnection.findUnique({ where: { id }, include: VIEW });
  if (!row) throw new NotFoundError('Connection');
  return present(row);
}

/**
 * Who may read (`admin`) or change (`owner`) a connection: its organization's admins read it and only its owners
 * change it, as for domains and directory tokens (requireOwner); a platform-wide one is platform admins'. Only owners
 * write a connection, so no role it gives (default role, role map) is above its author's.
 */
async function requireManager(ctx: Context, organizationId: string | null, min: 'admin' | 'owner'): Promise<void> {
  requireFirstParty(ctx, 'manage sign-in connections');
  if (!organizationId) await requirePlatformAdmin(ctx);
  else if (min === 'owner') await requireOwner(ctx, organizationId, SignInOwnersOnlyError);
  else await requireOrgRole(ctx, organizationId, 'admin');
}

export async function listConnections(
  ctx: Context,
  input: { organizationId?: string | null; platform?: boolean | null } = {},
) {
  const organizationId = input.platform ? null : organizationInScope(ctx, input.organizationId);
  await requireManager(ctx, organizationId, 'admin');
  const rows = await ctx.db.ssoConnection.findMany({
    where: { organizationId },
    orderBy: { createdAt: 'asc' },
    include: VIEW,
  });
  return rows.map(present);
}

export async function getConnection(ctx: Context, id: string) {
  const { id: connectionId } = parseInput(z.object({ id: fields.id }), { id });
  const found = await ctx.db.ssoConnection.findUnique({
    where: { id: connectionId },
    select: { organizationId: true },
  });
  if (!found) throw new NotFoundError('Connection');
  await requireManagerOr404(ctx, found.organizationId, 'admin');
  return findConnection(ctx.db, connectionId);
}

/** Another organization's connection is not found, not forbidden: existence is never revealed across tenants. */
async function requireManagerOr404(ctx: Context, organizationId: string | null, min: 'admin' | 'owner'): Promise<void> {
  try {
    await requireManager(ctx, organizationId, min);
  } catch (error) {
    if (!organizationId && error instanceof Error && (error as { code?: string }).code === 'forbidden')
      throw new NotFoundError('Connection');
    throw error;
  }
}

/** The settings each kind of connection takes: another kind's is refused by name rather than as an unknown key. */
const SETTINGS_OF: Record<string, readonly string[]> = {
  oidc: ['issuer', 'clientId', 'clientSecret', 'scopes'],
  saml: ['metadataXml', 'entryPoint', 'idpCert', 'idpEntityId'],
  github: ['issuer', 'clientId', 'clientSecret'],
};

function refuseOtherKinds(type: unknown, input: unknown) {
  const own = SETTINGS_OF[type as string];
  if (!own || typeof input !== 'object' || input === null) return;
  const foreign = Object.entries(SETTINGS_OF)
    .flatMap(([, keys]) => keys)
    .filter((k) => !own.includes(k) && (input as Record<string, unknown>)[k] !== undefined);
  if (foreign.length)
    throw new ValidationError(
      `Settings of another kind of connection than ${String(type)}`,
      [...new Set(foreign)].map((path) => ({ path, message: `is not a setting of a ${String(type)} connection` })),
    );
}

export async function createConnection(ctx: Context, input: unknown) {
  refuseOtherKinds((input as { type?: unknown } | null)?.type, input);
  const data = parseInput(createInput, input);
  const platform = data.type === 'github' || (data.type === 'oidc' && !!data.platform);
  const organizationId = platform
    ? null
    : organizationInScope(ctx, 'organizationId' in data ? data.organizationId : undefined);
  if (platform && 'organizationId' in data && data.organizationId)
    throw new ValidationError('A platform-wide connection belongs to no organization', [
      { path: 'organizationId', message: 'must be absent with platform: true' },
    ]);
  await requireManager(ctx, organizationId, 'owner');
  const settings = await protocolSettings(ctx, data);
  if (platform) refuseOrganizationFields(data);
  const now = ctx.clock.now();
  const id = uuidv7(now.getTime());
  await write(ctx, async (tx) => {
    if (organizationId && 'seatSubscriptionId' in data && data.seatSubscriptionId)
      await requireOwnSubscription(tx, organizationId, data.seatSubscriptionId);
    await tx.ssoConnection.create({
      data: {
        id,
        organizationId,
        type: data.type,
        name: data.name,
        enabled: data.enabled ?? true,
        createdAt: now,
        updatedAt: now,
        ...organizationFields(data),
        ...settings,
      },
    });
    if (organizationId && 'domains' in data && data.domains) await serveDomains(tx, organizationId, id, data.domains);
    await recordAudit(
      ctx,
      {
        action: 'sso_connection.create',
        organizationId,
        targetType: 'sso_connection',
        targetId: id,
        details: { type: data.type, name: data.name },
      },
      tx,
    );
  });
  return findConnection(ctx.db, id);
}

export async function updateConnection(ctx: Context, id: string, input: unknown) {
  const { id: connectionId } = parseInput(z.object({ id: fields.id }), { id });
  const found = await ctx.db.ssoConnection.findUnique({ where: { id: connectionId } });
  if (!found) throw new NotFoundError('Connection');
  await requireManagerOr404(ctx, found.organizationId, 'owner');
  refuseOtherKinds(found.type, input);
  const data = parseInput(updateInput, input);
  if (!found.organizationId) refuseOrganizationFields(data);
  const settings = await protocolSettings(ctx, { ...data, type: found.type as LoadedConnection['type'] }, found);
  await write(ctx, async (tx) => {
    if (found.organizationId && data.seatSubscriptionId)
      await requireOwnSubscription(tx, found.organizationId, data.seatSubscriptionId);
    await tx.ssoConnection.update({
      where: { id: connectionId },
      data: {
        name: data.name,
        enabled: data.enabled,
        updatedAt: ctx.clock.now(),
        ...organizationFields(data),
        ...settings,
      },
    });
    if (found.organizationId && data.domains) await serveDomains(tx, found.organizationId, connectionId, data.domains);
    await recordAudit(
      ctx,
      {
        action: 'sso_connection.update',
        organizationId: found.organizationId,
        targetType: 'sso_connection',
        targetId: connectionId,
        details: { changed: Object.keys(data).sort() },
      },
      tx,
    );
  });
  return findConnection(ctx.db, connectionId);
}

export async function deleteConnection(ctx: Context, id: string) {
  const { id: connectionId } = parseInput(z.object({ id: fields.id }), { id });
  const found = await ctx.db.ssoConnection.findUnique({
    where: { id: connectionId },
    select: { organizationId: true, name: true, type: true },
  });
  if (!found) throw new NotFoundError('Connection');
  await requireManagerOr404(ctx, found.organizationId, 'owner');
  await ctx.db.$transaction(async (tx) => {
    const { count } = await tx.ssoConnection.deleteMany({ where: { id: connectionId } });
    if (!count) throw new NotFoundError('Connection');
    await recordAudit(
      ctx,
      {
        action: 'sso_connection.delete',
        organizationId: found.organizationId,
        targetType: 'sso_connection',
        targetId: connectionId,
        details: { type: found.type, name: found.name },
      },
      tx,
    );
  });
  return true;
}

/** Writes in a transaction, turning the unique index on a served domain into its refusal. */
async function write(ctx: Context, work: (tx: Tx) => Promise<void>) {
  try {
    await ctx.db.$transaction(work);
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainInUseError('A domain');
    throw error;
  }
}

/** Platform-wide connections sign people in to no organization: roles, seats, domains and required SSO mean nothing there. */
function refuseOrganizationFields(data: Partial<Record<string, unknown>>) {
  const given = ['domains', 'defaultRole', 'requireSso', 'seatSubscriptionId', 'roleClaim', 'roleMap'].filter(
    (k) => data[k] !== undefined,
  );
  if (given.length)
    throw new ValidationError(
      'A platform-wide connection has no organization settings',
      given.map((path) => ({ path, message: "applies only to an organization's connection" })),
    );
}

function organizationFields(data: Partial<CreateInput & UpdateInput>) {
  const d = data as UpdateInput;
  return {
    defaultRole: d.defaultRole,
    requireSso: d.requireSso,
    seatSubscriptionId: d.seatSubscriptionId,
    roleClaim: d.roleClaim,
    roleMap: d.roleMap === null ? (null as unknown as Prisma.InputJsonValue) : d.roleMap,
  };
}

async function requireOwnSubscription(tx: Tx, organizationId: string, subscriptionId: string) {
  const sub = await tx.subscription.findFirst({ where: { id: subscriptionId, organizationId }, select: { id: true } });
  if (!sub)
    throw new ValidationError('No such subscription in this organization', [
      { path: 'seatSubscriptionId', message: 'is not a subscription of this organization' },
    ]);
}

/**
 * The domains a connection serves: each a verified domain of its organization, none served by another connection
 * (the unique index decides between two connections claiming one at once).
 */
async function serveDomains(tx: Tx, organizationId: string, connectionId: string, names: string[]) {
  const wanted = [...new Set(names.map(domainOf))];
  const rows = wanted.length
    ? await tx.domain.findMany({
        where: { organizationId, domain: { in: wanted }, verifiedAt: { not: null } },
        select: { id: true, domain: true },
      })
    : [];
  const missing = wanted.find((n) => !rows.some((r) => r.domain === n));
  if (missing !== undefined) throw new UnverifiedDomainError(missing.slice(0, 253));
  const taken = await tx.ssoConnectionDomain.findFirst({
    where: { domainId: { in: rows.map((r) => r.id) }, connectionId: { not: connectionId } },
    include: { domain: true },
  });
  if (taken) throw new DomainInUseError(taken.domain.domain);
  await tx.ssoConnectionDomain.deleteMany({ where: { connectionId } });
  if (rows.length)
    await tx.ssoConnectionDomain.createMany({ data: rows.map((r) => ({ connectionId, domainId: r.id })) });
}

type ProtocolInput = { type: LoadedConnection['type'] } & Partial<{
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  metadataXml: string;
  entryPoint: string;
  idpCert: string;
  idpEntityId: string;
}>;

/**
 * The protocol's settings, checked: an OpenID Connect issuer must answer discovery, SAML needs its IdP's sign-in
 * URL and certificate (from metadata or given), and a client secret is stored encrypted with SECRET_KEY.
 */
async function protocolSettings(
  ctx: Context,
  data: ProtocolInput,
  current?: { issuer: string | null; entryPoint: string | null; idpCerts: string[] },
) {
  const secret = data.clientSecret
    ? { clientSecretEncrypted: await seal(data.clientSecret, ctx.settings.secretKey) }
    : {};
  if (data.type === 'saml') {
    const fromMetadata = data.metadataXml ? (await samlModule()).parseIdpMetadata(data.metadataXml) : null;
    const entryPoint = data.entryPoint ?? fromMetadata?.entryPoint;
    const certs = data.idpCert ? [data.idpCert] : fromMetadata?.certs;
    if (!current && (!entryPoint || !certs?.length)) {
      throw new ValidationError(
        "A SAML connection needs its identity provider's metadata, or its sign-in URL and certificate",
        [{ path: 'metadata_xml', message: 'or entry_point and idp_cert are required' }],
      );
    }
    return { entryPoint, idpCerts: certs, idpEntityId: data.idpEntityId ?? fromMetadata?.entityId };
  }
  if (data.type === 'github')
    return {
      issuer: data.issuer ?? 'https://github.com',
      clientId: data.clientId,
      scopes: ['read:user', 'user:email'],
      ...secret,
    };
  if (data.issuer && data.issuer !== current?.issuer) await (await oidcModule()).discoverIssuer(ctx, data.issuer);
  const scopes = data.scopes
    ? [...new Set(['openid', ...data.scopes])]
    : current
      ? undefined
      : ['openid', 'email', 'profile'];
  return { issuer: data.issuer, clientId: data.clientId, scopes, ...secret };
}

/** A connection with what its protocol needs (the secret decrypted), or null when unknown. */
export async function loadConnection(ctx: Context, id: string): Promise<LoadedConnection | null> {
  if (!id || id.length > 100) return null;
  const row = await ctx.db.ssoConnection.findUnique({
    where: { id },
    include: { domains: { select: { domain: { select: { domain: true, verifiedAt: true } } } } },
  });
  if (!row) return null;
  return {
    id: row.id,
    organizationId: row.organizationId,
    type: row.type as LoadedConnection['type'],
    name: row.name,
    enabled: row.enabled,
    defaultRole: row.defaultRole,
    requireSso: row.requireSso,
    seatSubscriptionId: row.seatSubscriptionId,
    roleClaim: row.roleClaim,
    roleMap: row.roleMap as Record<string, Role> | null,
    issuer: row.issuer,
    clientId: row.clientId,
    clientSecret: row.clientSecretEncrypted ? await unseal(row.clientSecretEncrypted, ctx.settings.secretKey) : null,
    scopes: row.scopes,
    entryPoint: row.entryPoint,
    idpEntityId: row.idpEntityId,
    idpCerts: row.idpCerts,
    // A domain proven again by nobody stays served: verification is never withdrawn, only the domain deleted.
    domains: row.domains.filter((d) => d.domain.verifiedAt).map((d) => d.domain.domain),
  };
}
