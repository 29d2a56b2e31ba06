// Invitations: an admin invites an e-mail address with a role, and whoever holds a link joins within 7 days. There
// are two links (docs/architecture.md#invitations): the one mailed to the address, which proves it, and one shown
// to the admin once to pass on, which joins but proves nothing (whoever invites could accept it themselves).
// Resending mails a new link, shows a new one, and voids both old ones. For an address that has an account,
// accepting is signing in to it: inside its session, or with its password under login's every rule.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import {
  AlreadyMemberError,
  InvalidInvitationError,
  InvitationNotPendingError,
  InviteeNotProvenError,
  NewAccountFieldsError,
  RoleAboveYoursError,
} from './members.errors.ts';
import { requireActor, requireOrgRole } from '../../auth/access.ts';
import { roleAtLeast } from '../../auth/roles.ts';
import { addSeconds } from '../../lib/clock.ts';
import { hashPassword, randomToken, sha256 } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvent, emitEvents, emitUserEvent } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { createSession, type AuthMethod, type IssuedSession } from '../sessions/sessions.service.ts';
import { login, loginPayload, type LoginResult, type MfaChallenge } from '../auth/auth.service.ts';
import { admitSignIn } from '../auth/sign-in-policy.ts';
import { mailVerificationLink } from '../accounts/accounts.service.ts';
import { countRequest } from '../../limits/request-throttle.ts';
import { queueMail } from '../mail/outbox.ts';

export const INVITATION_TTL_SECONDS = 7 * 24 * 3600;
const TOKEN_PREFIX = 'tsi_';

export type InvitationStatus = 'pending' | 'accepted' | 'revoked' | 'expired';

export function invitationStatus(
  inv: { acceptedAt: Date | null; revokedAt: Date | null; expiresAt: Date },
  now: Date,
): InvitationStatus {
  if (inv.acceptedAt) return 'accepted';
  if (inv.revokedAt) return 'revoked';
  return inv.expiresAt <= now ? 'expired' : 'pending';
}

/**
 * Invitation mails, created or resent, that one organization may send one address in an hour (429 past it): its
 * admins cannot use the service to flood an inbox.
 */
const MAILS_PER_ADDRESS = { limit: 10, windowSeconds: 3600 } as const;
const countInvitationMail = (ctx: Context, organizationId: string, email: string) =>
  countRequest(
    ctx,
    [{ key: `invite:${organizationId}:${email}`, limit: MAILS_PER_ADDRESS.limit }],
    MAILS_PER_ADDRESS.windowSeconds,
  );

const acceptUrl = (ctx: Context, token: string) =>
  `${ctx.settings.issuer()}/invitations/accept?token=${encodeURIComponent(token)}`;

const createInput = z.object({ email: fields.email, role: fields.role.default('member') }).strict();

export async function createInvitation(ctx: Context, organizationId: string, input: unknown) {
  const callerRole = await requireOrgRole(ctx, organizationId, 'admin');
  const { email, role } = parseInput(createInput, input);
  if (!roleAtLeast(callerRole, role)) throw new RoleAboveYoursError('invite with');
  await countInvitationMail(ctx, organizationId, email);
  const { mailed, copy } = newLinks();
  const now = ctx.clock.now();
  const invitedById = inviterOf(ctx);
  const invitation = await ctx.db.$transaction(async (tx) => {
    // One invitation at a time per organization and address: the one that waited here sees the other's pending
    // invitation and replaces it, so that of concurrent invitations only the newest stays pending.
    await tx.$executeRaw`select pg_advisory_xact_lock(hashtextextended(${`invite:${organizationId}:${email}`}, 0))`;
    const member = await tx.membership.findFirst({ where: { organizationId, user: { email } } });
    if (member) throw new AlreadyMemberError();
    // A new invitation replaces a pending one for the same address.
    await tx.invitation.updateMany({
      where: { organizationId, email, acceptedAt: null, revokedAt: null, expiresAt: { gt: now } },
      data: { revokedAt: now },
    });
    const invitation = await tx.invitation.create({
      data: {
        organizationId,
        email,
        role,
        tokenHash: sha256(mailed),
        copyTokenHash: sha256(copy),
        createdAt: now,
        invitedById,
        expiresAt: addSeconds(now, INVITATION_TTL_SECONDS),
      },
      include: { organization: { select: { id: true, name: true } } },
    });
    await announce(ctx, tx, invitation, mailed);
    await recordAudit(
      ctx,
      {
        action: 'invitation.create',
        organizationId,
        targetType: 'invitation',
        targetId: invitation.id,
        details: { email, role },
      },
      tx,
    );
    return invitation;
  });
  return shown(ctx, invitation, copy);
}

