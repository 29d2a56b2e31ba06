// The device cookie (docs/architecture.md#identity-sessions-and-tokens, after OWASP's "Slow Down Online Guessing
// Attacks with Device Cookies"). A sign-in leaves the browser a signed token naming the account it signed in to, by
// the lower-cased address the throttle counts it under, with a random id. A client address locked by wrong passwords
// still admits a sign-in that shows the device cookie of the account it is for (auth/throttle.service.ts), so the
// lock stops guesses from new browsers, not the people who signed in from that address before. It is a compact JWS
// (HS256 under a key derived from SECRET_KEY for this purpose alone): unforgeable, not secret, and stored nowhere,
// so making one writes nothing and checking one reads nothing.
import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import type { Context } from '../../context.ts';
import { addSeconds, epochSeconds } from '../../lib/clock.ts';
import { derivedKey } from '../../lib/crypto.ts';

/** A year: a person who signs in from a browser now and then stays known to it; each sign-in renews it. */
export const DEVICE_COOKIE_TTL_SECONDS = 365 * 24 * 3600;
const TYP = 'device+jwt';
/** Like every token of ours, it says what it is (tss_ a session, tsm_ an mfa_token...; tsd_ is a directory token). */
const PREFIX = 'tsdc_';
/** Longer than any we make: a longer value is not ours and is not parsed. */
const MAX_LENGTH = 1024;

const signingKey = (ctx: Pick<Context, 'settings'>) => derivedKey(ctx.settings.secretKey, 'device cookie');

export interface DeviceCookie {
  value: string;
  expiresAt: Date;
}

/** A new device cookie for the account with address `email`, to be set after a sign-in to it. */
export async function issueDeviceCookie(
  ctx: Pick<Context, 'settings' | 'clock'>,
  email: string,
): Promise<DeviceCookie> {
  const now = ctx.clock.now();
  const expiresAt = addSeconds(now, DEVICE_COOKIE_TTL_SECONDS);
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: TYP })
    .setSubject(email.toLowerCase())
    .setJti(randomUUID())
    .setIssuedAt(epochSeconds(now))
    .setExpirationTime(epochSeconds(expiresAt))
    .sign(signingKey(ctx));
  return { value: PREFIX + token, expiresAt };
}

/**
 * The address of the account whose device cookie the request carries, or null: none, not ours, tampered with,
 * signed with another algorithm, or past its year.
 */
export async function deviceAccountOf(ctx: Pick<Context, 'settings' | 'clock' | 'request'>): Promise<string | null> {
  const cookie = ctx.request.deviceCookie;
  if (!cookie || cookie.length > MAX_LENGTH || !cookie.startsWith(PREFIX)) return null;
  try {
    const { payload } = await jwtVerify(cookie.slice(PREFIX.length), signingKey(ctx), {
      algorithms: ['HS256'],
      typ: TYP,
      currentDate: ctx.clock.now(),
      requiredClaims: ['sub', 'jti', 'exp'],
    });
    return typeof payload.sub === 'string' ? payload.sub : null;
  } catch {
    return null;
  }
}
