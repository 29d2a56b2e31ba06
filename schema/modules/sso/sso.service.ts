// Signing in through a connection (docs/architecture.md#single-sign-on): the browser leaves for the identity provider
// with a request that is remembered once, comes back with an answer the protocol validates, and the person it names
// is signed in, joining the connection's organization on their first visit (just-in-time membership). The SSO domain's
// entry: sso.graphql.ts and the browser's steps (server/sso) call here; connections and domains have services of
// their own beside it.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { NotFoundError, UserError, ValidationError } from '../../errors/index.ts';
import { requireOrgRole, requirePlatformAdmin, requireSessionUser, requireUserId } from '../../auth/access.ts';
import { highestRole, ROLES } from '../../auth/roles.ts';
import { addSeconds } from '../../lib/clock.ts';
import { randomToken, sha256, unusablePasswordHash } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { domainOf } from '../../lib/email.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { loginPayload, type LoginResult } from '../auth/auth.service.ts';
import { admitSignIn } from '../auth/sign-in-policy.ts';
import { SsoRequiredError } from '../auth/auth.errors.ts';
import { createSession, type AuthMethod } from '../sessions/sessions.service.ts';
import { admitMember, applyRoleFromUpstream } from '../members/members.service.ts';
import { takeOverUnproven } from '../accounts/take-over.ts';
import { takeSeat } from '../subscriptions/seats.service.ts';
import { loadConnection } from './connections.service.ts';
import { protocolOf, samlModule } from './protocols.ts';
import type { LoadedConnection, SsoRequestState, UpstreamProfile } from './protocol.ts';
import { SsoSignInError } from './sso.errors.ts';

type Tx = Prisma.TransactionClient;

/** How long a sign-in may stay at the identity provider. */
export const SSO_REQUEST_TTL_SECONDS = 10 * 60;
/** The cookie value that binds a sign-in to the browser that started it. */
const BROWSER_TOKEN_PREFIX = 'tsb_';

/** The platform-wide connections, as buttons on /login. */
export async function socialProviders(ctx: Context) {
  return ctx.db.ssoConnection.findMany({
    where: { organizationId: null, enabled: true },
    orderBy: { createdAt: 'asc' },
    select: { id: true, name: true, type: true },
  });
}

/** A path on this site to go on to after signing in, or nothing: never another origin. */
const returnPath = z
  .string()
  .max(2000)
  .optional()
  .nullable()
  .transform((v) =>
    v && v.startsWith('/') && !v.startsWith('//') && !v.startsWith('/\\') && !/[\x00-\x1f\x7f]/.test(v) ? v : null,
  );

const startInput = z
  .object({
    connectionId: fields.id,
    returnTo: returnPath,
    loginHint: z.string().max(254).optional().nullable(),
    test: z.boolean().optional().nullable(),
    link: z.boolean().optional().nullable(),
  })
  .strict();

export interface SsoStart {
  url: string;
  /** For the cookie that binds the sign-in to this browser (HttpOnly, for the callback path). */
  browserToken: string;
  expiresAt: Date;
}

/**
 * Starts a sign-in through a connection: the identity provider's URL to send the browser to. A test sign-in (an
 * admin checking a connection, also one that is switched off) shows the claims received and signs nobody in.
 */
