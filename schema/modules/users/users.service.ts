// Users: profiles, password and address changes (a password change ends every session and token; a new address
// takes effect once proven), and account deletion.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import {
  CurrentPasswordRequiredError,
  UserAdminOnlyError,
  SoleOperatorOwnerError,
  SoleOwnerError,
  WrongCurrentPasswordError,
} from './users.errors.ts';
import { EmailTakenError } from '../accounts/accounts.errors.ts';
import {
  isPlatformAdmin,
  readableOrganizationIdsOf,
  requireActor,
  requireFirstParty,
  requireUserId,
} from '../../auth/access.ts';
import { hashPassword } from '../../lib/crypto.ts';
import { checkAccountPassword } from '../auth/throttle.service.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvent, emitEvents, emitUserEvent } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { createSession } from '../sessions/sessions.service.ts';
import { loginPayload, type LoginResult } from '../auth/auth.service.ts';
import { endMembership } from '../members/members.service.ts';
import { cancelEmailChange, countVerificationMail, mailEmailChangeLink } from '../accounts/accounts.service.ts';
import { forgotPasswordUrl } from '../accounts/links.ts';
import { queueMail } from '../mail/outbox.ts';
import { proofOf, requireFreshProof } from '../mfa/mfa.service.ts';

type Tx = Prisma.TransactionClient;

/** Which users the caller may see: everyone for platform admins, else the caller and the members of the
 *  organizations the caller administers. */
async function visibleUsersWhere(ctx: Context): Promise<Prisma.UserWhereInput> {
  const actor = requireActor(ctx);
  if (await isPlatformAdmin(ctx)) return {};
  const administered =
    actor.kind === 'apiKey'
      ? actor.role === 'member'
        ? []
        : [actor.organizationId]
      : (
          await ctx.db.membership.findMany({
            where: {
              userId: actor.userId ?? '',
              role: { in: ['owner', 'admin'] },
              ...(actor.kind === 'oauth' ? { organizationId: actor.organizationId } : {}),
            },
            select: { organizationId: true },
          })
        ).map((m) => m.organizationId);
  // Not those holding the caller back until it sets up a second factor.
  const readable = new Set(await readableOrganizationIdsOf(ctx));
  const self = actor.kind === 'apiKey' ? [] : [{ id: actor.userId ?? '' }];
  return {
    OR: [...self, { memberships: { some: { organizationId: { in: administered.filter((id) => readable.has(id)) } } } }],
  };
}

export async function getMe(ctx: Context) {
  return ctx.db.user.findUniqueOrThrow({ where: { id: requireUserId(ctx) } });
}

export async function listUsers(ctx: Context, page?: PageInput) {
  const { limit, args } = paged(page, await visibleUsersWhere(ctx));
  return toPage(await ctx.db.user.findMany(args), limit);
}

export async function getUser(ctx: Context, id: string) {
  const user = await ctx.db.user.findFirst({ where: { AND: [{ id }, await visibleUsersWhere(ctx)] } });
  if (!user) throw new NotFoundError('User');
  return user;
}

const profileFields = {
  name: fields.name.optional(),
  picture: z.union([fields.httpsUrl, z.null()]).optional(),
};

const updateMeInput = z
  .object({
    ...profileFields,
    email: fields.email.optional(),
    currentPassword: z.string().max(256).optional(),
    password: fields.password.optional(),
  })
  .strict();

export interface UpdateMeResult {
  user: Awaited<ReturnType<typeof getMe>>;
  /** A fresh session for the caller when the password changed (all others stopped working). */
  login: LoginResult | null;
}

