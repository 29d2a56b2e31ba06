// Accounts that look after themselves, by mailed links (docs/architecture.md#mail).
//
// Password reset: asking answers the same for known and unknown addresses and does the same database work for both:
// after the throttle, one job (password_reset_mail) carrying the address, whose run looks the address up and writes
// the token and its mail only where an account uses it. Neither the answer nor its timing tells whether an account
// exists. Confirming sets the password and bumps the session version: every session, access token and refresh token
// of the person ends.
//
// Proving an address: a mailed link verifies the current address, or makes a new one the account's address. A
// changed address takes effect only once the new one is proven, and the old one is told.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, Prisma, type Db } from '../../db.ts';
import type { Clock } from '../../lib/clock.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { NotFoundError } from '../../errors/index.ts';
import { requirePlatformAdmin, requireUserId } from '../../auth/access.ts';
import { hashPassword } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { countRequest } from '../../limits/request-throttle.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { takeOverUnproven } from './take-over.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { forgetFailedSignIns } from '../auth/throttle.service.ts';
import { queueMail, queueMailSql } from '../mail/outbox.ts';
import { AlreadyVerifiedError, EmailTakenError, InvalidLinkError } from './accounts.errors.ts';
import {
  claimLinkToken,
  findLiveLinkToken,
  issuingLock,
  LINK_TOKEN_PURPOSES,
  newLinkToken,
  userIdQuery,
  type LinkPurpose,
} from './link-tokens.ts';
import { forgotPasswordUrl, resetPasswordUrl, verifyEmailUrl } from './links.ts';

/** The window of the mail throttles below: an hour. */
const WINDOW_SECONDS = 3600;

// ---- password reset -------------------------------------------------------------------------------------------------

/** Reset mails one address may be sent, and one client address may ask for, in an hour. */
const LIMITS = { address: 5, client: 20 } as const;

/** The job that answers a reset request: it writes the link and its mail if an account uses the address. */
export const PASSWORD_RESET_TASK = 'password_reset_mail';

export interface ResetRequestJob {
  email: string;
  /** Chosen when the request is taken, so that a job run again after a crash writes no second mail. */
  mailId: string;
}

export function assertResetRequestJob(payload: unknown): ResetRequestJob {
  const p = payload as Partial<ResetRequestJob> | null;
  if (typeof p?.email !== 'string' || typeof p.mailId !== 'string')
    throw new Error(`${PASSWORD_RESET_TASK}: payload must be {email, mailId}`);
  return { email: p.email, mailId: p.mailId };
}

/** What writing a reset link needs: the request's context has it, and so has the worker. */
interface LinkDeps {
  db: Pick<Db, '$executeRaw' | '$transaction'>;
  clock: Clock;
  issuer: () => string;
}

const linkDepsOf = (ctx: Context): LinkDeps => ({ db: ctx.db, clock: ctx.clock, issuer: () => ctx.settings.issuer() });

/** Writes a reset token and its mail for the account `account` (a query giving its id), if it gives one; one issuer at a time per address. */
async function mailResetLink(deps: LinkDeps, account: Prisma.Sql, email: string, mailId?: string) {
  const now = deps.clock.now();
  const link = newLinkToken('password_reset', Prisma.sql`select id from account`, email, now);
  const mail = queueMailSql(
    'password_reset',
    email,
    { url: resetPasswordUrl(deps.issuer(), link.token), minutes: LINK_TOKEN_PURPOSES.password_reset.ttlSeconds / 60 },
    now,
    mailId,
  );
  await deps.db.$transaction([
    deps.db.$executeRaw`${issuingLock('password_reset', email)}`,
    deps.db.$executeRaw`with account as (${account}), ${link.ctes} select ${mail} from account`,
  ]);
}

const requestInput = z.object({ email: fields.email }).strict();

export async function requestPasswordReset(ctx: Context, input: unknown): Promise<true> {
  const { email } = parseInput(requestInput, input);
  const ip = ctx.request.ip;
  await countRequest(
    ctx,
    [
      { key: `reset:${email}`, limit: LIMITS.address },
      ...(ip ? [{ key: `reset-from:${ip}`, limit: LIMITS.client }] : []),
    ],
    WINDOW_SECONDS,
  );
  // The same one insert whether or not an account uses the address: the lookup, and the writes that follow only for
  // an account, happen in the job, after the answer has gone.
  const job: ResetRequestJob = { email, mailId: uuidv7() };
  await ctx.db
    .$executeRaw`select graphile_worker.add_job(${PASSWORD_RESET_TASK}::text, ${JSON.stringify(job)}::json, max_attempts := 5)`;
  return true;
}

