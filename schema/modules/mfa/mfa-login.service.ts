// The second step of a sign-in with a second factor (docs/architecture.md#second-factors): the mfa_token a right
// password gave (auth/mfa-token.ts, encrypted, carrying the person), with a code of the authenticator app or a
// recovery code. Wrong codes count against the same throttle as wrong passwords. One statement, in the transaction
// that makes the session, checks the throttle's lock, uses the token once (its id written as a used link token),
// takes the code (its time step, or the recovery code) and clears the account's count: of concurrent uses of a
// token or a recovery code exactly one signs in, and a code taken by another leaves the token for another try.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { parseInput } from '../../lib/input.ts';
import { recordFailedPasswordAttempt } from '../audit/audit.service.ts';
import { signInWith, type LoginResult } from '../auth/auth.service.ts';
import { readMfaToken, useMfaTokenSql, type PendingSignIn } from '../auth/mfa-token.ts';
import type { AuthMethod } from '../sessions/sessions.service.ts';
import { acceptedCtes, lockOf, passwordRejected, refuseLocked, type LockColumns } from '../auth/throttle.service.ts';
import { InvalidCodeError, InvalidMfaTokenError, SecondFactorLockedError } from './mfa.errors.ts';
import { recoveryCodeHash } from './recovery-codes.ts';
import { matchingStep } from './totp.ts';

const mfaLoginInput = z
  .object({
    mfaToken: z.string().min(1, 'is required').max(4096),
    code: z.string().trim().max(64).optional().nullable(),
    recoveryCode: z.string().trim().max(64).optional().nullable(),
  })
  .refine((i) => !!i.code !== !!i.recoveryCode, { path: ['code'], message: 'give either a code or a recovery code' });

/** RFC 8176: a password and a one-time code, two factors. */
const PASSWORD_AND_CODE: AuthMethod[] = ['pwd', 'otp', 'mfa'];

/** A code's time step, with the authenticator app's secret it was checked against (as stored), or a recovery code. */
type Factor = { step: number; stored: string } | { recoveryCode: string };

/**
 * The one statement of the step: the lock, the token's single use, the code's, the count cleared. `throttle` is
 * acceptedCtes(ctx, pending.email, 'used'), made before the transaction opens (it checks the device cookie's
 * signature).
 */
async function useSecondFactor(
  tx: Prisma.TransactionClient,
  ctx: Context,
  pending: PendingSignIn,
  factor: Factor,
  throttle: { locked: Prisma.Sql; cleared: Prisma.Sql },
) {
  const now = ctx.clock.now();
  const used =
    'step' in factor
      ? Prisma.sql`update totp_factors set last_used_step = ${factor.step}
        where user_id = ${pending.userId} and encode(sha256(convert_to(secret_encrypted, 'UTF8')), 'hex') = ${factor.stored}
          and confirmed_at is not null
          and last_used_step < ${factor.step} and exists (select 1 from claimed) returning 1`
      : Prisma.sql`update recovery_codes set used_at = ${now}::timestamp
        where user_id = ${pending.userId} and code_hash = ${recoveryCodeHash(factor.recoveryCode)} and used_at is null
          and exists (select 1 from claimed) returning 1`;
  const [row] = await tx.$queryRaw<(LockColumns & { claimed: boolean; used: boolean })[]>`
    with ${throttle.locked},
    claimed as (${useMfaTokenSql(pending, now, Prisma.sql`not exists (select 1 from locked)`)}),
    used as (${used}),
    ${throttle.cleared}
    select ${lockOf}, exists (select 1 from claimed) as claimed, exists (select 1 from used) as used`;
  // The select reads only CTEs, without FROM: one row.
  if (!row) throw new Error('useSecondFactor: the statement answered no row');
  return row;
}

export async function completeMfaLogin(ctx: Context, input: unknown): Promise<LoginResult> {
  const { mfaToken, code, recoveryCode } = parseInput(mfaLoginInput, input);
  const pending = await readMfaToken(ctx, mfaToken);
  if (!pending) throw new InvalidMfaTokenError();
  const refuse = async (error: InvalidCodeError) => {
    await passwordRejected(ctx, pending.email);
    await recordFailedPasswordAttempt(ctx, pending.email, {
      action: 'auth.login.mfa',
      reason: code ? 'wrong_code' : 'wrong_recovery_code',
    });
    ctx.metrics.signIn('failure', 'second_factor');
    return error;
  };
  let factor: Factor;
  if (code) {
    const { totp } = pending;
    const step = totp ? matchingStep(totp.secret, code, ctx.clock.now()) : null;
    if (!totp || step === null) throw await refuse(new InvalidCodeError());
    factor = { step, stored: totp.stored };
  } else if (recoveryCode) {
    factor = { recoveryCode };
  } else {
    throw new Error('completeMfaLogin: the input check let through neither a code nor a recovery code');
  }
  const wrong = new InvalidCodeError('step' in factor ? 'code' : 'recovery code');
  const throttle = await acceptedCtes(ctx, pending.email, 'used');
  try {
    const result = await signInWith(
      ctx,
      { id: pending.userId, email: pending.email, sessionVersion: pending.sessionVersion },
      PASSWORD_AND_CODE,
      { via: 'second_factor' },
      async (tx) => {
        const verdict = await useSecondFactor(tx, ctx, pending, factor, throttle);
        if (verdict.lockedKey)
          throw new SecondFactorLockedError({ key: verdict.lockedKey, lockedUntil: verdict.lockedUntil });
        if (!verdict.claimed) throw new InvalidMfaTokenError();
        if (!verdict.used) throw wrong;
      },
    );
    ctx.metrics.signIn('success', 'second_factor');
    return result;
  } catch (error) {
    if (error instanceof SecondFactorLockedError) {
      ctx.metrics.signIn('throttled', 'second_factor');
      return refuseLocked(ctx, pending.email, error.lock);
    }
    if (error === wrong) throw await refuse(wrong);
    throw error;
  }
}
