// A person's second factors (docs/architecture.md#second-factors): an authenticator app (TOTP, RFC 6238) with its
// recovery codes, seen beside their passkeys; an owner's reset of a member's factors. Setting up the first factor
// emits 2fa.enabled, removing the last 2fa.disabled; each change is audited and mailed to the person.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { isPlatformAdmin, requireOrgRole } from '../../auth/access.ts';
import { AccountNotManagedError } from '../../auth/access.errors.ts';
import { manages } from '../../auth/managed.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { NotFoundError } from '../../errors/index.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { seal, unseal } from '../../lib/sealed.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { SessionRequiredError } from '../sessions/sessions.errors.ts';
import {
  admitPasswordAttempt,
  checkAccountPassword,
  passwordAccepted,
  passwordRejected,
} from '../auth/throttle.service.ts';
import { queueMail } from '../mail/outbox.ts';
import {
  FactorRequiredError,
  FreshProofRequiredError,
  InvalidCodeError,
  NoPendingTotpError,
  NoSecondFactorError,
  TotpAlreadyEnabledError,
} from './mfa.errors.ts';
import { newRecoveryCodes } from './recovery-codes.ts';
import { matchingStep, newTotpSecret, totpEnrolment } from './totp.ts';
import { expected } from '../../lib/expected.ts';

type Tx = Prisma.TransactionClient;

export interface MfaStatus {
  totp: boolean;
  /** An authenticator app set up but not yet confirmed with a code. */
  totpPending: boolean;
  passkeys: number;
  recoveryCodesLeft: number;
}

/** The person behind a session: only a first-party session sets up or removes a factor, never a key or a token. */
function sessionPerson(ctx: Context): { userId: string; sessionId: string } {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new SessionRequiredError('Managing second factors');
  return actor;
}

async function statusOf(db: Pick<Tx, '$queryRaw'>, userId: string): Promise<MfaStatus> {
  const [row] = await db.$queryRaw<{ confirmed: boolean | null; passkeys: number; left: number }[]>`
    select (select confirmed_at is not null from totp_factors where user_id = ${userId}) as confirmed,
           (select count(*)::int from passkeys where user_id = ${userId}) as passkeys,
           (select count(*)::int from recovery_codes where user_id = ${userId} and used_at is null) as left`;
  const { confirmed, passkeys, left } = expected(row, 'the factor counts');
  return { totp: confirmed === true, totpPending: confirmed === false, passkeys, recoveryCodesLeft: left };
}

export async function myMfa(ctx: Context): Promise<MfaStatus> {
  return statusOf(ctx.db, sessionPerson(ctx).userId);
}

/** What the person sets up in their app: the secret, as text, URL and QR code. */
export interface TotpEnrolment {
  secret: string;
  otpauthUrl: string;
  qrSvg: string;
}

/**
 * Starts (or restarts) setting up an authenticator app: a new secret, pending until confirmTotp. As the first
 * factor it needs a fresh proof: a session alone (a stolen one) must not make itself a second factor, whose sign-ins
 * would then say acr mfa. Asked here, where the secret is shown; a confirmation needs the pending secret.
 */
export async function enrollTotp(ctx: Context, input: unknown = {}): Promise<TotpEnrolment> {
  const { userId } = sessionPerson(ctx);
  const proof = proofOf(input);
  const user = await ctx.db.user.findUniqueOrThrow({
    where: { id: userId },
    select: { email: true, totpFactor: { select: { confirmedAt: true } } },
  });
  if (user.totpFactor?.confirmedAt) throw new TotpAlreadyEnabledError();
  if ((await statusOf(ctx.db, userId)).passkeys === 0) await requireFreshProof(ctx, userId, proof);
  const secret = newTotpSecret();
  const secretEncrypted = await seal(secret, ctx.settings.secretKey);
  const now = ctx.clock.now();
  // A confirmed factor is never replaced here, even by a request racing another's confirmation.
  const written = await ctx.db.$executeRaw`
    insert into totp_factors (user_id, secret_encrypted, created_at) values (${userId}, ${secretEncrypted}, ${now}::timestamp)
    on conflict (user_id) do update set secret_encrypted = excluded.secret_encrypted, created_at = excluded.created_at, last_used_step = 0
    where totp_factors.confirmed_at is null`;
  if (written === 0) throw new TotpAlreadyEnabledError();
  return { secret, ...(await totpEnrolment(secret, new URL(ctx.settings.issuer()).host, user.email)) };
}