export async function updateMe(ctx: Context, input: unknown): Promise<UpdateMeResult> {
  const userId = requireUserId(ctx);
  const data = parseInput(updateMeInput, input);
  const user = await ctx.db.user.findUniqueOrThrow({ where: { id: userId } });
  const sensitive = data.password !== undefined || (data.email !== undefined && data.email !== user.email);
  if (sensitive) {
    requireFirstParty(ctx, 'change the e-mail address or password');
    if (!data.currentPassword) {
      throw new CurrentPasswordRequiredError();
    }
    if (!(await checkAccountPassword(ctx, user, data.currentPassword))) {
      await recordAudit(ctx, {
        action: 'user.password.verify',
        outcome: 'failure',
        targetType: 'user',
        targetId: userId,
      });
      throw new WrongCurrentPasswordError();
    }
  }
  if (data.email && data.email !== user.email && (await ctx.db.user.findUnique({ where: { email: data.email } }))) {
    throw new EmailTakenError();
  }
  const passwordHash = data.password ? await hashPassword(data.password) : undefined;
  const newEmail = data.email && data.email !== user.email ? data.email : undefined;
  if (newEmail) await countVerificationMail(ctx, userId);
  return ctx.db
    .$transaction(async (tx) => {
      const updated = await tx.user.update({
        where: { id: userId },
        data: {
          name: data.name,
          picture: data.picture,
          ...(passwordHash ? { passwordHash, sessionVersion: { increment: 1 } } : {}),
        },
      });
      // A new address takes effect once the link mailed to it is used (accounts/accounts.service.ts); asking
      // for the current one again withdraws a pending change.
      if (newEmail) await mailEmailChangeLink(ctx, tx, updated, newEmail);
      else if (data.email) await cancelEmailChange(tx, userId, ctx.clock.now());
      const changed = Object.keys(data).filter((k) => !['currentPassword', 'password', 'email'].includes(k));
      const now = ctx.clock.now();
      const at = { at: now };
      if (changed.length) await emitUserEvent(tx, 'user.updated', userId, { user: updated, changes: changed }, at);
      await recordAudit(
        ctx,
        {
          action: 'user.update',
          targetType: 'user',
          targetId: userId,
          details: { fields: changed, ...(newEmail ? { pendingEmail: newEmail } : {}) },
        },
        tx,
      );
      let login: LoginResult | null = null;
      if (passwordHash) {
        await emitUserEvent(tx, 'user.password.changed', userId, { user: updated }, at);
        await recordAudit(ctx, { action: 'user.password.change', targetType: 'user', targetId: userId }, tx);
        await queueMail(
          tx,
          'password_changed',
          updated.email,
          { name: updated.name, at: now, forgotUrl: forgotPasswordUrl(ctx) },
          now,
        );
        const actor = ctx.actor;
        const issued = await createSession(ctx, tx, userId, updated.sessionVersion, {
          organizationId: actor?.kind === 'user' ? actor.organizationId : undefined,
        });
        login = await loginPayload(tx, issued, userId);
      }
      return { user: updated, login };
    })
    .catch((error: unknown) => {
      // Two people racing for one address both pass the check above; the unique index decides, same answer.
      if (isUniqueViolation(error)) throw new EmailTakenError();
      throw error;
    });
}

const adminUpdateInput = z.object({ ...profileFields, emailVerified: z.boolean().optional() }).strict();

export async function updateUser(ctx: Context, id: string, input: unknown) {
  const target = await getUser(ctx, id);
  const self = ctx.actor?.kind !== 'apiKey' && ctx.actor?.userId === id;
  if (!self && !(await isPlatformAdmin(ctx))) throw new UserAdminOnlyError('change other users');
  const data = parseInput(adminUpdateInput, input);
  if (data.emailVerified !== undefined) {
    // A proven address is what joins a connection's or a platform provider's sign-in to the account
    // (docs/architecture.md#managed-accounts): a way in, which an app's token does not decide.
    requireFirstParty(ctx, 'mark e-mail addresses verified');
    if (!(await isPlatformAdmin(ctx))) throw new UserAdminOnlyError('mark e-mail addresses verified');
  }
  return ctx.db.$transaction(async (tx) => {
    const updated = await tx.user.update({ where: { id: target.id }, data });
    const at = { at: ctx.clock.now() };
    await emitUserEvent(tx, 'user.updated', target.id, { user: updated, changes: Object.keys(data) }, at);
    if (data.emailVerified && !target.emailVerified)
      await emitUserEvent(tx, 'user.email.verified', target.id, { user: updated }, at);
    await recordAudit(
      ctx,
      { action: 'user.update', targetType: 'user', targetId: id, details: { fields: Object.keys(data) } },
      tx,
    );
    return updated;
  });
}