/**
 * The job's work: the link and its mail for the account that uses the address, if one does. Once: the mail's id
 * came with the job, and a run after a crash that had committed it writes nothing.
 */
export async function mailRequestedResetLink(deps: LinkDeps, job: ResetRequestJob): Promise<void> {
  const account = Prisma.sql`select id from users where email = ${job.email} and not exists (select 1 from mails where id = ${job.mailId})`;
  await mailResetLink(deps, account, job.email, job.mailId);
}

/**
 * A platform admin sends a person a reset link; nobody sets another person's password. Not with an access token
 * (the field's firstParty gate): the link outlives the token (docs/architecture.md#authorization).
 */
export async function sendPasswordResetLink(ctx: Context, userId: string): Promise<true> {
  await requirePlatformAdmin(ctx);
  const user = await ctx.db.user.findUnique({ where: { id: userId }, select: { id: true, email: true } });
  if (!user) throw new NotFoundError('User');
  await mailResetLink(linkDepsOf(ctx), userIdQuery(user.id), user.email);
  await recordAudit(ctx, { action: 'user.password_reset.send', targetType: 'user', targetId: user.id });
  return true;
}

const confirmInput = z.object({ token: z.string().min(1, 'is required').max(200), password: fields.password }).strict();

export async function confirmPasswordReset(ctx: Context, input: unknown): Promise<true> {
  const { token, password } = parseInput(confirmInput, input);
  const now = ctx.clock.now();
  // A bad link is refused before the password is hashed; the claim below decides between concurrent uses.
  if (!(await findLiveLinkToken(ctx.db, token, ['password_reset'], now))) throw new InvalidLinkError('reset');
  const passwordHash = await hashPassword(password);
  const user = await ctx.db.$transaction(async (tx) => {
    const claimed = await claimLinkToken(tx, token, ['password_reset'], now);
    const before = claimed && (await tx.user.findUnique({ where: { id: claimed.userId } }));
    // A link mailed to an address the account no longer uses is void.
    if (!claimed || !before || before.email !== claimed.email) throw new InvalidLinkError('reset');
    // The link reached the address, which proves it. An account whose address was never proven may have been made
    // by someone else (pre-hijacking): taking it over removes what they set up, sets the password and proves the
    // address, with the events a reset emits (take-over.ts).
    const takenOver =
      !before.emailVerified &&
      (await takeOverUnproven(ctx, tx, before.id, passwordHash, { via: 'password_reset' })).takenOver;
    const user = takenOver
      ? await tx.user.findUniqueOrThrow({ where: { id: before.id } })
      : await tx.user.update({
          where: { id: before.id },
          data: { passwordHash, sessionVersion: { increment: 1 }, emailVerified: true },
        });
    if (!takenOver) await emitUserEvent(tx, 'user.password.changed', user.id, { user }, { at: now });
    await recordAudit(
      ctx,
      { action: 'user.password.reset', actorId: user.id, targetType: 'user', targetId: user.id },
      tx,
    );
    await queueMail(
      tx,
      'password_changed',
      user.email,
      { name: user.name, at: now, forgotUrl: forgotPasswordUrl(ctx) },
      now,
    );
    return user;
  });
  // Whoever locked the account by guessing, its owner has just proven it: sign-in starts afresh.
  await forgetFailedSignIns(ctx, user.email);
  return true;
}

// ---- proving an address ---------------------------------------------------------------------------------------------

type Tx = Prisma.TransactionClient;
type Person = { id: string; name: string; email: string };

/** Verification and address-change mails one person may be sent in an hour. */
const RESEND_LIMIT = 5;
const HOURS = LINK_TOKEN_PURPOSES.email_verification.ttlSeconds / 3600;

/**
 * Counts a verification or address-change mail against the person's hourly limit (429 past it): neither asking again
 * nor asking for one new address after another can flood an inbox.
 */
export const countVerificationMail = (ctx: Context, userId: string) =>
  countRequest(ctx, [{ key: `verify:${userId}`, limit: RESEND_LIMIT }], WINDOW_SECONDS);

/** Mails `address` a link of `purpose` for `person`, voiding their older ones; in the caller's transaction. */
async function mailLink(
  ctx: Context,
  tx: Tx,
  purpose: 'email_verification' | 'email_change',
  person: Person,
  address: string,
) {
  const now = ctx.clock.now();
  const link = newLinkToken(purpose, userIdQuery(person.id), address, now);
  const mail = queueMailSql(
    purpose,
    address,
    { name: person.name, url: verifyEmailUrl(ctx, link.token), hours: HOURS },
    now,
  );
  await tx.$executeRaw`${issuingLock(purpose, person.id)}`;
  await tx.$executeRaw`with ${link.ctes} select ${mail}`;
}

