// Taking over an account whose address nobody proved (docs/architecture.md#single-sign-on, "Who signs in"). Anyone
// may make an account for an address they do not hold and wait for its owner (account pre-hijacking, Sudhodanan and
// Paverd 2022). Whoever later proves the address (a connection or the directory of the organization that verified its
// domain, or the mailbox answering a reset link) gets the account only once nothing the earlier holder set up still opens it.
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { apiKeysFollowCreator } from '../api-keys/api-keys.service.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { revokeGrants } from '../oauth/revocation.service.ts';
import { endEverySession } from '../sessions/sessions.service.ts';

type Tx = Prisma.TransactionClient;

export interface TakenOver {
  user: { id: string; email: string; name: string; emailVerified: boolean; createdAt: Date; sessionVersion: number };
  /** False when the address was proven already (a concurrent proof got there first): nothing was removed. */
  takenOver: boolean;
}

/**
 * In `tx`, if the account's address is still unproven: everything that signs in to it or acts for it goes. The
 * password becomes `passwordHash` (one nobody knows for a connection, the new one for a reset); passkeys, the
 * authenticator app and recovery codes, the providers connected to it, sessions, OAuth grants with their tokens and
 * remembered consents, pending mailed links (an address change among them), WebAuthn challenges and the API keys it
 * made (they act in its organizations in its name) are removed; the session version moves on, so whatever was issued
 * before stops at its next use. Memberships stay: they open nothing. The address is then proven. The conditional
 * update makes one proof of two at once do it; the other finds the address proven. Its organizations hear it as
 * they hear a reset: user.password.changed and user.email.verified (and 2fa.disabled when a factor went), emitted
 * here for every way a take-over comes, so a caller adds none.
 */
export async function takeOverUnproven(
  ctx: Context,
  tx: Tx,
  userId: string,
  passwordHash: string,
  via: {
    via: 'sso' | 'password_reset' | 'scim';
    organizationId?: string | null;
    connectionId?: string;
    tokenId?: string;
  },
): Promise<TakenOver> {
  const now = ctx.clock.now();
  const [user] = await tx.$queryRaw<TakenOver['user'][]>`
    update users set password_hash = ${passwordHash}, email_verified = true, updated_at = ${now}::timestamp(3)
    where id = ${userId} and not email_verified
    returning id, email, name, email_verified as "emailVerified", created_at as "createdAt", session_version as "sessionVersion"`;
  if (!user) {
    const proven = await tx.user.findUniqueOrThrow({
      where: { id: userId },
      select: { id: true, email: true, name: true, emailVerified: true, createdAt: true, sessionVersion: true },
    });
    return { user: proven, takenOver: false };
  }
  const [totp] = await tx.$queryRaw<{ confirmed: boolean }[]>`
    delete from totp_factors where user_id = ${userId} returning confirmed_at is not null as confirmed`;
  const passkeys = await tx.passkey.deleteMany({ where: { userId } });
  await tx.recoveryCode.deleteMany({ where: { userId } });
  await tx.webauthnChallenge.deleteMany({ where: { userId } });
  const identities = await tx.ssoIdentity.deleteMany({ where: { userId } });
  // Every session ends as any ending does (a session.revoked event each) and the session version moves on; then every
  // grant, the ones no session recorded too.
  const { ended: sessions, sessionVersion } = await endEverySession(ctx, tx, userId);
  user.sessionVersion = sessionVersion;
  const grants = await revokeGrants(ctx, tx, { userId });
  await tx.oAuthConsent.deleteMany({ where: { userId } });
  await tx.linkToken.updateMany({ where: { userId, endedAt: null }, data: { endedAt: now } });
  const keys = await tx.apiKey.findMany({
    where: { createdById: userId, revokedAt: null },
    select: { organization: { select: { id: true, name: true } } },
  });
  const organizations = new Map(keys.map((k) => [k.organization.id, k.organization]));
  for (const organization of organizations.values())
    await apiKeysFollowCreator(ctx, tx, organization, userId, null, 'account_taken_over');
  const at = { at: now };
  await emitUserEvent(tx, 'user.password.changed', userId, { user }, at);
  await emitUserEvent(tx, 'user.email.verified', userId, { user }, at);
  if (totp?.confirmed || passkeys.count) await emitUserEvent(tx, '2fa.disabled', userId, { user }, at);
  await recordAudit(
    ctx,
    {
      action: 'account.take_over',
      organizationId: via.organizationId ?? null,
      actorId: userId,
      targetType: 'user',
      targetId: userId,
      details: {
        via: via.via,
        ...(via.connectionId ? { connectionId: via.connectionId } : {}),
        ...(via.tokenId ? { tokenId: via.tokenId } : {}),
        passkeys: passkeys.count,
        totp: !!totp,
        identities: identities.count,
        sessions: sessions.length,
        grants,
        apiKeys: keys.length,
      },
    },
    tx,
  );
  return { user, takenOver: true };
}
