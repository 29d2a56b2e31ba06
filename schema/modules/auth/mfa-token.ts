// The mfa_token of a password sign-in waiting for its second factor: an encrypted JWT (JWE, dir + A256GCM under
// SECRET_KEY), so that making it writes nothing and completing it reads nothing but what it carries: the person,
// their address (for the throttle) and session version, and their TOTP secret as stored. It lives 5 minutes and
// works once: its id is written as a used link token when it completes a sign-in (docs/architecture.md#second-factors).
// The TOTP secret travels decrypted inside it (it is encrypted as a whole), with a digest of the stored form, so
// that a factor replaced meanwhile is not matched.
import { randomUUID } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { sha256 } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { addSeconds, epochSeconds } from '../../lib/clock.ts';

export const MFA_TOKEN_TTL_SECONDS = 300;
const TYP = 'mfa+jwt';
/** Like every token of ours, it says what it is (tss_ a session, tsk_ an API key...). */
const PREFIX = 'tsm_';

export interface PendingSignIn {
  jti: string;
  userId: string;
  email: string;
  sessionVersion: number;
  /** The TOTP secret (base32) and the SHA-256 of its stored form, or null without an authenticator app. */
  totp: { secret: string; stored: string } | null;
  expiresAt: Date;
}

/**
 * The statement (or CTE body) that uses the token: its id written as a used `mfa` link token, when `gate` (SQL
 * that is true or false) lets it. Of concurrent uses one inserts the row; the others find it and insert nothing.
 */
export function useMfaTokenSql(pending: PendingSignIn, now: Date, gate: Prisma.Sql = Prisma.sql`true`): Prisma.Sql {
  return Prisma.sql`
    insert into link_tokens (id, user_id, purpose, token_hash, email, expires_at, ended_at, created_at)
    select ${uuidv7()}, ${pending.userId}, 'mfa', ${sha256(pending.jti)}, ${pending.email}, ${pending.expiresAt}::timestamp, ${now}::timestamp, ${now}::timestamp
    where ${gate}
    on conflict (token_hash) do nothing returning id`;
}

export async function issueMfaToken(
  ctx: Context,
  sign: Omit<PendingSignIn, 'jti' | 'expiresAt'>,
): Promise<{ token: string; expiresAt: Date }> {
  const now = ctx.clock.now();
  const expiresAt = addSeconds(now, MFA_TOKEN_TTL_SECONDS);
  const token = await new EncryptJWT({
    email: sign.email,
    sv: sign.sessionVersion,
    totp: sign.totp?.secret,
    tf: sign.totp?.stored,
  })
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', typ: TYP })
    .setSubject(sign.userId)
    .setJti(randomUUID())
    .setIssuedAt(epochSeconds(now))
    .setExpirationTime(epochSeconds(expiresAt))
    .encrypt(ctx.settings.secretKey);
  return { token: PREFIX + token, expiresAt };
}

/** The sign-in a token stands for, or null: not ours, tampered with, or past its 5 minutes. */
export async function readMfaToken(ctx: Context, token: string): Promise<PendingSignIn | null> {
  if (!token.startsWith(PREFIX)) return null;
  try {
    const { payload, protectedHeader } = await jwtDecrypt(token.slice(PREFIX.length), ctx.settings.secretKey, {
      currentDate: ctx.clock.now(),
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
    });
    const { sub, jti, email, sv, totp, tf, exp } = payload;
    if (
      protectedHeader.typ !== TYP ||
      typeof sub !== 'string' ||
      typeof jti !== 'string' ||
      typeof email !== 'string' ||
      typeof sv !== 'number' ||
      typeof exp !== 'number'
    )
      return null;
    const factor = typeof totp === 'string' && typeof tf === 'string' ? { secret: totp, stored: tf } : null;
    return { jti, userId: sub, email, sessionVersion: sv, totp: factor, expiresAt: new Date(exp * 1000) };
  } catch {
    return null;
  }
}
