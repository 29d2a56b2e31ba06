// The second step of a sign-in with a second factor (docs/architecture.md#second-factors): the mfa_token a right
// password gave, with a code of the authenticator app or a recovery code. Wrong codes count against the same
// throttle as wrong passwords. The token, the code and the session are taken in one transaction: a code that fails
// there (used a moment ago) leaves the token for another try, and a token works once.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { decryptSecret } from '../../push/secret.ts';
import { parseInput } from '../../lib/input.ts';
import { claimLinkToken, findLiveLinkToken } from '../accounts/link-tokens.ts';
import { recordFailedPasswordAttempt } from '../audit/audit.service.ts';
import { signInWith, type LoginResult } from '../auth/auth.service.ts';
import type { AuthMethod } from '../auth/sessions.service.ts';
import { admitPasswordAttempt, passwordAccepted, passwordRejected } from '../auth/throttle.service.ts';
import { InvalidCodeError, InvalidMfaTokenError } from './mfa.errors.ts';
import { recoveryCodeHash, useRecoveryCode } from './recovery-codes.ts';
import { matchingStep } from './totp.ts';
import { takeTotpStep } from './mfa.service.ts';

const mfaLoginInput = z
  .object({
    mfaToken: z.string().min(1, 'is required').max(200),
    code: z.string().trim().max(64).optional().nullable(),
    recoveryCode: z.string().trim().max(64).optional().nullable(),
  })
  .refine((i) => !!i.code !== !!i.recoveryCode, { path: ['code'], message: 'give either a code or a recovery code' });

/** RFC 8176: a password and a one-time code, two factors. */
const PASSWORD_AND_CODE: AuthMethod[] = ['pwd', 'otp', 'mfa'];

export async function completeMfaLogin(ctx: Context, input: unknown): Promise<LoginResult> {
  const { mfaToken, code, recoveryCode } = parseInput(mfaLoginInput, input);
  const now = ctx.clock.now();
  const pending = await findLiveLinkToken(ctx.db, mfaToken, ['mfa'], now);
  if (!pending) throw new InvalidMfaTokenError();
  await admitPasswordAttempt(ctx, pending.email);
  const user = await ctx.db.user.findUniqueOrThrow({
    where: { id: pending.userId },
    select: { id: true, sessionVersion: true, totpFactor: { select: { secretEncrypted: true, confirmedAt: true } } },
  });
  const refuse = async (error: InvalidCodeError) => {
    await passwordRejected(ctx, pending.email);
    await recordFailedPasswordAttempt(ctx, pending.email, { action: 'auth.login.mfa', reason: code ? 'wrong_code' : 'wrong_recovery_code' });
    ctx.metrics.signIn('failure', 'second_factor');
    return error;
  };
  let step: number | null = null;
  if (code) {
    const totp = user.totpFactor?.confirmedAt ? user.totpFactor : null;
    step = totp ? matchingStep(await decryptSecret(totp.secretEncrypted, ctx.settings.secretKey), code, now) : null;
    if (step === null) throw await refuse(new InvalidCodeError());
  } else if (!(await ctx.db.recoveryCode.findFirst({ where: { userId: user.id, codeHash: recoveryCodeHash(recoveryCode!), usedAt: null }, select: { id: true } }))) {
    throw await refuse(new InvalidCodeError('recovery code'));
  }
  // The code is right (for now): the throttle's verdict comes before anything is used up, as for a password. Asked
  // after the sign-in, a lock made meanwhile by concurrent wrong guesses answered 429 with the code spent and a
  // session made that nobody received.
  await passwordAccepted(ctx, pending.email);
  let refusal: InvalidCodeError | null = null;
  try {
    const result = await signInWith(ctx, user, PASSWORD_AND_CODE, async (tx) => {
      if (!(await claimLinkToken(tx, mfaToken, ['mfa'], now))) throw new InvalidMfaTokenError();
      const accepted = step !== null ? await takeTotpStep(tx, user.id, step, true) : await useRecoveryCode(tx, user.id, recoveryCode!, now);
      if (!accepted) throw (refusal = new InvalidCodeError(step !== null ? 'code' : 'recovery code'));
    });
    ctx.metrics.signIn('success', 'second_factor');
    return result;
  } catch (error) {
    if (error === refusal && refusal) throw await refuse(refusal);
    throw error;
  }
}