/**
 * An organization must keep an owner. The only owner of an organization with other members, or of the
 * operator organization (the platform would have no administrator), cannot leave by deleting the account;
 * an organization nobody else belongs to goes with it. Returns those organizations.
 */
async function soleOwnedOrganizations(tx: Tx, userId: string): Promise<{ id: string; name: string }[]> {
  const owned = await tx.membership.findMany({
    where: { userId, role: 'owner' },
    select: { organization: { select: { id: true, name: true, isOperator: true } } },
  });
  const orphaned: { id: string; name: string }[] = [];
  for (const { organization } of owned) {
    const owners = await tx.membership.count({ where: { organizationId: organization.id, role: 'owner' } });
    if (owners > 1) continue;
    if (organization.isOperator) throw new SoleOperatorOwnerError();
    const members = await tx.membership.count({ where: { organizationId: organization.id } });
    if (members > 1) throw new SoleOwnerError();
    orphaned.push({ id: organization.id, name: organization.name });
  }
  return orphaned;
}

async function deleteAccount(ctx: Context, userId: string) {
  return ctx.db.$transaction(async (tx) => {
    const orphaned = await soleOwnedOrganizations(tx, userId);
    const user = await tx.user.findUniqueOrThrow({ where: { id: userId } });
    const at = { at: ctx.clock.now() };
    // While the user still belongs to its organizations: each of them hears of the deletion.
    await emitUserEvent(tx, 'user.deleted', userId, { user }, at);
    const memberships = await tx.membership.findMany({
      where: { userId },
      include: { organization: { select: { id: true, name: true } } },
    });
    for (const m of memberships) {
      await emitEvents(
        tx,
        ['member.removed', 'organization.member.removed'],
        m.organization,
        { organization: m.organization, user, role: m.role },
        at,
      );
      // The cascade would take the grants and sessions; the API keys the user made outlive it unless ended here.
      await endMembership(ctx, tx, m.organization, userId, 'creator_deleted');
    }
    await tx.user.delete({ where: { id: userId } });
    for (const org of orphaned) {
      await tx.organization.delete({ where: { id: org.id } });
      await emitEvent(tx, 'organization.deleted', org, { organization: org }, at);
    }
    await recordAudit(ctx, { action: 'user.delete', targetType: 'user', targetId: userId }, tx);
    return user;
  });
}

/**
 * Deletes the caller's own account, with a fresh proof (requireFreshProof: the password or a code, counted by the
 * sign-in throttle): a session alone, a stolen one say, must not end the account.
 */
export async function deleteMe(ctx: Context, input: unknown = {}) {
  const userId = requireUserId(ctx);
  await requireFreshProof(ctx, userId, proofOf(input));
  return deleteAccount(ctx, userId);
}

export async function deleteUser(ctx: Context, id: string, input: unknown = {}) {
  const proof = proofOf(input);
  await getUser(ctx, id);
  const self = ctx.actor?.kind !== 'apiKey' && ctx.actor?.userId === id;
  if (!self && !(await isPlatformAdmin(ctx))) throw new UserAdminOnlyError('delete other users');
  // One's own account asks what deleteMe asks, by either route: a session (docs/architecture.md#authorization: an
  // app's token ends no account's credentials) and a fresh proof. A platform administrator's deletion of another, neither.
  if (self) {
    requireFirstParty(ctx, 'delete the account');
    await requireFreshProof(ctx, id, proof);
  }
  return deleteAccount(ctx, id);
}