export async function startSsoSignIn(ctx: Context, input: unknown): Promise<SsoStart> {
  const { connectionId, returnTo, loginHint, test, link } = parseInput(startInput, input);
  // Connecting a platform-wide provider to the signed-in person's account adds a way to sign in: their own session
  // only, never an app's token (docs/architecture.md#authorization), and refused before the connection is looked up.
  // An organization's connection links the addresses of its domains by itself.
  const linkUserId = link ? requireSessionUser(ctx, 'connect a sign-in to an account') : null;
  const connection = await loadConnection(ctx, connectionId);
  if (!connection) throw new NotFoundError('Connection');
  let testedById: string | null = null;
  if (link && connection.organizationId)
    throw new ValidationError('Only a platform-wide sign-in is connected to an account', [
      { path: 'link', message: 'is for platform-wide connections' },
    ]);
  if (test) {
    if (connection.organizationId) await requireOrgRole(ctx, connection.organizationId, 'admin', 'Connection');
    else await requirePlatformAdmin(ctx);
    testedById = requireUserId(ctx);
  } else if (!connection.enabled) {
    throw new SsoSignInError('disabled', `Sign-in with ${connection.name} is switched off`);
  }
  const state = randomToken('', 32);
  const browserToken = randomToken(BROWSER_TOKEN_PREFIX);
  const protocol = await protocolOf(connection.type);
  const departure = await protocol.depart(ctx, connection, state, {
    loginHint: loginHint ?? undefined,
  });
  const now = ctx.clock.now();
  const expiresAt = addSeconds(now, SSO_REQUEST_TTL_SECONDS);
  await ctx.db.ssoRequest.create({
    data: {
      id: state,
      connectionId,
      browserHash: sha256(browserToken),
      codeVerifier: departure.codeVerifier,
      nonce: departure.nonce,
      samlRequestId: departure.samlRequestId,
      returnTo,
      testedById,
      linkUserId,
      expiresAt,
      createdAt: now,
    },
  });
  return { url: departure.url, browserToken, expiresAt };
}

/** A SAML connection's service provider metadata (XML); null for another kind of connection or an unknown id. */
export async function samlMetadata(ctx: Context, connectionId: string): Promise<string | null> {
  const connection = await loadConnection(ctx, connectionId);
  return connection?.type === 'saml' ? (await samlModule()).serviceProviderMetadata(ctx, connection) : null;
}

const completeInput = z
  .object({
    connectionId: fields.id,
    state: z.string().max(200).optional().nullable(),
    browserToken: z.string().max(200).optional().nullable(),
    callbackUrl: z.string().max(20_000).optional().nullable(),
    samlResponse: z.string().max(1_000_000).optional().nullable(),
  })
  .strict();

export type SsoOutcome =
  | { kind: 'signedIn'; login: LoginResult; returnTo: string | null }
  | { kind: 'tested'; resultId: string }
  | { kind: 'linked'; connectionName: string };

/**
 * The browser is back from the identity provider. The request is used up first (one use, whatever follows), then
 * the protocol validates the answer, then the person is signed in. OpenID Connect and GitHub answers must come to
 * the browser that left (its cookie); a SAML answer is a cross-site POST that carries no Lax cookie, so it is
 * bound by its single-use RelayState and the AuthnRequest id it answers instead.
 */
export async function completeSsoSignIn(ctx: Context, input: unknown): Promise<SsoOutcome> {
  const data = parseInput(completeInput, input);
  const request = data.state ? await claimRequest(ctx, data.connectionId, data.state) : null;
  if (!request)
    throw new SsoSignInError('expired_request', 'This sign-in has expired or was already used: start again');
  const connection = await loadConnection(ctx, data.connectionId);
  if (!connection)
    throw new SsoSignInError('expired_request', 'This sign-in has expired or was already used: start again');
  if (connection.type !== 'saml' && (!data.browserToken || sha256(data.browserToken) !== request.browserHash)) {
    throw new SsoSignInError('wrong_browser', 'This sign-in was started in another browser: start again here');
  }
  const purpose = request.testedById ? 'test' : request.linkUserId ? 'link' : null;
  try {
    if (!connection.enabled && !request.testedById)
      throw new SsoSignInError('disabled', `Sign-in with ${connection.name} is switched off`);
    const protocol = await protocolOf(connection.type);
    const profile = await protocol.arrive(ctx, connection, request, {
      callbackUrl: data.callbackUrl ?? undefined,
      samlResponse: data.samlResponse ?? undefined,
    });
    if (request.testedById)
      return { kind: 'tested', resultId: await keepTestResult(ctx, connection, request.testedById, profile) };
    if (request.linkUserId) return await linkIdentity(ctx, connection, request.linkUserId, profile);
    const login = await signInAs(ctx, connection, profile);
    ctx.metrics.signIn('success', 'sso');
    return { kind: 'signedIn', login, returnTo: request.returnTo };
  } catch (error) {
    // An admin's test or a person connecting a provider is not a sign-in; a refused sign-in is counted as one.
    if (!purpose && error instanceof SsoSignInError) ctx.metrics.signIn('failure', 'sso');
    throw purpose && error instanceof SsoSignInError ? error.for(purpose) : error;
  }
}