/** A new invitation's two tokens: the mailed link's, and the one its inviter is shown (never the mailed one). */
const newLinks = () => ({ mailed: randomToken(TOKEN_PREFIX), copy: randomToken(TOKEN_PREFIX) });

/** What the inviter is answered: the invitation and the link to copy, which joins but proves no address. */
const shown = <T extends object>(ctx: Context, invitation: T, copy: string) => ({
  ...invitation,
  token: copy,
  acceptUrl: acceptUrl(ctx, copy),
});

/** Who invites: the person signed in, or the one who made the API key. */
const inviterOf = (ctx: Context) => {
  const actor = requireActor(ctx);
  return actor.kind === 'apiKey' ? actor.createdById : actor.userId;
};

type SentInvitation = {
  id: string;
  email: string;
  role: Role;
  invitedById: string | null;
  expiresAt: Date;
  organization: { id: string; name: string };
};

/** member.invitation.sent and the mail with the accept link, in the transaction that made the token. */
async function announce(ctx: Context, tx: Tx, invitation: SentInvitation, token: string) {
  const now = ctx.clock.now();
  const { id, email, role, invitedById, expiresAt } = invitation;
  await emitEvent(
    tx,
    'member.invitation.sent',
    invitation.organization,
    { invitation: { id, email, role, invitedBy: invitedById, expiresAt } },
    { at: now },
  );
  await queueMail(
    tx,
    'invitation',
    email,
    {
      organization: invitation.organization.name,
      inviter: await inviterName(tx, invitedById),
      role,
      url: acceptUrl(ctx, token),
      expiresAt,
    },
    now,
  );
}

/** How the mail and the accept page name who invited: their name, else their address; null once they are gone. */
async function inviterName(db: Tx | Context['db'], invitedById: string | null) {
  const inviter = invitedById
    ? await db.user.findUnique({ where: { id: invitedById }, select: { name: true, email: true } })
    : null;
  return inviter ? inviter.name || inviter.email : null;
}

/** Mails a pending invitation again with a new link, valid 7 days from now; the old link stops working. */
export async function resendInvitation(ctx: Context, organizationId: string, invitationId: string) {
  await requireOrgRole(ctx, organizationId, 'admin');
  const found = await ctx.db.invitation.findFirst({
    where: { id: invitationId, organizationId },
    select: { email: true },
  });
  if (!found) throw new NotFoundError('Invitation');
  await countInvitationMail(ctx, organizationId, found.email);
  const { mailed, copy } = newLinks();
  const now = ctx.clock.now();
  const invitation = await ctx.db.$transaction(async (tx) => {
    // Only while pending: of a resend racing an accept or a revoke, one wins.
    const renewed = await tx.invitation.updateMany({
      where: { id: invitationId, acceptedAt: null, revokedAt: null, expiresAt: { gt: now } },
      data: {
        tokenHash: sha256(mailed),
        copyTokenHash: sha256(copy),
        expiresAt: addSeconds(now, INVITATION_TTL_SECONDS),
      },
    });
    if (renewed.count !== 1) throw new InvitationNotPendingError('resent');
    const invitation = await tx.invitation.findUniqueOrThrow({
      where: { id: invitationId },
      include: { organization: { select: { id: true, name: true } } },
    });
    await announce(ctx, tx, invitation, mailed);
    await recordAudit(
      ctx,
      {
        action: 'invitation.resend',
        organizationId,
        targetType: 'invitation',
        targetId: invitationId,
        details: { email: invitation.email },
      },
      tx,
    );
    return invitation;
  });
  return shown(ctx, invitation, copy);
}

