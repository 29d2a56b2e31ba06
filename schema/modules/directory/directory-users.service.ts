// Users from a directory (docs/architecture.md#directory-provisioning). A directory user is a person and, while
// active, their membership: made with the role `member` (or what a role group gives), their address verified since
// the directory vouches for it. Deactivating or deleting ends the membership as an admin's removal does (sessions
// there, tokens, API keys, seats); activating again makes a new one, with none of the old tokens.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import { unusablePasswordHash } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields } from '../../lib/input.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { managedIn, managerOf, manages } from '../../auth/managed.ts';
import { endEverySession } from '../sessions/sessions.service.ts';
import { takeOverUnproven } from '../accounts/take-over.ts';
import { admitMember, dismissMember } from '../members/members.service.ts';
import { LastOwnerError } from '../members/members.errors.ts';
import { followGroups } from './group-effects.ts';
import {
  ScimAccountNotManagedError,
  ScimInvalidValueError,
  ScimLastOwnerError,
  ScimUniquenessError,
  ScimVersionConflictError,
} from './directory.errors.ts';
import type {
  DirectoryEmail,
  DirectoryUser,
  DirectoryUserInput,
  ListPage,
  Listed,
  ScimCaller,
  UserWhere,
} from './directory.types.ts';

type Tx = Prisma.TransactionClient;

const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const userInput = z.object({
  userName: text(254).trim().min(1, 'is required'),
  externalId: text(500).nullish(),
  active: z.boolean().optional(),
  displayName: text(200).nullish(),
  givenName: text(200).nullish(),
  familyName: text(200).nullish(),
  emails: z
    .array(z.object({ value: text(254), primary: z.boolean().optional(), type: text(50).optional() }))
    .max(20, 'must hold at most 20 addresses')
    .optional(),
});

/** The input checked, with the primary address the account gets: the primary e-mail, the first, or userName. */
function checked(input: DirectoryUserInput) {
  const parsed = userInput.safeParse(input);
  if (!parsed.success) throw ScimInvalidValueError.first(parsed.error, 'User');
  const data = parsed.data;
  const emails = (data.emails ?? []).map((e) => ({ ...e, value: e.value.trim().toLowerCase() }));
  const candidate = emails.find((e) => e.primary)?.value ?? emails[0]?.value ?? data.userName.toLowerCase();
  const email = fields.email.safeParse(candidate);
  if (!email.success)
    throw new ScimInvalidValueError('emails', 'must hold an e-mail address (or userName must be one)');
  return { ...data, emails, email: email.data };
}

const nameOf = (d: { displayName?: string | null; givenName?: string | null; familyName?: string | null }) =>
  (d.displayName || [d.givenName, d.familyName].filter(Boolean).join(' ')).slice(0, 200);

const VIEW = { groups: { select: { group: { select: { id: true, displayName: true } } } } } as const;
type Row = Prisma.ScimUserGetPayload<{ include: typeof VIEW }>;

const view = (row: Row): DirectoryUser => ({
  id: row.id,
  userName: row.userName,
  externalId: row.externalId,
  active: row.active,
  displayName: row.displayName,
  givenName: row.givenName,
  familyName: row.familyName,
  email: row.email,
  emails: row.emails as unknown as DirectoryEmail[],
  groups: row.groups.map((g) => g.group),
  version: row.version,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
});

export async function listDirectoryUsers(
  ctx: Context,
  caller: ScimCaller,
  page: ListPage<UserWhere>,
): Promise<Listed<DirectoryUser>> {
  const where: UserWhere = { AND: [{ organizationId: caller.organizationId }, page.where] };
  const [totalResults, rows] = await Promise.all([
    ctx.db.scimUser.count({ where }),
    page.count > 0
      ? ctx.db.scimUser.findMany({
          where,
          include: VIEW,
          orderBy: { id: 'asc' },
          skip: Math.max(page.startIndex - 1, 0),
          take: page.count,
        })
      : Promise.resolve([]),
  ]);
  return { totalResults, resources: rows.map(view) };
}

async function findRow(db: Tx | Context['db'], caller: ScimCaller, id: string): Promise<Row> {
  const row =
    id.length <= 100
      ? await db.scimUser.findFirst({ where: { id, organizationId: caller.organizationId }, include: VIEW })
      : null;
  if (!row) throw new NotFoundError('User');
  return row;
}

export async function getDirectoryUser(ctx: Context, caller: ScimCaller, id: string): Promise<DirectoryUser> {
  return view(await findRow(ctx.db, caller, id));
}