/** Uses the request up: of two callbacks with the same state, one finds it. */
type ClaimedRequest = SsoRequestState & { browserHash: string | null; linkUserId: string | null };

async function claimRequest(ctx: Context, connectionId: string, state: string): Promise<ClaimedRequest | null> {
  const [row] = await ctx.db.$queryRaw<(ClaimedRequest & { expiresAt: Date })[]>`
    delete from sso_requests where id = ${state} and connection_id = ${connectionId} and result is null
    returning id, browser_hash as "browserHash", code_verifier as "codeVerifier", nonce, saml_request_id as "samlRequestId",
              return_to as "returnTo", tested_by_id as "testedById", link_user_id as "linkUserId", expires_at as "expiresAt"`;
  return row && row.expiresAt > ctx.clock.now() ? row : null;
}

interface TestResult {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  role: Role | null;
  claims: Record<string, unknown>;
}

/** What a test sign-in received, kept for the admin who made it to read for the request's lifetime. */
async function keepTestResult(
  ctx: Context,
  connection: LoadedConnection,
  testedById: string,
  profile: UpstreamProfile,
) {
  const now = ctx.clock.now();
  const id = randomToken('', 24);
  const result: TestResult = {
    subject: profile.subject,
    email: profile.email,
    emailVerified: profile.emailVerified,
    name: profile.name,
    role: connection.organizationId ? roleFrom(connection, profile) : null,
    claims: profile.claims,
  };
  await ctx.db.ssoRequest.create({
    data: {
      id,
      connectionId: connection.id,
      testedById,
      result: JSON.parse(JSON.stringify(result)) as Prisma.InputJsonValue,
      expiresAt: addSeconds(now, SSO_REQUEST_TTL_SECONDS),
      createdAt: now,
    },
  });
  await recordAudit(ctx, {
    action: 'sso_connection.test',
    organizationId: connection.organizationId,
    actorId: testedById,
    targetType: 'sso_connection',
    targetId: connection.id,
    details: { subject: profile.subject },
  });
  return id;
}

/**
 * Connects the provider's account to the person who started the link while signed in: they proved both. An
 * account of the provider already connected to someone else stays theirs.
 */
async function linkIdentity(
  ctx: Context,
  connection: LoadedConnection,
  userId: string,
  profile: UpstreamProfile,
): Promise<SsoOutcome> {
  const now = ctx.clock.now();
  const linked = await ctx.db.$queryRaw<{ userId: string }[]>`
    insert into sso_identities (id, connection_id, subject, user_id, created_at, last_sign_in_at)
    values (${uuidv7(now.getTime())}, ${connection.id}, ${profile.subject}, ${userId}, ${now}, ${now})
    on conflict (connection_id, subject) do update set last_sign_in_at = excluded.last_sign_in_at
      where sso_identities.user_id = excluded.user_id
    returning user_id as "userId"`;
  if (!linked.length)
    throw new SsoSignInError(
      'identity_in_use',
      `This ${connection.name} account is already connected to another Tessera account`,
    );
  await recordAudit(ctx, {
    action: 'sso.identity.link',
    actorId: userId,
    targetType: 'user',
    targetId: userId,
    details: { connectionId: connection.id, created: false },
  });
  return { kind: 'linked', connectionName: connection.name };
}

/** The providers connected to the caller's account. */
export async function myIdentities(ctx: Context) {
  const userId = requireUserId(ctx);
  return ctx.db.ssoIdentity.findMany({
    where: { userId, connection: { organizationId: null } },
    orderBy: { createdAt: 'asc' },
    select: {
      id: true,
      createdAt: true,
      lastSignInAt: true,
      connection: { select: { id: true, name: true, type: true } },
    },
  });
}

/** Disconnects a provider from the caller's account; their password, passkeys and other providers stay. */
export async function unlinkIdentity(ctx: Context, id: string) {
  const userId = requireUserId(ctx);
  const { count } = await ctx.db.ssoIdentity.deleteMany({
    where: { id: typeof id === 'string' ? id.slice(0, 100) : '', userId },
  });
  if (!count) throw new NotFoundError('Connected sign-in');
  await recordAudit(ctx, {
    action: 'sso.identity.unlink',
    actorId: userId,
    targetType: 'user',
    targetId: userId,
    details: { identityId: id },
  });
  return true;
}

