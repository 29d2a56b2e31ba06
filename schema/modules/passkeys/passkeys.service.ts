// Passkeys (WebAuthn, docs/architecture.md#second-factors): a signed-in person registers several, names, renames and
// removes them; anyone signs in with one, without a password, since they are discoverable. The relying party is
// BASE_URL: its host is the RP id, its origin the only origin accepted. Each ceremony's challenge is stored, single
// use and short-lived; a conditional update consumes it, so an answer works once however many copies arrive at once.
// @simplewebauthn/server does the WebAuthn checks; the rules around them are here.
import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransportFuture,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { NotFoundError, RateLimitedError } from '../../errors/index.ts';
import { addSeconds } from '../../lib/clock.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { countRequest } from '../../limits/request-throttle.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { SessionRequiredError } from '../sessions/sessions.errors.ts';
import { signInWith, type LoginResult } from '../auth/auth.service.ts';
import { readMfaToken, useMfaTokenSql } from '../auth/mfa-token.ts';
import type { AuthMethod } from '../sessions/sessions.service.ts';
import { admitPasswordAttempt, checkAccountPassword, passwordRejected } from '../auth/throttle.service.ts';
import { InvalidMfaTokenError } from '../mfa/mfa.errors.ts';
import {
  announceFactorChange as announce,
  keepRequiredFactor,
  proofOf,
  requireFreshProof,
} from '../mfa/mfa.service.ts';
import {
  InvalidChallengeError,
  InvalidPasskeyResponseError,
  PasskeyAlreadyRegisteredError,
  PasskeyCounterError,
  PasskeysUnavailableError,
  UnknownPasskeyError,
  WrongPasswordError,
} from './passkeys.errors.ts';

/** @simplewebauthn/server, loaded at the first ceremony: a process that never sees a passkey does not hold it. */
const webauthn = () => import('@simplewebauthn/server');

type Tx = Prisma.TransactionClient;

/** How long a ceremony's challenge (and the browser's prompt) lasts. */
export const CHALLENGE_TTL_SECONDS = 5 * 60;
/**
 * Sign-in options one client address may ask for in CHALLENGE_TTL_SECONDS: each stores a challenge, and anyone may
 * ask, so a flood from one place is refused (429) rather than written. Every /login visit asks once for autofill.
 */
export const SIGN_IN_OPTIONS_PER_ADDRESS = 300;
/** Expired challenges one new challenge clears on its way: the table stays small without a scheduled task. */
const CHALLENGES_CLEARED_PER_INSERT = 100;
const RP_NAME = 'Tessera';

type Purpose = 'registration' | 'authentication';

// ---- the relying party ------------------------------------------------------------------------------------------

export interface RelyingParty {
  id: string;
  origin: string;
}

/** BASE_URL as a WebAuthn relying party, or null when its host is an IP address, which browsers refuse as an RP id. */
export function relyingPartyOf(issuer: string): RelyingParty | null {
  const url = new URL(issuer);
  if (isIP(url.hostname.replace(/^\[|\]$/g, ''))) return null;
  return { id: url.hostname, origin: url.origin };
}

/** Why passkeys are offered nowhere, for the start-up log; null when they are offered. */
export function passkeysUnavailableReason(issuer: string): string | null {
  return relyingPartyOf(issuer)
    ? null
    : `passkeys are off: BASE_URL (${issuer}) has an IP address for its host, which browsers refuse as a WebAuthn relying party; set BASE_URL to a domain name (localhost works for development)`;
}

function relyingParty(ctx: Context): RelyingParty {
  const rp = relyingPartyOf(ctx.settings.issuer());
  if (!rp) throw new PasskeysUnavailableError();
  return rp;
}

export function passkeysAvailable(ctx: Context): boolean {
  return relyingPartyOf(ctx.settings.issuer()) !== null;
}

// ---- input ------------------------------------------------------------------------------------------------------

/** base64url, as WebAuthn's JSON encodes bytes; `max` in characters (a credential id is at most 1023 bytes). */
const b64url = (max: number) =>
  z
    .string()
    .min(1, 'is required')
    .max(max, `must be at most ${max} characters`)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url');

const transports = z.array(z.string().max(32)).max(10).optional();
const extensionResults = z.record(z.string().max(64), z.unknown()).optional().default({});

