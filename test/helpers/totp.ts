// An authenticator app as the tests hold one: codes computed with otpauth from the secret the enrolment answered,
// at the time of the server's movable clock, which the tests move to the middle of a fresh 30-second step so that a
// code never crosses a step's end between being made and being checked.
import { Secret, TOTP } from 'otpauth';
import { expect } from 'vitest';
import type { MovableClock } from './clock.ts';
import type { Client } from './http.ts';
import { PASSWORD } from './fixtures.ts';

export const PERIOD = 30;

/**
 * Moves `clock` to the middle of a later step (`steps` on): a code computed now stays in its step for the next 15 s
 * of real time, and no code of that step was used before.
 */
export function toMidStep(clock: MovableClock, steps = 1): void {
  const intoStep = (clock.now().getTime() / 1000) % PERIOD;
  clock.advance((steps - 1) * PERIOD + (PERIOD - intoStep) + PERIOD / 2);
}

const totp = (secret: string) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: PERIOD });

/** The code of the app with `secret` at the clock's time, moved by `offsetSeconds`. */
export const codeAt = (clock: MovableClock, secret: string, offsetSeconds = 0): string =>
  totp(secret).generate({ timestamp: clock.now().getTime() + offsetSeconds * 1000 });

/** Six digits that are not the code of the step now nor of one on either side. */
export function wrongCode(clock: MovableClock, secret: string): string {
  const near = new Set([-PERIOD, 0, PERIOD].map((o) => codeAt(clock, secret, o)));
  for (let n = Number(codeAt(clock, secret)) + 1; ; n++) {
    const candidate = String(n % 1_000_000).padStart(6, '0');
    if (!near.has(candidate)) return candidate;
  }
}

export interface Enrolled {
  secret: string;
  recoveryCodes: string[];
}

/**
 * Sets up the authenticator app of the session `api` through the routes, as the portal does: as the first factor
 * it needs the account's password again.
 */
export async function enrolTotp(api: Client, clock: MovableClock, password: string = PASSWORD): Promise<Enrolled> {
  const started = await api.post('/api/v1/users/me/mfa/totp', { password });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  toMidStep(clock);
  const confirmed = await api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(clock, started.body.secret) });
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  return { secret: started.body.secret, recoveryCodes: confirmed.body.recovery_codes };
}