/** A test sign-in's result, for the admin who made it. */
export async function ssoTestResult(ctx: Context, id: string) {
  const userId = requireUserId(ctx);
  if (!id || id.length > 200) throw new NotFoundError('Test result');
  const row = await ctx.db.ssoRequest.findFirst({
    where: { id, testedById: userId, expiresAt: { gt: ctx.clock.now() } },
    include: { connection: { select: { id: true, name: true, type: true } } },
  });
  if (!row?.result) throw new NotFoundError('Test result');
  return { id: row.id, connection: row.connection, ...(row.result as unknown as TestResult) };
}

/**
 * The role the identity provider gives: with role_claim, the highest role one of its values maps to (role_map, or a
 * value that is a role's name), else the connection's default role.
 */
export function roleFrom(
  connection: Pick<LoadedConnection, 'roleClaim' | 'roleMap' | 'defaultRole'>,
  profile: Pick<UpstreamProfile, 'roleValues'>,
): Role {
  if (!connection.roleClaim) return connection.defaultRole;
  const roles = profile.roleValues
    .map((v) => (connection.roleMap ? connection.roleMap[v] : ROLES.find((r) => r === v)))
    .filter((r): r is Role => !!r);
  return highestRole(roles) ?? connection.defaultRole;
}

const KNOWN_AMR: readonly AuthMethod[] = ['pwd', 'otp', 'hwk', 'swk', 'user', 'mfa'];

/**
 * Signs in the person the identity provider names. An organization's connection vouches for addresses of the
 * domains it serves (the organization proved them), so such an address is verified and an existing account with
 * it is linked (one whose address was never proven only once what its maker set up is gone: accounts/take-over.ts);
 * an address outside them is refused, so that one organization's IdP cannot sign in another's people.
 * A platform-wide connection links an existing account only once the address is proven by mail (account_exists).
 */
async function signInAs(ctx: Context, connection: LoadedConnection, profile: UpstreamProfile): Promise<LoginResult> {
  const email = profile.email?.trim().toLowerCase() ?? '';
  if (!email || !fields.email.safeParse(email).success) {
    throw new SsoSignInError('no_email', `${connection.name} did not give an e-mail address for this account`);
  }
  if (connection.organizationId ? !connection.domains.includes(domainOf(email)) : !profile.emailVerified) {
    throw connection.organizationId
      ? new SsoSignInError(
          'email_outside_domains',
          `${connection.name} signs in addresses of ${connection.domains.join(', ') || 'no domain yet'} only`,
        )
      : new SsoSignInError('unverified_email', `${connection.name} has not verified ${email}: verify it there first`);
  }
  // Before the transaction: nobody knows this password, the account signs in through its provider.
  const unusablePassword = await unusablePasswordHash();
  const amr = profile.amr.filter((m): m is AuthMethod => (KNOWN_AMR as readonly string[]).includes(m));
  const now = ctx.clock.now();
  const issued = await ctx.db.$transaction(async (tx) => {
    // The sign-in policy first (docs/architecture.md#single-sign-on): a platform-wide provider signs in no address
    // whose domain requires its own organization's connection, neither a new account nor one linked before.
    const admit = (address: string) =>
      admitSignIn(tx, address, { via: 'sso', connectionId: connection.id }).catch((error: unknown) => {
        throw error instanceof SsoRequiredError ? new SsoSignInError('sso_required', error.message) : error;
      });
    await admit(email);
    const user = await personFor(ctx, tx, connection, profile, email, unusablePassword);
    // A linked account may have another address than the provider gives now: its own decides too.
    if (user.email !== email) await admit(user.email);
    if (connection.organizationId) await joinOrFollow(ctx, tx, connection, connection.organizationId, profile, user);
    const session = await createSession(ctx, tx, user.id, user.sessionVersion, {
      organizationId: connection.organizationId ?? undefined,
      authTime: now,
      amr,
      connectionId: connection.id,
    });
    await recordAudit(
      ctx,
      {
        action: 'auth.login',
        actorId: user.id,
        targetType: 'user',
        targetId: user.id,
        organizationId: session.session.organizationId,
        details: { amr, via: 'sso', connectionId: connection.id },
      },
      tx,
    );
    return { session, userId: user.id };
  });
  return loginPayload(ctx.db, issued.session, issued.userId);
}