const credentialFields = {
  id: b64url(1400),
  rawId: b64url(1400),
  type: z.literal('public-key', { message: 'must be public-key' }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: extensionResults,
};

const registrationResponse = z.object({
  ...credentialFields,
  response: z.object({
    clientDataJSON: b64url(8192),
    attestationObject: b64url(65536),
    transports,
    publicKeyAlgorithm: z.number().int().optional(),
    publicKey: b64url(8192).optional(),
    authenticatorData: b64url(65536).optional(),
  }),
});

const authenticationResponse = z.object({
  ...credentialFields,
  response: z.object({
    clientDataJSON: b64url(8192),
    authenticatorData: b64url(65536),
    signature: b64url(1024),
    userHandle: z.string().max(512).optional().nullable(),
  }),
});

/** A passkey's name: what the person calls it, shown in lists and mails (no control characters). */
const passkeyName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine((v) => !/[\u0000-\u001f\u007f-\u009f]/.test(v), 'must not contain control characters');

const registerInput = z.object({ name: passkeyName, response: registrationResponse });
const renameInput = z.object({ id: fields.id, name: passkeyName });
const removeInput = z.object({ id: fields.id, password: z.string().min(1, 'is required').max(256) });
const signInInput = z.object({
  response: authenticationResponse,
  // The token of a password sign-in waiting for its second factor: a passkey alone signs in, so it is not needed.
  mfaToken: z.string().max(4096).optional().nullable(),
});

/** The challenge the authenticator signed, read from clientDataJSON (WebAuthn Level 3, 5.8.1). */
function signedChallenge(clientDataJSON: string): string {
  try {
    const data: unknown = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8'));
    const challenge = (data as { challenge?: unknown } | null)?.challenge;
    if (typeof challenge === 'string' && challenge.length > 0 && challenge.length <= 1024) return challenge;
  } catch {
    // not JSON: refused below
  }
  throw new InvalidPasskeyResponseError('response.clientDataJSON is not client data with a challenge');
}

// ---- challenges -------------------------------------------------------------------------------------------------

/** Stores a new challenge, clearing some expired ones in the same statement. */
async function storeChallenge(ctx: Context, challenge: string, purpose: Purpose, userId: string | null): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db.$executeRaw`
    with cleared as (
      delete from webauthn_challenges where id in (
        select id from webauthn_challenges where expires_at < ${now}::timestamp(3) limit ${CHALLENGES_CLEARED_PER_INSERT}::int)
    )
    insert into webauthn_challenges (id, challenge, user_id, purpose, expires_at, created_at)
    values (${uuidv7()}, ${challenge}, ${userId}::text, ${purpose}, ${addSeconds(now, CHALLENGE_TTL_SECONDS)}::timestamp(3), ${now}::timestamp(3))`;
}

/**
 * Whether `challenge` is open for `purpose` (and `userId`): known, unused and unexpired. A read only, so that a bad
 * answer is refused before its signature is checked; the consuming write comes after (consumeChallenge).
 */
async function challengeIsOpen(
  ctx: Context,
  challenge: string,
  purpose: Purpose,
  userId: string | null,
): Promise<boolean> {
  const row = await ctx.db.webauthnChallenge.findUnique({
    where: { challenge },
    select: { purpose: true, userId: true, usedAt: true, expiresAt: true },
  });
  return !!row && row.purpose === purpose && row.userId === userId && !row.usedAt && row.expiresAt > ctx.clock.now();
}

/**
 * Uses the challenge, once: the conditional update decides between concurrent answers (a second one finds used_at
 * set, after waiting for the first's row lock, and updates nothing). Throws when it was not open.
 */
async function consumeChallenge(
  ctx: Context,
  tx: Tx,
  challenge: string,
  purpose: Purpose,
  userId: string | null,
): Promise<void> {
  const now = ctx.clock.now();
  const used = await tx.$queryRaw<{ id: string }[]>`
    update webauthn_challenges set used_at = ${now}::timestamp(3)
    where challenge = ${challenge} and purpose = ${purpose} and user_id is not distinct from ${userId}::text
      and used_at is null and expires_at > ${now}::timestamp(3)
    returning id`;
  if (used.length !== 1) throw new InvalidChallengeError();
}

// ---- the person's own passkeys ----------------------------------------------------------------------------------

/** A passkey as its person sees it; never the key itself. */
export interface PasskeyView {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** singleDevice (bound to one authenticator) or multiDevice (synced). */
  deviceType: string;
  backedUp: boolean;
  transports: string[];
}

const VIEW = {
  id: true,
  name: true,
  createdAt: true,
  lastUsedAt: true,
  deviceType: true,
  backedUp: true,
  transports: true,
} as const;