/** Runs `work` in a transaction, turning the directory's unique indexes into uniqueness refusals. */
async function writing<T>(ctx: Context, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await ctx.db.$transaction(work);
  } catch (error) {
    if (isUniqueViolation(error)) throw new ScimUniquenessError('userName or externalId');
    if (error instanceof LastOwnerError) throw new ScimLastOwnerError();
    throw error;
  }
}

/**
 * userName (case-insensitively, as its unique index) or externalId already used by another user of the directory. In
 * SQL: Prisma's case-insensitive equals is an ILIKE, where a _ or % in a userName would match other names.
 */
async function refuseTaken(
  tx: Tx,
  caller: ScimCaller,
  data: { userName: string; externalId?: string | null },
  self?: string,
) {
  const [taken] = await tx.$queryRaw<{ userName: string }[]>`
    select user_name as "userName" from scim_users
    where organization_id = ${caller.organizationId} and id <> ${self ?? ''}
      and (lower(user_name) = lower(${data.userName}) or external_id = ${data.externalId ?? null})
    limit 1`;
  if (taken)
    throw new ScimUniquenessError(
      taken.userName.toLowerCase() === data.userName.toLowerCase()
        ? `userName ${data.userName}`
        : `externalId ${data.externalId}`,
    );
}

/**
 * A new directory user: the account with the primary address (an existing one, or a new one with a password nobody
 * knows) and, unless inactive, the membership.
 */
export async function createDirectoryUser(
  ctx: Context,
  caller: ScimCaller,
  input: DirectoryUserInput,
): Promise<DirectoryUser> {
  const data = checked(input);
  const passwordHash = await unusablePasswordHash();
  const now = ctx.clock.now();
  const id = await writing(ctx, async (tx) => {
    await refuseTaken(tx, caller, data);
    const existing = await tx.user.findUnique({
      where: { email: data.email },
      select: { id: true, emailVerified: true },
    });
    const manager = await managerOf(tx, data.email);
    const managed = manager === caller.organizationId;
    // An existing account is linked only by the organization that manages it, and an address of a domain another
    // organization verified is that one's to provision: to anyone else the address is taken.
    if ((existing || manager) && !managed) throw new ScimAccountNotManagedError();
    if (
      existing &&
      (await tx.scimUser.findUnique({
        where: { organizationId_userId: { organizationId: caller.organizationId, userId: existing.id } },
        select: { id: true },
      }))
    ) {
      throw new ScimUniquenessError(`The person with ${data.email}`);
    }
    // An account of its domain whose address nobody proved may have been made by someone else before the domain was
    // verified: the directory vouches for the address, so the account becomes the person's with nothing of its maker's.
    if (existing && !existing.emailVerified)
      await takeOverUnproven(ctx, tx, existing.id, passwordHash, {
        via: 'scim',
        organizationId: caller.organizationId,
        tokenId: caller.tokenId,
      });
    // Only a managing organization's directory vouches for the address; another's makes an account still to prove it.
    const user =
      existing ??
      (await tx.user.create({
        data: { email: data.email, emailVerified: managed, name: nameOf(data), passwordHash },
        select: { id: true },
      }));
    const id = uuidv7(now.getTime());
    await tx.scimUser.create({
      data: {
        id,
        organizationId: caller.organizationId,
        userId: user.id,
        userName: data.userName,
        externalId: data.externalId ?? null,
        active: data.active ?? true,
        displayName: data.displayName ?? null,
        givenName: data.givenName ?? null,
        familyName: data.familyName ?? null,
        email: data.email,
        emails: data.emails,
        createdAt: now,
        updatedAt: now,
      },
    });
    await recordAudit(
      ctx,
      {
        action: 'directory.user.create',
        organizationId: caller.organizationId,
        targetType: 'user',
        targetId: user.id,
        details: { userName: data.userName, tokenId: caller.tokenId },
      },
      tx,
    );
    if (data.active ?? true) await join(ctx, tx, caller, user.id, !existing);
    return id;
  });
  return view(await findRow(ctx.db, caller, id));
}

/** Makes the membership (kept as it is when the person is already a member), then what their groups give. */
async function join(ctx: Context, tx: Tx, caller: ScimCaller, userId: string, created: boolean) {
  const member = await tx.membership.findUnique({
    where: { userId_organizationId: { userId, organizationId: caller.organizationId } },
    select: { id: true },
  });
  if (!member) {
    const organization = await tx.organization.findUniqueOrThrow({
      where: { id: caller.organizationId },
      select: { id: true, name: true },
    });
    await admitMember(ctx, tx, organization, userId, 'member', { via: 'scim', created });
  }
  await followGroups(ctx, tx, caller.organizationId, [userId]);
}

