// Password reset by a mailed link (docs/architecture.md#mail). Asking answers the same for known and unknown
// addresses and does the same database work for both: after the throttle, one job (password_reset_mail) carrying the
// address, whose run looks the address up and writes the token and its mail only where an account uses it. Neither
// the answer nor its timing tells whether an account exists. Confirming sets the password and bumps the session
// version: every session, access token and refresh token of the person ends.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { Prisma, type Db } from '../../db.ts';
import type { Clock } from '../../lib/clock.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { NotFoundError } from '../../errors/index.ts';
import { requirePlatformAdmin } from '../../auth/access.ts';
import { hashPassword } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { countRequest } from '../../limits/request-throttle.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { takeOverUnproven } from './take-over.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { forgetFailedSignIns } from '../auth/throttle.service.ts';
import { queueMail, queueMailSql } from '../mail/outbox.ts';
import { InvalidLinkError } from './accounts.errors.ts';
import {
  claimLinkToken,
  findLiveLinkToken,
  issuingLock,
  LINK_TOKEN_PURPOSES,
  newLinkToken,
  userIdQuery,
} from './link-tokens.ts';
import { forgotPasswordUrl, resetPasswordUrl } from './links.ts';

/** Reset mails one address may be sent, and one client address may ask for, in an hour. */
const LIMITS = { address: 5, client: 20 } as const;
const WINDOW_SECONDS = 3600;

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