/** The person behind a session: only a first-party session manages passkeys, never an API key or an access token. */
function sessionPerson(ctx: Context): { userId: string; sessionId: string } {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new SessionRequiredError('Managing passkeys');
  return actor;
}

/**
 * The WebAuthn creation options for a new passkey of the caller; its challenge is kept 5 minutes, for them only. As
 * the first factor it needs a fresh proof (requireFreshProof): a session alone must not make itself a second factor.
 * Asked here, since only these options' challenge registers a passkey.
 */
export async function passkeyRegistrationOptions(ctx: Context, input: unknown = {}): Promise<unknown> {
  const { userId } = sessionPerson(ctx);
  const proof = proofOf(input);
  const rp = relyingParty(ctx);
  if ((await secondFactorCount(ctx.db, userId)) === 0) await requireFreshProof(ctx, userId, proof);
  const user = await ctx.db.user.findUniqueOrThrow({
    where: { id: userId },
    select: { email: true, name: true, passkeys: { select: { credentialId: true, transports: true } } },
  });
  const options = await (
    await webauthn()
  ).generateRegistrationOptions({
    rpName: RP_NAME,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.name,
    // The user handle: the same for every passkey of the person, so an authenticator keeps one passkey per account.
    userID: new TextEncoder().encode(userId),
    timeout: CHALLENGE_TTL_SECONDS * 1000,
    attestationType: 'none',
    excludeCredentials: user.passkeys.map((p) => ({
      id: p.credentialId,
      transports: p.transports as AuthenticatorTransportFuture[],
    })),
    // Discoverable, so that the passkey signs in without an e-mail address first.
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  await storeChallenge(ctx, options.challenge, 'registration', userId);
  return options;
}

/** Whether the person has a second factor besides what `tx` has just changed: a confirmed authenticator app or a passkey. */
async function secondFactorCount(tx: Pick<Tx, '$queryRaw'>, userId: string): Promise<number> {
  const [row] = await tx.$queryRaw<{ n: number }[]>`
    select (select count(*)::int from passkeys where user_id = ${userId})
         + (select count(*)::int from totp_factors where user_id = ${userId} and confirmed_at is not null) as n`;
  // A select without FROM answers one row.
  if (!row) throw new Error('secondFactorCount: the count answered no row');
  return row.n;
}

/** Verifies the authenticator's answer to the caller's registration options and keeps the new passkey. */
export async function registerPasskey(ctx: Context, input: unknown): Promise<PasskeyView> {
  const { userId } = sessionPerson(ctx);
  const rp = relyingParty(ctx);
  const { name, response } = parseInput(registerInput, input);
  const challenge = signedChallenge(response.response.clientDataJSON);
  if (!(await challengeIsOpen(ctx, challenge, 'registration', userId))) throw new InvalidChallengeError();
  let verified;
  try {
    verified = await (
      await webauthn()
    ).verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
  } catch (error) {
    throw new InvalidPasskeyResponseError(reasonOf(error));
  }
  if (!verified.verified) throw new InvalidPasskeyResponseError();
  const { credential, credentialDeviceType, credentialBackedUp } = verified.registrationInfo;
  const now = ctx.clock.now();
  try {
    return await ctx.db.$transaction(async (tx) => {
      await consumeChallenge(ctx, tx, challenge, 'registration', userId);
      const passkey = await tx.passkey.create({
        data: {
          id: uuidv7(),
          userId,
          credentialId: credential.id,
          publicKey: Buffer.from(credential.publicKey),
          counter: BigInt(credential.counter),
          transports: (credential.transports ?? []).slice(0, 10),
          deviceType: credentialDeviceType,
          backedUp: credentialBackedUp,
          name,
          createdAt: now,
        },
        select: VIEW,
      });
      const first = (await secondFactorCount(tx, userId)) === 1;
      await recordAudit(
        ctx,
        {
          action: 'passkey.register',
          targetType: 'passkey',
          targetId: passkey.id,
          details: { name, deviceType: credentialDeviceType },
        },
        tx,
      );
      await announce(ctx, tx, userId, `a passkey, "${name}", was added to your account.`, first ? '2fa.enabled' : null);
      return passkey;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new PasskeyAlreadyRegisteredError();
    throw error;
  }
}

/** The caller's passkeys, oldest first. */
export async function myPasskeys(ctx: Context): Promise<PasskeyView[]> {
  const { userId } = sessionPerson(ctx);
  return ctx.db.passkey.findMany({ where: { userId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select: VIEW });
}

/** Renames one of the caller's passkeys; another person's is not found. */
export async function renamePasskey(ctx: Context, input: unknown): Promise<PasskeyView> {
  const { id, name } = parseInput(renameInput, input);
  const { userId } = sessionPerson(ctx);
  return ctx.db.$transaction(async (tx) => {
    const renamed = await tx.passkey.updateManyAndReturn({ where: { id, userId }, data: { name }, select: VIEW });
    if (!renamed[0]) throw new NotFoundError('Passkey');
    await recordAudit(ctx, { action: 'passkey.rename', targetType: 'passkey', targetId: id, details: { name } }, tx);
    return renamed[0];
  });
}

/**
 * Removes one of the caller's passkeys, with the account's password (a session alone must not weaken the account).
 * The last second factor gone, the recovery codes go too and 2fa.disabled is emitted.
 */
export async function removePasskey(ctx: Context, input: unknown): Promise<{ id: string }> {
  const { id, password } = parseInput(removeInput, input);
  const { userId } = sessionPerson(ctx);
  const account = await ctx.db.user.findUniqueOrThrow({
    where: { id: userId },
    select: { email: true, passwordHash: true },
  });
  if (!(await checkAccountPassword(ctx, account, password))) {
    await recordAudit(ctx, {
      action: 'passkey.remove',
      outcome: 'failure',
      targetType: 'passkey',
      targetId: id,
      details: { reason: 'wrong_password' },
    });
    throw new WrongPasswordError();
  }
  return ctx.db.$transaction(async (tx) => {
    const [removed] = await tx.$queryRaw<
      { name: string }[]
    >`delete from passkeys where id = ${id} and user_id = ${userId} returning name`;
    if (!removed) throw new NotFoundError('Passkey');
    const last = (await secondFactorCount(tx, userId)) === 0;
    if (last) await keepRequiredFactor(tx, userId);
    if (last) await tx.recoveryCode.deleteMany({ where: { userId } });
    await recordAudit(
      ctx,
      { action: 'passkey.remove', targetType: 'passkey', targetId: id, details: { name: removed.name } },
      tx,
    );
    await announce(
      ctx,
      tx,
      userId,
      `the passkey "${removed.name}" was removed from your account.`,
      last ? '2fa.disabled' : null,
    );
    return { id };
  });
}

// ---- signing in -------------------------------------------------------------------------------------------------

/** The WebAuthn request options of a sign-in with a discoverable passkey: no account named, any passkey of ours. */
export async function passkeySignInOptions(ctx: Context): Promise<unknown> {
  const rp = relyingParty(ctx);
  if (ctx.request.ip)
    await countRequest(
      ctx,
      [{ key: `passkey-options:${ctx.request.ip}`, limit: SIGN_IN_OPTIONS_PER_ADDRESS }],
      CHALLENGE_TTL_SECONDS,
    );
  const options = await (
    await webauthn()
  ).generateAuthenticationOptions({
    rpID: rp.id,
    userVerification: 'preferred',
    timeout: CHALLENGE_TTL_SECONDS * 1000,
  });
  await storeChallenge(ctx, options.challenge, 'authentication', null);
  return options;
}

export async function passkeySignIn(ctx: Context, input: unknown): Promise<LoginResult> {
  try {
    const result = await passkeyLogin(ctx, input);
    ctx.metrics.signIn('success', 'passkey');
    return result;
  } catch (error) {
    if (error instanceof RateLimitedError) ctx.metrics.signIn('throttled', 'passkey');
    else ctx.metrics.signIn('failure', 'passkey');
    throw error;
  }
}

/** The library's words for a check that failed, kept short (they name what differed, never a secret). */
const reasonOf = (error: unknown) => (error instanceof Error ? error.message.slice(0, 200) : 'could not be verified');

/**
 * A signature counter that did not grow, when either count is non-zero: the credential may have been cloned (WebAuthn
 * Level 3, 6.1.1). Authenticators without a counter answer 0 every time.
 */
const counterWentBack = (answered: number, stored: number) => (answered > 0 || stored > 0) && answered <= stored;

/**
 * A failed check of a credential (unknown, a signature or origin that does not verify, a counter that went back):
 * counted against the sign-in throttle of the client address, as a wrong password is, and audited.
 */
async function refuseCredential(ctx: Context, error: Error, details: Record<string, unknown>): Promise<never> {
  await recordAudit(ctx, {
    action: 'auth.passkey',
    outcome: 'failure',
    ...('userId' in details
      ? { targetType: 'user', targetId: String(details.userId), actorId: String(details.userId) }
      : {}),
    details,
  });
  await passwordRejected(ctx, null);
  throw error;
}

async function passkeyLogin(ctx: Context, input: unknown): Promise<LoginResult> {
  const rp = relyingParty(ctx);
  const { response, mfaToken } = parseInput(signInInput, input);
  // A password proved a moment ago for the same person (the mfa_token of that sign-in) makes two factors with the
  // passkey, whether or not it verified the person; another person's token, or an expired one, adds nothing.
  const password = mfaToken ? await readMfaToken(ctx, mfaToken) : null;
  const passkey = await ctx.db.passkey.findUnique({
    where: { credentialId: response.id },
    select: {
      id: true,
      userId: true,
      credentialId: true,
      publicKey: true,
      counter: true,
      transports: true,
      user: { select: { id: true, email: true, sessionVersion: true } },
    },
  });
  // A locked address is refused before anything is checked, as for passwords; the attempt is for the passkey's owner,
  // whose device cookie lets its browser past the address's lock (auth/throttle.service.ts), as a password's would.
  await admitPasswordAttempt(ctx, null, passkey?.user.email ?? null);
  const challenge = signedChallenge(response.response.clientDataJSON);
  if (!(await challengeIsOpen(ctx, challenge, 'authentication', null))) throw new InvalidChallengeError();
  if (!passkey) return refuseCredential(ctx, new UnknownPasskeyError(), { reason: 'unknown_credential' });

  // The counter is compared here, not by the library, which tells a counter that went back only by the English text
  // of a plain Error. Given 0 as the stored count it refuses none; the same rule then runs at the point it would have.
  const storedCounter = Number(passkey.counter);
  let verified;
  try {
    verified = await (
      await webauthn()
    ).verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: passkey.credentialId,
        publicKey: new Uint8Array(passkey.publicKey),
        counter: 0,
        transports: passkey.transports as AuthenticatorTransportFuture[],
      },
      requireUserVerification: false,
    });
  } catch (error) {
    return refuseCredential(ctx, new InvalidPasskeyResponseError(reasonOf(error)), {
      reason: 'invalid_response',
      userId: passkey.userId,
      passkeyId: passkey.id,
    });
  }
  const info = verified.authenticationInfo;
  if (counterWentBack(info.newCounter, storedCounter)) {
    return refuseCredential(ctx, new PasskeyCounterError(), {
      reason: 'counter_mismatch',
      userId: passkey.userId,
      passkeyId: passkey.id,
    });
  }
  if (!verified.verified) {
    return refuseCredential(ctx, new InvalidPasskeyResponseError('the signature does not verify'), {
      reason: 'bad_signature',
      userId: passkey.userId,
      passkeyId: passkey.id,
    });
  }

  // RFC 8176: hwk for a key bound to one device, swk for a synced one; user verification adds user, and with it or
  // with the password before it, mfa (something the person has, and is or knows).
  const withPassword = password?.userId === passkey.userId ? password : null;
  const amr: AuthMethod[] = [
    ...(withPassword ? (['pwd'] as const) : []),
    info.credentialDeviceType === 'multiDevice' ? 'swk' : 'hwk',
    ...(info.userVerified ? (['user'] as const) : []),
    ...(info.userVerified || withPassword ? (['mfa'] as const) : []),
  ];
  const now = ctx.clock.now();
  return signInWith(ctx, passkey.user, amr, { via: 'passkey' }, async (tx) => {
    await consumeChallenge(ctx, tx, challenge, 'authentication', null);
    // The password's half counts once, like the token at /api/v1/auth/login/mfa.
    if (withPassword && !(await tx.$queryRaw<unknown[]>`${useMfaTokenSql(withPassword, now)}`).length)
      throw new InvalidMfaTokenError();
    // The counter only grows (or stays 0 for authenticators without one): a concurrent sign-in with another
    // challenge that wrote a later count wins, and this one is refused like a replay.
    const counted = await tx.$executeRaw`
      update passkeys set counter = ${BigInt(info.newCounter)}, last_used_at = ${now}::timestamp(3), backed_up = ${info.credentialBackedUp}
      where id = ${passkey.id} and (counter < ${BigInt(info.newCounter)} or (counter = 0 and ${BigInt(info.newCounter)} = 0))`;
    if (counted !== 1) throw new PasskeyCounterError();
  });
}