const codeInput = z.object({ code: z.string().trim().min(1, 'is required').max(64) });

/** The TOTP secret of `userId` and whether it is confirmed, or null. */
async function totpOf(ctx: Context, userId: string): Promise<{ secret: string; confirmed: boolean } | null> {
  const factor = await ctx.db.totpFactor.findUnique({
    where: { userId },
    select: { secretEncrypted: true, confirmedAt: true },
  });
  return factor
    ? { secret: await unseal(factor.secretEncrypted, ctx.settings.secretKey), confirmed: !!factor.confirmedAt }
    : null;
}

/**
 * Takes the step of a right code for the factor, in `tx`: true only if no code of that step or a later one was
 * accepted before (a code works once, RFC 6238 5.2), and `confirmed` says which factor, pending or set up.
 */
export async function takeTotpStep(
  tx: Pick<Tx, '$executeRaw'>,
  userId: string,
  step: number,
  confirmed: boolean,
): Promise<boolean> {
  const taken = await tx.$executeRaw`
    update totp_factors set last_used_step = ${step}
    where user_id = ${userId} and last_used_step < ${step} and (confirmed_at is not null) = ${confirmed}`;
  return taken === 1;
}

/** Whether the person has another second factor than the one being removed (passkeys count). */
const otherFactors = async (tx: Tx, userId: string, besides: 'totp' | 'passkeys') =>
  besides === 'totp'
    ? (await tx.passkey.count({ where: { userId } })) > 0
    : !!(await tx.totpFactor.findFirst({ where: { userId, confirmedAt: { not: null } } }));

/** The event (first factor set up, last removed) and the mail that follow a change of a person's factors, in its transaction. */
export async function announceFactorChange(
  ctx: Context,
  tx: Tx,
  userId: string,
  change: string,
  event: '2fa.enabled' | '2fa.disabled' | null,
): Promise<void> {
  const now = ctx.clock.now();
  const user = await tx.user.findUniqueOrThrow({
    where: { id: userId },
    select: { id: true, email: true, name: true, emailVerified: true, createdAt: true },
  });
  if (event) await emitUserEvent(tx, event, userId, { user }, { at: now });
  await queueMail(
    tx,
    'second_factor_changed',
    user.email,
    { name: user.name, change, at: now, securityUrl: `${ctx.settings.issuer()}/portal/security` },
    now,
  );
}

/** Confirms the authenticator app with a first code: it is set up, and the person gets ten recovery codes. */
export async function confirmTotp(ctx: Context, input: unknown): Promise<{ codes: string[] }> {
  const { code } = parseInput(codeInput, input);
  const { userId, sessionId } = sessionPerson(ctx);
  const factor = await totpOf(ctx, userId);
  if (!factor || factor.confirmed) throw factor ? new TotpAlreadyEnabledError() : new NoPendingTotpError();
  const now = ctx.clock.now();
  const step = matchingStep(factor.secret, code, now);
  if (step === null) throw new InvalidCodeError();
  const recovery = newRecoveryCodes(userId, now);
  await ctx.db.$transaction(async (tx) => {
    if (!(await takeTotpStep(tx, userId, step, false))) throw new InvalidCodeError();
    await tx.totpFactor.update({ where: { userId }, data: { confirmedAt: now } });
    const first = !(await otherFactors(tx, userId, 'totp'));
    await recovery.replace(tx);
    // The session that proved the code has used a second factor (docs/architecture.md#second-factors).
    await tx.$executeRaw`
      update sessions set amr = array(select distinct unnest(amr || array['otp', 'mfa']::text[])) where id = ${sessionId}`;
    await recordAudit(ctx, { action: 'mfa.totp.enable', targetType: 'user', targetId: userId }, tx);
    await announceFactorChange(
      ctx,
      tx,
      userId,
      'an authenticator app was set up as a second factor.',
      first ? '2fa.enabled' : null,
    );
  });
  return { codes: recovery.codes };
}