export async function listInvitations(ctx: Context, organizationId: string, page?: PageInput) {
  await requireOrgRole(ctx, organizationId, 'admin');
  const { limit, args } = paged(page, { organizationId });
  return toPage(await ctx.db.invitation.findMany(args), limit);
}

export async function revokeInvitation(ctx: Context, organizationId: string, invitationId: string) {
  await requireOrgRole(ctx, organizationId, 'admin');
  const invitation = await ctx.db.invitation.findFirst({ where: { id: invitationId, organizationId } });
  if (!invitation) throw new NotFoundError('Invitation');
  const now = ctx.clock.now();
  const revoked = await ctx.db.invitation.updateMany({
    where: { id: invitationId, acceptedAt: null, revokedAt: null, expiresAt: { gt: now } },
    data: { revokedAt: now },
  });
  if (revoked.count !== 1) throw new InvitationNotPendingError('revoked');
  await recordAudit(ctx, {
    action: 'invitation.revoke',
    organizationId,
    targetType: 'invitation',
    targetId: invitationId,
  });
  return { ...invitation, revokedAt: now };
}

/**
 * What the accept page shows before anything is typed: for a pending invitation, who invited which address to
 * which organization, with which role and until when, and whether that address has an account (to ask for its
 * password rather than a name and a new one). Whoever holds the link may read this, as they may accept it.
 * An invitation accepted, revoked or expired gives only its status; an unknown token (or one replaced by a
 * resend) gives null, so nothing is said of tokens that were never handed out.
 */
export async function previewInvitation(ctx: Context, token: string) {
  if (!token || token.length > 200) return null;
  const { invitation } = (await invitationOf(ctx.db, token)) ?? {};
  if (!invitation) return null;
  const status = invitationStatus(invitation, ctx.clock.now());
  if (status !== 'pending') return { status };
  const [inviter, account] = await Promise.all([
    inviterName(ctx.db, invitation.invitedById),
    ctx.db.user.findUnique({ where: { email: invitation.email }, select: { id: true } }),
  ]);
  return {
    status,
    organizationName: invitation.organization.name,
    inviterName: inviter,
    email: invitation.email,
    role: invitation.role,
    expiresAt: invitation.expiresAt,
    accountExists: !!account,
  };
}

/**
 * The invitation a link is for, and whether it is the mailed link (which proves the address) or the one the inviter
 * was shown. Either hash is unique; tokens are 256-bit random, so no token is both.
 */
async function invitationOf(db: Context['db'], token: string) {
  const hash = sha256(token);
  const invitation = await db.invitation.findFirst({
    where: { OR: [{ tokenHash: hash }, { copyTokenHash: hash }] },
    include: { organization: { select: { id: true, name: true } } },
  });
  return invitation && { invitation, hash, mailed: invitation.tokenHash === hash };
}

type FoundInvitation = NonNullable<Awaited<ReturnType<typeof invitationOf>>>;

const acceptInput = z
  .object({
    token: z.string().min(1, 'is required').max(200),
    name: fields.name.optional(),
    password: z.string().max(256).optional(),
  })
  .strict();

type Tx = Prisma.TransactionClient;

/**
 * A new account for the invited address needs a name and a password: checked, and the password hashed, before any
 * transaction opens. The sign-in policy is asked first (admitSignIn, the one rule of every way in): an address whose
 * domain must sign in through its identity provider gets no password; it signs in there (which makes the account),
 * then accepts signed in.
 */
async function newAccountFields(ctx: Context, email: string, name?: string, password?: string) {
  await admitSignIn(ctx.db, email, { via: 'invitation' });
  const checked = fields.password.safeParse(password);
  const problems = [
    ...(name ? [] : [{ path: 'name', message: 'is required to create the account' }]),
    ...(checked.success ? [] : [{ path: 'password', message: 'must be 12 to 256 characters' }]),
  ];
  if (!name || !checked.success) throw new NewAccountFieldsError(problems);
  return { name, passwordHash: await hashPassword(checked.data) };
}