/**
 * PUT, or a PATCH the caller applied to the version it read (refused with ScimVersionConflictError when the user
 * changed since, for the caller to read again). The account's name and address follow the directory's only when the
 * organization manages the account (followProfile); otherwise only the directory's record of the person changes.
 */
export async function replaceDirectoryUser(
  ctx: Context,
  caller: ScimCaller,
  id: string,
  input: DirectoryUserInput,
  expectedVersion?: number,
): Promise<DirectoryUser> {
  const data = checked(input);
  const now = ctx.clock.now();
  await writing(ctx, async (tx) => {
    const row = await findRow(tx, caller, id);
    await refuseTaken(tx, caller, data, row.id);
    const bumped = await tx.scimUser.updateMany({
      where: { id: row.id, version: expectedVersion ?? row.version },
      data: {
        userName: data.userName,
        externalId: data.externalId ?? null,
        active: data.active ?? row.active,
        displayName: data.displayName ?? null,
        givenName: data.givenName ?? null,
        familyName: data.familyName ?? null,
        email: data.email,
        emails: data.emails,
        version: { increment: 1 },
        updatedAt: now,
      },
    });
    if (bumped.count !== 1) throw new ScimVersionConflictError();
    await followProfile(ctx, tx, caller, row, data);
    const active = data.active ?? row.active;
    if (active !== row.active) {
      if (active) await join(ctx, tx, caller, row.userId, false);
      else await leave(ctx, tx, caller, row.userId);
      await recordAudit(
        ctx,
        {
          action: active ? 'directory.user.activate' : 'directory.user.deactivate',
          organizationId: caller.organizationId,
          targetType: 'user',
          targetId: row.userId,
          details: { userName: data.userName, tokenId: caller.tokenId },
        },
        tx,
      );
    }
  });
  return view(await findRow(ctx.db, caller, id));
}

/**
 * The account's name and address as the directory says, when they changed and the organization manages the account
 * (docs/architecture.md#managed-accounts). A new address must be in the organization's domains too, to stay managed
 * and verified (the directory vouches for it); one outside them leaves the account's address as it is.
 */
async function followProfile(ctx: Context, tx: Tx, caller: ScimCaller, row: Row, data: ReturnType<typeof checked>) {
  const user = await tx.user.findUniqueOrThrow({ where: { id: row.userId } });
  const ours = await managedIn(tx, caller.organizationId);
  if (!ours(user.email)) return;
  const changes: Prisma.UserUpdateInput = {};
  const name = nameOf(data);
  if (name && name !== user.name) changes.name = name;
  if (data.email !== user.email && ours(data.email)) {
    if (await tx.user.findUnique({ where: { email: data.email }, select: { id: true } }))
      throw new ScimUniquenessError(`The address ${data.email}`);
    changes.email = data.email;
    changes.emailVerified = true;
  }
  if (!Object.keys(changes).length) return;
  const updated = await tx.user.update({ where: { id: row.userId }, data: changes });
  await emitUserEvent(
    tx,
    'user.updated',
    updated.id,
    { user: updated, changes: Object.keys(changes).filter((k) => k !== 'emailVerified') },
    { at: ctx.clock.now() },
  );
}

/**
 * Ends the membership as an admin's removal does; the last owner stays (ScimLastOwnerError). A person the
 * organization manages is signed out everywhere too: the session version moves on, which ends every session,
 * grant, code and token issued before (docs/architecture.md#identity-sessions-and-tokens). Anyone else keeps their
 * sessions, which then act in no organization.
 */
async function leave(ctx: Context, tx: Tx, caller: ScimCaller, userId: string) {
  await dismissMember(ctx, tx, caller.organizationId, userId, 'scim');
  const user = await tx.user.findUniqueOrThrow({ where: { id: userId }, select: { email: true } });
  if (!(await manages(tx, caller.organizationId, user.email))) return;
  const { ended } = await endEverySession(ctx, tx, userId);
  await recordAudit(
    ctx,
    {
      action: 'auth.sessions.end_all',
      organizationId: caller.organizationId,
      targetType: 'user',
      targetId: userId,
      details: { via: 'scim', sessions: ended.length },
    },
    tx,
  );
}

export async function deleteDirectoryUser(ctx: Context, caller: ScimCaller, id: string): Promise<void> {
  await writing(ctx, async (tx) => {
    const row = await findRow(tx, caller, id);
    if (row.active) await leave(ctx, tx, caller, row.userId);
    await tx.scimUser.delete({ where: { id: row.id } });
    await recordAudit(
      ctx,
      {
        action: 'directory.user.delete',
        organizationId: caller.organizationId,
        targetType: 'user',
        targetId: row.userId,
        details: { userName: row.userName, tokenId: caller.tokenId },
      },
      tx,
    );
  });
}