const proofInput = z.object({
  password: z.string().max(256).optional().nullable(),
  code: z.string().trim().max(64).optional().nullable(),
});

type Proof = z.output<typeof proofInput>;

/** The proof as given (a password, a code, or neither), read before anything else is looked at. */
export function proofOf(input: unknown): Proof {
  return parseInput(proofInput, input ?? {});
}

/** How recent a sign-in through an identity provider stands in for the password (see requireFreshProof). */
export const RECENT_SIGN_IN_SECONDS = 5 * 60;

/**
 * Whether the caller's session was signed in less than RECENT_SIGN_IN_SECONDS ago and its person has an identity of a
 * connection: such an account may have no password anyone knows (a connection makes its accounts so), and signing in
 * again through the provider is then the fresh proof.
 */
async function signedInRecentlyThroughProvider(ctx: Context, userId: string): Promise<boolean> {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') return false;
  const since = new Date(ctx.clock.now().getTime() - RECENT_SIGN_IN_SECONDS * 1000);
  // The session itself must come from the provider: a recent password sign-in of a person who also has a linked
  // identity proves nothing fresher than the session that stole it.
  return (
    (await ctx.db.session.count({
      where: { id: actor.sessionId, userId, connectionId: { not: null }, authTime: { gt: since } },
    })) > 0
  );
}

/**
 * A fresh proof for a change at the account's level (docs/architecture.md#second-factors): removing a factor, new
 * recovery codes, setting up a first factor, deleting the account. The password (counted against the sign-in
 * throttle) or a code of the authenticator app (used up, like at sign-in); for an account that signs in through an
 * identity provider, also a sign-in of the last RECENT_SIGN_IN_SECONDS. Neither: 400 with `password` named.
 */
export async function requireFreshProof(ctx: Context, userId: string, { password, code }: Proof): Promise<void> {
  if (!password && !code) {
    if (await signedInRecentlyThroughProvider(ctx, userId)) return;
    throw new FreshProofRequiredError();
  }
  if (password) {
    const account = await ctx.db.user.findUniqueOrThrow({
      where: { id: userId },
      select: { email: true, passwordHash: true },
    });
    if (!(await checkAccountPassword(ctx, account, password))) throw new InvalidCodeError('password');
    return;
  }
  if (!code) throw new FreshProofRequiredError();
  // Counted like a code at sign-in: a session alone must not guess its way to removing the factor.
  const { email } = await ctx.db.user.findUniqueOrThrow({ where: { id: userId }, select: { email: true } });
  await admitPasswordAttempt(ctx, email);
  const factor = await totpOf(ctx, userId);
  const step = factor?.confirmed ? matchingStep(factor.secret, code, ctx.clock.now()) : null;
  if (step === null || !(await takeTotpStep(ctx.db, userId, step, true))) {
    await passwordRejected(ctx, email);
    throw new InvalidCodeError();
  }
  await passwordAccepted(ctx, email);
}

/** Removes the authenticator app; with no passkey left, the recovery codes go too and 2fa.disabled is emitted. */
export async function removeTotp(ctx: Context, input: unknown): Promise<MfaStatus> {
  const { userId } = sessionPerson(ctx);
  await requireFreshProof(ctx, userId, proofOf(input));
  return ctx.db.$transaction(async (tx) => {
    const [removed] = await tx.$queryRaw<{ confirmed: boolean }[]>`
      delete from totp_factors where user_id = ${userId} returning confirmed_at is not null as confirmed`;
    if (removed?.confirmed) {
      const last = !(await otherFactors(tx, userId, 'totp'));
      if (last) await keepRequiredFactor(tx, userId);
      if (last) await tx.recoveryCode.deleteMany({ where: { userId } });
      await recordAudit(ctx, { action: 'mfa.totp.remove', targetType: 'user', targetId: userId }, tx);
      await announceFactorChange(
        ctx,
        tx,
        userId,
        'the authenticator app was removed from your second factors.',
        last ? '2fa.disabled' : null,
      );
    }
    return statusOf(tx, userId);
  });
}

