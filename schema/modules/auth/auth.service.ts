// Signing in and out, the current session, and switching the organization a session acts in.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { InvalidCredentialsError, NotFoundError, RateLimitedError } from '../../errors/index.ts';
import { SessionRequiredError } from '../sessions/sessions.errors.ts';
import { SsoRequiredError } from './auth.errors.ts';
import { burnPasswordCheck, sha256, verifyPassword } from '../../lib/crypto.ts';
import { unseal } from '../../lib/sealed.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { recordAudit, recordFailedPasswordAttempt } from '../audit/audit.service.ts';
import { createSession, revokeSession, type AuthMethod, type IssuedSession } from '../sessions/sessions.service.ts';
import { admitPasswordAttempt, passwordAccepted, passwordRejected } from './throttle.service.ts';
import { issueMfaToken } from './mfa-token.ts';
import { domainOf } from '../../lib/email.ts';
import { admitSignIn, requiredConnectionSql, type WayIn } from './sign-in-policy.ts';

export interface LoginResult {
  token: string;
  expiresAt: Date;
  session: IssuedSession['session'];
  user: { id: string; email: string; name: string };
  organization: { id: string; name: string; role: Role } | null;
  /** The organization the session starts in requires a second factor and the person has none yet. */
  mfaEnrollmentRequired: boolean;
}

/** The second factors a sign-in can be completed with. */
export type MfaMethod = 'totp' | 'recovery_code' | 'passkey';

/** A right password of an account with a second factor: no session yet, a token to complete the sign-in with. */
export interface MfaChallenge {
  mfaToken: string;
  expiresAt: Date;
  methods: MfaMethod[];
}

const loginInput = z.object({
  email: z.string().trim().toLowerCase().min(1, 'is required').max(254),
  password: z.string().min(1, 'is required').max(256),
});

/** The login payload for a freshly issued session. */
export async function loginPayload(
  db: Pick<Prisma.TransactionClient, 'user' | 'membership'>,
  issued: IssuedSession,
  userId: string,
): Promise<LoginResult> {
  const user = await db.user.findUniqueOrThrow({
    where: { id: userId },
    select: {
      id: true,
      email: true,
      name: true,
      totpFactor: { select: { confirmedAt: true } },
      _count: { select: { passkeys: true } },
    },
  });
  const orgId = issued.session.organizationId;
  const membership = orgId
    ? await db.membership.findUnique({
        where: { userId_organizationId: { userId, organizationId: orgId } },
        select: { role: true, organization: { select: { id: true, name: true, requireMfa: true } } },
      })
    : null;
  const hasFactor = !!user.totpFactor?.confirmedAt || user._count.passkeys > 0;
  return {
    token: issued.token,
    expiresAt: issued.session.expiresAt,
    session: issued.session,
    user: { id: user.id, email: user.email, name: user.name },
    organization: membership
      ? { id: membership.organization.id, name: membership.organization.name, role: membership.role }
      : null,
    mfaEnrollmentRequired: !!membership?.organization.requireMfa && !hasFactor,
  };
}

/**
 * What a password sign-in does besides, in its session's transaction: accepting an invitation joins the organization
 * there, and the session starts in it (invitations.service.ts). A join that fails leaves no session.
 */
export interface SignInAlso {
  organizationId: string;
  use: (tx: Prisma.TransactionClient) => Promise<void>;
}

export async function login(ctx: Context, input: unknown, also?: SignInAlso): Promise<LoginResult | MfaChallenge> {
  try {
    const result = await passwordLogin(ctx, input, also);
    ctx.metrics.signIn('success', 'password');
    return result;
  } catch (error) {
    if (error instanceof InvalidCredentialsError) ctx.metrics.signIn('failure', 'password');
    if (error instanceof RateLimitedError) ctx.metrics.signIn('throttled', 'password');
    throw error;
  }
}

interface Account {
  id: string;
  passwordHash: string;
  sessionVersion: number;
  /** The confirmed TOTP secret as stored (encrypted), if any. */
  totp: string | null;
  passkeys: boolean;
}

