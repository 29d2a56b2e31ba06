// Proving an address (docs/architecture.md#mail): a mailed link verifies the current address, or makes a new one
// the account's address. A changed address takes effect only once the new one is proven, and the old one is told.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { requireUserId } from '../../auth/access.ts';
import { parseInput } from '../../lib/input.ts';
import { countRequest } from '../../limits/request-throttle.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
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
import { verifyEmailUrl } from './links.ts';

type Tx = Prisma.TransactionClient;
type Person = { id: string; name: string; email: string };

/** Verification and address-change mails one person may be sent in an hour. */
const RESEND_LIMIT = 5;
const WINDOW_SECONDS = 3600;
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