/**
 * Refuses to remove the last factor of a member of an organization that requires one: they would be shut out of
 * it, and an owner could no longer even turn the requirement off. An owner's reset of a member stays possible.
 */
export async function keepRequiredFactor(tx: Pick<Tx, 'organization'>, userId: string): Promise<void> {
  const requiring = await tx.organization.findFirst({
    where: { requireMfa: true, memberships: { some: { userId } } },
    select: { name: true },
  });
  if (requiring) throw new FactorRequiredError(requiring.name);
}

/** A new set of ten recovery codes; the old ones stop working. */
export async function regenerateRecoveryCodes(ctx: Context, input: unknown): Promise<{ codes: string[] }> {
  const { userId } = sessionPerson(ctx);
  const proof = proofOf(input);
  // No proof at all is refused before anything else is looked at; a proof given is checked once there is a factor.
  const given = !!proof.password || !!proof.code;
  if (!given) await requireFreshProof(ctx, userId, proof);
  const status = await statusOf(ctx.db, userId);
  if (!status.totp && !status.passkeys) throw new NoSecondFactorError();
  if (given) await requireFreshProof(ctx, userId, proof);
  const recovery = newRecoveryCodes(userId, ctx.clock.now());
  await ctx.db.$transaction(async (tx) => {
    await recovery.replace(tx);
    await recordAudit(ctx, { action: 'mfa.recovery_codes.regenerate', targetType: 'user', targetId: userId }, tx);
    await announceFactorChange(
      ctx,
      tx,
      userId,
      'a new set of recovery codes was made; the old ones no longer work.',
      null,
    );
  });
  return { codes: recovery.codes };
}

const memberInput = z.object({ organizationId: fields.id, userId: fields.id });

/**
 * An owner resets a member's second factors (a lost phone): the app, the passkeys and the recovery codes go, the
 * member is mailed, and signs in with the password alone until they set one up again. The factors are the
 * account's, not the membership's: only the organization that manages the account resets them, or a platform admin
 * helping (docs/architecture.md#managed-accounts); anyone else's member uses a recovery code.
 */
export async function resetMemberMfa(ctx: Context, input: unknown): Promise<MfaStatus> {
  const { organizationId, userId } = parseInput(memberInput, input);
  await requireOrgRole(ctx, organizationId, 'owner', 'Organization');
  const member = await ctx.db.membership.findUnique({
    where: { userId_organizationId: { userId, organizationId } },
    select: { user: { select: { email: true } } },
  });
  if (!member) throw new NotFoundError('Member');
  if (!(await isPlatformAdmin(ctx)) && !(await manages(ctx.db, organizationId, member.user.email)))
    throw new AccountNotManagedError("reset this person's second factors");
  return ctx.db.$transaction(async (tx) => {
    const [totp] = await tx.$queryRaw<{ confirmed: boolean }[]>`
      delete from totp_factors where user_id = ${userId} returning confirmed_at is not null as confirmed`;
    const passkeys = await tx.passkey.deleteMany({ where: { userId } });
    await tx.recoveryCode.deleteMany({ where: { userId } });
    const had = !!totp?.confirmed || passkeys.count > 0;
    await recordAudit(
      ctx,
      {
        action: 'member.mfa.reset',
        organizationId,
        targetType: 'user',
        targetId: userId,
        details: { totp: !!totp?.confirmed, passkeys: passkeys.count },
      },
      tx,
    );
    if (had)
      await announceFactorChange(
        ctx,
        tx,
        userId,
        'an owner of your organization reset your second factors. Set one up again.',
        '2fa.disabled',
      );
    return statusOf(tx, userId);
  });
}
