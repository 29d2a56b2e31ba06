// TOTP (RFC 6238) through the otpauth package: SHA-1, 6 digits, 30-second steps, as every authenticator app
// expects. A code is accepted in its step and one on each side (RFC 6238 5.2); which step it matched is returned,
// so that the caller stores it and never accepts that code, or an older one, again.
import { Secret, TOTP } from 'otpauth';

const PERIOD = 30;

/** qrcode, loaded at the first enrolment: a process that enrols nobody does not hold it. */
const qrcode = () => import('qrcode');

const totpOf = (secret: string, issuer = '', label = '') =>
  new TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secret) });

/** A new secret: 160 random bits (RFC 4226 4), base32 as apps take it. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

/** The otpauth:// URL an authenticator app scans, and the same as an SVG QR code. */
export async function totpEnrolment(
  secret: string,
  issuer: string,
  account: string,
): Promise<{ otpauthUrl: string; qrSvg: string }> {
  const otpauthUrl = totpOf(secret, issuer, account).toString();
  return {
    otpauthUrl,
    qrSvg: await (await qrcode()).default.toString(otpauthUrl, { type: 'svg', errorCorrectionLevel: 'M', margin: 1 }),
  };
}

/** The time step `code` belongs to when it is right now (within one step), else null. */
export function matchingStep(secret: string, code: string, now: Date): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totpOf(secret).validate({ token: code, timestamp: now.getTime(), window: 1 });
  return delta === null ? null : Math.floor(now.getTime() / 1000 / PERIOD) + delta;
}