/**
 * Accepting is signing in (docs/architecture.md#invitations). An address without an account gets one. An account
 * accepts inside its own session; or with its password, which is login itself (the throttle, require-SSO, and for
 * an account with a second factor an MfaChallenge and no session): the invitation stays pending until the person,
 * signed in with the factor, accepts in that session, so that a wrong or absent factor joins nothing. Each way
 * joins in the transaction that makes the session, so that a join that loses a race (an accept, a revoke, a
 * resend) makes no session either.
 */
export async function acceptInvitation(ctx: Context, input: unknown): Promise<LoginResult | MfaChallenge> {
  const { token, name, password } = parseInput(acceptInput, input);
  const found = await invitationOf(ctx.db, token);
  if (!found || invitationStatus(found.invitation, ctx.clock.now()) !== 'pending') throw new InvalidInvitationError();
  const { email, organizationId } = found.invitation;
  const existing = await ctx.db.user.findUnique({ where: { email }, select: { id: true } });
  if (!existing) {
    const create = await newAccountFields(ctx, email, name, password);
    return joinWithSession(ctx, found, { create }, (tx, user) =>
      createSession(ctx, tx, user.id, user.sessionVersion, { organizationId }),
    );
  }
  const actor = ctx.actor;
  if (actor?.kind === 'user' && actor.userId === existing.id) {
    // The session answered continues the current one: no fresher or stronger a sign-in than it (its time, methods,
    // connection), and it is a new session, so the sign-in policy is asked as for any other: a session from before
    // its domain required single sign-on mints no fresh one (docs/architecture.md#single-sign-on).
    return joinWithSession(ctx, found, { userId: existing.id }, async (tx, user) => {
      const current = await tx.session.findUniqueOrThrow({
        where: { id: actor.sessionId },
        select: { authTime: true, amr: true, connectionId: true },
      });
      await admitSignIn(
        tx,
        email,
        current.connectionId ? { via: 'sso', connectionId: current.connectionId } : { via: 'invitation' },
      );
      return createSession(ctx, tx, user.id, user.sessionVersion, {
        organizationId,
        authTime: current.authTime,
        amr: current.amr as AuthMethod[],
        connectionId: current.connectionId,
      });
    });
  }
  if (!password) throw new InviteeNotProvenError();
  return login(
    ctx,
    { email, password },
    { organizationId, use: async (tx) => void (await join(ctx, tx, found, { userId: existing.id })) },
  );
}

/** Who joins: a new account, or an existing one (signed in, or signing in with its password). */
type Joiner = { create: { name: string; passwordHash: string } } | { userId: string };

/** Joins, and opens the person's session in the organization, in one transaction; the session's login payload. */
function joinWithSession(
  ctx: Context,
  found: FoundInvitation,
  joiner: Joiner,
  open: (tx: Tx, user: { id: string; sessionVersion: number }) => Promise<IssuedSession>,
): Promise<LoginResult> {
  return ctx.db.$transaction(async (tx) => {
    const user = await join(ctx, tx, found, joiner);
    return loginPayload(tx, await open(tx, user), user.id);
  });
}