/** A new account's address, to be proven. */
export const mailVerificationLink = (ctx: Context, tx: Tx, person: Person) =>
  mailLink(ctx, tx, 'email_verification', person, person.email);

/** The person no longer wants the new address it asked for (it asked for its current one again). */
export async function cancelEmailChange(tx: Pick<Tx, 'linkToken'>, userId: string, now: Date): Promise<void> {
  await tx.linkToken.updateMany({ where: { userId, purpose: 'email_change', endedAt: null }, data: { endedAt: now } });
}

/** The person asked to use `newEmail`: it takes effect once the link mailed there is used. */
export const mailEmailChangeLink = (ctx: Context, tx: Tx, person: Person, newEmail: string) =>
  mailLink(ctx, tx, 'email_change', person, newEmail);

/** The new address a person asked for and has not proven yet, if any. */
export async function pendingEmailOf(db: Pick<Tx, 'linkToken'>, userId: string, now: Date): Promise<string | null> {
  const pending = await db.linkToken.findFirst({
    where: { userId, purpose: 'email_change', endedAt: null, expiresAt: { gt: now } },
    orderBy: { createdAt: 'desc' },
    select: { email: true },
  });
  return pending?.email ?? null;
}

/** Mails the caller a new link: for the new address it asked for, else for its unverified address. */
export async function requestEmailVerification(ctx: Context): Promise<{ email: string }> {
  const userId = requireUserId(ctx);
  const user = await ctx.db.user.findUniqueOrThrow({ where: { id: userId } });
  const pending = await pendingEmailOf(ctx.db, userId, ctx.clock.now());
  if (!pending && user.emailVerified) throw new AlreadyVerifiedError();
  await countVerificationMail(ctx, userId);
  await ctx.db.$transaction((tx) =>
    pending ? mailEmailChangeLink(ctx, tx, user, pending) : mailVerificationLink(ctx, tx, user),
  );
  return { email: pending ?? user.email };
}

const verifyInput = z.object({ token: z.string().min(1, 'is required').max(200) }).strict();
const PURPOSES: LinkPurpose[] = ['email_verification', 'email_change'];

export async function verifyEmail(ctx: Context, input: unknown) {
  const { token } = parseInput(verifyInput, input);
  const now = ctx.clock.now();
  if (!(await findLiveLinkToken(ctx.db, token, PURPOSES, now))) throw new InvalidLinkError('verification');
  return ctx.db
    .$transaction(async (tx) => {
      const claimed = await claimLinkToken(tx, token, PURPOSES, now);
      const before = claimed && (await tx.user.findUnique({ where: { id: claimed.userId } }));
      if (!claimed || !before) throw new InvalidLinkError('verification');
      const at = { at: now };
      if (claimed.purpose === 'email_verification') {
        // A link for an address the account has since left proves nothing about the account.
        if (before.email !== claimed.email) throw new InvalidLinkError('verification');
        if (before.emailVerified) return before;
        const user = await tx.user.update({ where: { id: before.id }, data: { emailVerified: true } });
        await emitUserEvent(tx, 'user.email.verified', user.id, { user }, at);
        await recordAudit(
          ctx,
          { action: 'user.email.verify', actorId: user.id, targetType: 'user', targetId: user.id },
          tx,
        );
        return user;
      }
      const user = await tx.user.update({
        where: { id: before.id },
        data: { email: claimed.email, emailVerified: true },
      });
      // Links mailed to the old address (a reset, a verification) no longer speak for the account.
      await tx.linkToken.updateMany({ where: { userId: user.id, endedAt: null }, data: { endedAt: now } });
      await emitUserEvent(tx, 'user.updated', user.id, { user, changes: ['email'] }, at);
      await emitUserEvent(tx, 'user.email.verified', user.id, { user }, at);
      await recordAudit(
        ctx,
        {
          action: 'user.email.change',
          actorId: user.id,
          targetType: 'user',
          targetId: user.id,
          details: { from: before.email, to: user.email },
        },
        tx,
      );
      await queueMail(tx, 'email_changed', before.email, { name: user.name, newEmail: user.email, at: now }, now);
      return user;
    })
    .catch(async (error: unknown) => {
      if (!isUniqueViolation(error)) throw error;
      // Someone else took the address after the link was sent: the unique index decided. The rolled-back claim is
      // made again on its own, so that the address no longer shows as pending and no new link is mailed to it.
      await claimLinkToken(ctx.db, token, ['email_change'], now);
      throw new EmailTakenError();
    });
}