type Person = { id: string; email: string; name: string; sessionVersion: number; created: boolean };

/** The account behind the upstream identity: linked before, linked now, or created. */
async function personFor(
  ctx: Context,
  tx: Tx,
  connection: LoadedConnection,
  profile: UpstreamProfile,
  email: string,
  passwordHash: string,
): Promise<Person> {
  const now = ctx.clock.now();
  const linked = await tx.ssoIdentity.findUnique({
    where: { connectionId_subject: { connectionId: connection.id, subject: profile.subject } },
    select: { id: true, user: { select: { id: true, email: true, name: true, sessionVersion: true } } },
  });
  if (linked) {
    await tx.ssoIdentity.update({ where: { id: linked.id }, data: { lastSignInAt: now } });
    return { ...linked.user, created: false };
  }
  const found = await tx.user.findUnique({
    where: { email },
    select: { id: true, email: true, name: true, sessionVersion: true, emailVerified: true },
  });
  if (found && !connection.organizationId) {
    throw new SsoSignInError(
      'account_exists',
      `An account with ${email} already exists: sign in to it, then connect ${connection.name} under Security`,
    );
  }
  // The connection vouches for the address, not for whoever made the account: an unproven one is taken over first.
  const existing =
    found && !found.emailVerified
      ? (
          await takeOverUnproven(ctx, tx, found.id, passwordHash, {
            via: 'sso',
            organizationId: connection.organizationId,
            connectionId: connection.id,
          })
        ).user
      : found;
  const user =
    existing ??
    (await tx.user.create({
      data: { email, emailVerified: true, name: (profile.name ?? '').slice(0, 200), passwordHash },
      select: { id: true, email: true, name: true, sessionVersion: true },
    }));
  await tx.ssoIdentity.create({
    data: {
      id: uuidv7(now.getTime()),
      connectionId: connection.id,
      subject: profile.subject,
      userId: user.id,
      createdAt: now,
      lastSignInAt: now,
    },
  });
  await recordAudit(
    ctx,
    {
      action: 'sso.identity.link',
      organizationId: connection.organizationId,
      actorId: user.id,
      targetType: 'user',
      targetId: user.id,
      details: { connectionId: connection.id, created: !existing },
    },
    tx,
  );
  return { ...user, created: !existing };
}

/**
 * The first sign-in joins the organization with the role the provider gives and, when the connection says, a seat
 * (never beyond the subscription's seats: without one the person is still signed in, and the audit log says why);
 * later ones apply the provider's role again when the connection maps one.
 */
async function joinOrFollow(
  ctx: Context,
  tx: Tx,
  connection: LoadedConnection,
  organizationId: string,
  profile: UpstreamProfile,
  user: Person,
) {
  const role = roleFrom(connection, profile);
  const member = await tx.membership.findUnique({
    where: { userId_organizationId: { userId: user.id, organizationId } },
    select: { id: true },
  });
  if (member) {
    if (connection.roleClaim) await applyRoleFromUpstream(ctx, tx, organizationId, user.id, role, 'sso');
    return;
  }
  const organization = await tx.organization.findUniqueOrThrow({
    where: { id: organizationId },
    select: { id: true, name: true },
  });
  await admitMember(ctx, tx, organization, user.id, role, {
    via: 'sso',
    connectionId: connection.id,
    created: user.created,
  });
  if (!connection.seatSubscriptionId) return;
  const seat = { organizationId, subscriptionId: connection.seatSubscriptionId, userId: user.id };
  // A refusal here is a row count or a status read, no failed statement: the transaction goes on.
  try {
    await takeSeat(ctx, tx, seat, 'sso');
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    await recordAudit(
      ctx,
      {
        action: 'subscription.seat.assign',
        outcome: 'failure',
        organizationId,
        targetType: 'subscription',
        targetId: seat.subscriptionId,
        details: {
          userId: user.id,
          via: 'sso',
          connectionId: connection.id,
          reason: error.code,
          message: error.message,
        },
      },
      tx,
    );
  }
}