/** In `tx`: claims the invitation, makes or proves the account, and makes the membership, with events and audit. */
async function join(ctx: Context, tx: Tx, { invitation, hash, mailed }: FoundInvitation, joiner: Joiner) {
  const now = ctx.clock.now();
  const org = invitation.organization;
  const at = { at: now };
  // Claim it while it is still pending and still this link's: of two accepts, or an accept and a revoke or a
  // resend (which replaces both links), racing, one wins.
  const claimed = await tx.invitation.updateMany({
    where: {
      id: invitation.id,
      ...(mailed ? { tokenHash: hash } : { copyTokenHash: hash }),
      acceptedAt: null,
      revokedAt: null,
      expiresAt: { gt: now },
    },
    data: { acceptedAt: now },
  });
  if (claimed.count !== 1) throw new InvalidInvitationError();
  const user =
    'create' in joiner
      ? await tx.user
          .create({ data: { email: invitation.email, ...joiner.create, emailVerified: mailed } })
          .catch((error: unknown) => {
            // Another organization's invitation, accepted at the same time, made the account: it accepts as any account does.
            throw isUniqueViolation(error) ? new InviteeNotProvenError() : error;
          })
      : await proveAddress(ctx, tx, joiner.userId, invitation.email, mailed);
  const already = await tx.membership.findUnique({
    where: { userId_organizationId: { userId: user.id, organizationId: org.id } },
  });
  if (!already)
    await tx.membership.create({ data: { userId: user.id, organizationId: org.id, role: invitation.role } });
  // Once the account belongs to the organization, so that the organization that invited hears of it.
  if ('create' in joiner) {
    await emitUserEvent(tx, 'user.created', user.id, { user }, at);
    // The link passed on by the inviter reached someone, not necessarily the address: it is asked to prove itself.
    if (!mailed) await mailVerificationLink(ctx, tx, user);
  }
  await emitEvent(
    tx,
    'member.invitation.accepted',
    org,
    {
      invitation: {
        id: invitation.id,
        email: invitation.email,
        role: invitation.role,
        invitedBy: invitation.invitedById,
      },
      user,
      organization: org,
    },
    at,
  );
  if (!already)
    await emitEvents(
      tx,
      ['member.added', 'organization.member.added'],
      org,
      { organization: org, user, role: invitation.role },
      at,
    );
  await recordAudit(
    ctx,
    {
      action: 'invitation.accept',
      organizationId: org.id,
      actorId: user.id,
      targetType: 'invitation',
      targetId: invitation.id,
      details: { mailed },
    },
    tx,
  );
  return user;
}

/**
 * The existing account that joins; the mailed link, used by the account itself, proves an address not yet proven
 * (the address it was sent to, if the account still has it).
 */
async function proveAddress(ctx: Context, tx: Tx, userId: string, email: string, mailed: boolean) {
  const user = await tx.user.findUniqueOrThrow({ where: { id: userId } });
  if (!mailed || user.emailVerified || user.email !== email) return user;
  const verified = await tx.user.update({ where: { id: userId }, data: { emailVerified: true } });
  await emitUserEvent(tx, 'user.email.verified', userId, { user: verified }, { at: ctx.clock.now() });
  await recordAudit(
    ctx,
    {
      action: 'user.email.verify',
      actorId: userId,
      targetType: 'user',
      targetId: userId,
      details: { by: 'invitation' },
    },
    tx,
  );
  return verified;
}

/**
 * Announces invitations that have run out (member.invitation.expired), each once: the worker calls this on a
 * schedule. Claiming and emitting happen in one transaction, so a crash announces nothing twice or never.
 */
export async function announceExpiredInvitations(db: Context['db'], now: Date): Promise<number> {
  return db.$transaction(async (tx) => {
    const expired = await tx.$queryRaw<
      {
        id: string;
        organization_id: string;
        email: string;
        role: string;
        invited_by_id: string | null;
        expires_at: Date;
      }[]
    >`
      update invitations set expiry_announced_at = ${now}
      where id in (
        select id from invitations
        where expires_at <= ${now} and accepted_at is null and revoked_at is null and expiry_announced_at is null
        order by expires_at limit 500 for update skip locked)
      returning id, organization_id, email, role, invited_by_id, expires_at`;
    for (const inv of expired) {
      const org = await tx.organization.findUniqueOrThrow({
        where: { id: inv.organization_id },
        select: { id: true, name: true },
      });
      await emitEvent(
        tx,
        'member.invitation.expired',
        org,
        {
          invitation: {
            id: inv.id,
            email: inv.email,
            role: inv.role,
            invitedBy: inv.invited_by_id,
            expiresAt: inv.expires_at,
          },
        },
        { at: now },
      );
    }
    return expired.length;
  });
}