async function passwordLogin(ctx: Context, input: unknown, also?: SignInAlso): Promise<LoginResult | MfaChallenge> {
  const { email, password } = parseInput(loginInput, input);
  // A locked account or address is refused before the password is hashed; no transaction is open while it is.
  await admitPasswordAttempt(ctx, email);
  // One statement: the account, and whether the address's domain must sign in through its identity provider.
  const [row] = await ctx.db.$queryRaw<(Account & { ssoId: string | null; ssoName: string | null })[]>`
    select u.id, u.password_hash as "passwordHash", u.session_version as "sessionVersion",
           (select t.secret_encrypted from totp_factors t where t.user_id = u.id and t.confirmed_at is not null) as totp,
           exists (select 1 from passkeys p where p.user_id = u.id) as passkeys,
           sso.id as "ssoId", sso.name as "ssoName"
    from (select 1) one
    left join users u on u.email = ${email}
    left join lateral (${requiredConnectionSql(domainOf(email))}) sso on true`;
  if (row?.ssoId) throw new SsoRequiredError({ id: row.ssoId, name: row.ssoName ?? 'your identity provider' });
  const user = row?.id ? row : undefined;
  const ok = user ? await verifyPassword(user.passwordHash, password) : (await burnPasswordCheck(password), false);
  if (!user || !ok) {
    await passwordRejected(ctx, email);
    await recordFailedPasswordAttempt(ctx, email, { action: 'auth.login', reason: 'wrong_password' });
    throw new InvalidCredentialsError();
  }
  if (user.totp || user.passkeys) {
    // Half the proof: a locked account is refused, but the count (wrong codes too) is cleared only by the second
    // factor (completeMfaLogin); else a password between guesses would let codes be guessed without end.
    await admitPasswordAttempt(ctx, email);
    return mfaChallenge(ctx, user, email);
  }
  await passwordAccepted(ctx, email);
  return signInWith(ctx, { ...user, email }, ['pwd'], { via: 'password' }, also?.use, also?.organizationId);
}

/**
 * The password was right and the account has a second factor: no session yet, but an mfa_token (5 minutes, single
 * use, the person's) that POST /api/v1/auth/login/mfa completes with a code, or a passkey sign-in replaces.
 */
async function mfaChallenge(ctx: Context, user: Account, email: string): Promise<MfaChallenge> {
  const totp = user.totp
    ? { secret: await unseal(user.totp, ctx.settings.secretKey), stored: sha256(user.totp) }
    : null;
  const { token, expiresAt } = await issueMfaToken(ctx, {
    userId: user.id,
    email,
    sessionVersion: user.sessionVersion,
    totp,
  });
  const methods: MfaMethod[] = [
    ...(user.totp ? (['totp'] as const) : []),
    'recovery_code',
    ...(user.passkeys ? (['passkey'] as const) : []),
  ];
  return { mfaToken: token, expiresAt, methods };
}

/**
 * Ends a sign-in that has proved who the person is with `amr`: the sign-in policy (admitSignIn), a new session,
 * audited as auth.login with its methods, and the login payload. The policy is asked first, so that a refused way
 * in uses up nothing; `use` runs next in the same transaction (consuming a code or a challenge), so that a sign-in
 * that fails there leaves nothing behind. The session starts in `organizationId`, else in the default one.
 */
export async function signInWith(
  ctx: Context,
  user: { id: string; email: string; sessionVersion: number },
  amr: AuthMethod[],
  way: WayIn,
  use?: (tx: Prisma.TransactionClient) => Promise<void>,
  organizationId?: string,
): Promise<LoginResult> {
  const userId = user.id;
  const issued = await ctx.db.$transaction(async (tx) => {
    await admitSignIn(tx, user.email, way);
    await use?.(tx);
    const issued = await createSession(ctx, tx, userId, user.sessionVersion, { organizationId, amr });
    await recordAudit(
      ctx,
      {
        action: 'auth.login',
        actorId: userId,
        targetType: 'user',
        targetId: userId,
        organizationId: issued.session.organizationId,
        details: { amr },
      },
      tx,
    );
    return issued;
  });
  return loginPayload(ctx.db, issued, userId);
}

export async function logout(ctx: Context): Promise<boolean> {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new SessionRequiredError('Sign-out');
  await revokeSession(ctx, actor.sessionId);
  await recordAudit(ctx, { action: 'auth.logout', targetType: 'session', targetId: actor.sessionId });
  return true;
}

const switchInput = z.object({ organizationId: fields.id });

export async function switchOrganization(ctx: Context, input: unknown) {
  const { organizationId } = parseInput(switchInput, input);
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new SessionRequiredError('Switching organization');
  const membership = await ctx.db.membership.findUnique({
    where: { userId_organizationId: { userId: actor.userId, organizationId } },
  });
  if (!membership) throw new NotFoundError('Organization');
  await ctx.db.session.update({ where: { id: actor.sessionId }, data: { organizationId } });
  // The rest of this request acts in the new organization too.
  return { ...ctx, actor: { ...actor, organizationId } };
}
