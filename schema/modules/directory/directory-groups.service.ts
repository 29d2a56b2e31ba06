// Groups from a directory (docs/architecture.md#directory-provisioning). A change of members is a delta applied under
// the group's row lock, so concurrent PATCHes each add their members; what the group gives (a role, seats) follows
// in the same transaction, and a seat that cannot be given refuses the whole change (the directory retries later,
// the audit log says why).
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { LastOwnerError } from '../members/members.errors.ts';
import { followGroups, recordSeatRefusal } from './group-effects.ts';
import { ScimInvalidValueError, ScimLastOwnerError, ScimNoSeatError, ScimUniquenessError } from './directory.errors.ts';
import type {
  DirectoryGroup,
  DirectoryGroupChange,
  DirectoryGroupInput,
  GroupWhere,
  ListPage,
  Listed,
  ScimCaller,
} from './directory.types.ts';

type Tx = Prisma.TransactionClient;

/** A group of 10,000 members fits; a change beyond that is refused rather than held in memory. */
const MAX_MEMBERS = 10_000;

const ids = z.array(z.string().max(100)).max(MAX_MEMBERS, `must list at most ${MAX_MEMBERS} members`);
const groupInput = z.object({
  displayName: z.string().trim().min(1, 'is required').max(200, 'must be at most 200 characters'),
  externalId: z.string().max(500).nullish(),
  members: ids.optional(),
});
const changeInput = groupInput.partial().extend({ add: ids.optional(), remove: ids.optional() });

function checked<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw ScimInvalidValueError.first(parsed.error, 'Group');
}

const MEMBERS = {
  members: {
    select: { scimUser: { select: { id: true, userName: true, displayName: true } } },
    orderBy: { scimUserId: 'asc' },
  },
} as const;
type Row = Prisma.ScimGroupGetPayload<object> & {
  members?: { scimUser: { id: string; userName: string; displayName: string | null } }[];
};

const view = (row: Row): DirectoryGroup => ({
  id: row.id,
  displayName: row.displayName,
  externalId: row.externalId,
  members: (row.members ?? []).map((m) => m.scimUser),
  version: row.version,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
});

export async function listDirectoryGroups(
  ctx: Context,
  caller: ScimCaller,
  page: ListPage<GroupWhere>,
  withMembers = true,
): Promise<Listed<DirectoryGroup>> {
  const where: GroupWhere = { AND: [{ organizationId: caller.organizationId }, page.where] };
  const [totalResults, rows] = await Promise.all([
    ctx.db.scimGroup.count({ where }),
    page.count > 0
      ? ctx.db.scimGroup.findMany({
          where,
          include: withMembers ? MEMBERS : undefined,
          orderBy: { id: 'asc' },
          skip: Math.max(page.startIndex - 1, 0),
          take: page.count,
        })
      : Promise.resolve([]),
  ]);
  return { totalResults, resources: rows.map(view) };
}

async function findRow(db: Tx | Context['db'], caller: ScimCaller, id: string, withMembers = true): Promise<Row> {
  const row =
    id.length <= 100
      ? await db.scimGroup.findFirst({
          where: { id, organizationId: caller.organizationId },
          include: withMembers ? MEMBERS : undefined,
        })
      : null;
  if (!row) throw new NotFoundError('Group');
  return row;
}

export async function getDirectoryGroup(
  ctx: Context,
  caller: ScimCaller,
  id: string,
  withMembers = true,
): Promise<DirectoryGroup> {
  return view(await findRow(ctx.db, caller, id, withMembers));
}

/**
 * Runs a change in a transaction. A seat refused rolls it all back; the refusal is then recorded for the admins,
 * outside the transaction that is gone, and answered to the directory.
 */
async function writing<T>(ctx: Context, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await ctx.db.$transaction(work, { timeout: 30_000 });
  } catch (error) {
    if (isUniqueViolation(error)) throw new ScimUniquenessError('displayName or externalId');
    if (error instanceof LastOwnerError) throw new ScimLastOwnerError();
    if (error instanceof ScimNoSeatError) await recordSeatRefusal(ctx, error.seat, error.reason);
    throw error;
  }
}

/** displayName (case-insensitively, as its unique index) or externalId used by another group; in SQL, as for users. */
async function refuseTaken(
  tx: Tx,
  caller: ScimCaller,
  data: { displayName?: string; externalId?: string | null },
  self?: string,
) {
  if (data.displayName === undefined && !data.externalId) return;
  const [taken] = await tx.$queryRaw<{ displayName: string }[]>`
    select display_name as "displayName" from scim_groups
    where organization_id = ${caller.organizationId} and id <> ${self ?? ''}
      and (lower(display_name) = lower(${data.displayName ?? null}) or external_id = ${data.externalId ?? null})
    limit 1`;
  if (taken)
    throw new ScimUniquenessError(
      data.displayName !== undefined && taken.displayName.toLowerCase() === data.displayName.toLowerCase()
        ? `displayName ${data.displayName}`
        : `externalId ${data.externalId}`,
    );
}

/** The directory users of the organization with these SCIM ids, as account ids; an unknown id is refused. */
async function usersOf(tx: Tx, caller: ScimCaller, scimIds: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(scimIds)];
  if (!unique.length) return new Map();
  const rows = await tx.scimUser.findMany({
    where: { organizationId: caller.organizationId, id: { in: unique } },
    select: { id: true, userId: true },
  });
  const users = new Map(rows.map((r) => [r.id, r.userId]));
  const missing = unique.find((id) => !users.has(id));
  if (missing !== undefined) {
    throw new ScimInvalidValueError(
      'members',
      `${JSON.stringify(missing.slice(0, 100))} is not a user of this directory`,
    );
  }
  return users;
}

export async function createDirectoryGroup(
  ctx: Context,
  caller: ScimCaller,
  input: DirectoryGroupInput,
): Promise<DirectoryGroup> {
  const data = checked(groupInput, input);
  const now = ctx.clock.now();
  const id = await writing(ctx, async (tx) => {
    await refuseTaken(tx, caller, data);
    const members = await usersOf(tx, caller, data.members ?? []);
    const id = uuidv7(now.getTime());
    await tx.scimGroup.create({
      data: {
        id,
        organizationId: caller.organizationId,
        displayName: data.displayName,
        externalId: data.externalId ?? null,
        createdAt: now,
        updatedAt: now,
      },
    });
    if (members.size)
      await tx.scimGroupMember.createMany({
        data: [...members.keys()].map((scimUserId) => ({ groupId: id, scimUserId })),
      });
    await recordAudit(
      ctx,
      {
        action: 'directory.group.create',
        organizationId: caller.organizationId,
        targetType: 'directory_group',
        targetId: id,
        details: { displayName: data.displayName, members: members.size, tokenId: caller.tokenId },
      },
      tx,
    );
    await followGroups(ctx, tx, caller.organizationId, [...members.values()], { seatRefusal: 'fail' });
    return id;
  });
  return getDirectoryGroup(ctx, caller, id);
}

const memberIds = async (tx: Tx, groupId: string) =>
  (await tx.scimGroupMember.findMany({ where: { groupId }, select: { scimUserId: true } })).map((m) => m.scimUserId);

/**
 * Who a change adds to the group and who it takes out. A replacement (PUT) is compared with every member; a PATCH
 * reads only the members it names and the group's size, so that one member more or less costs the same in a group
 * of ten or of ten thousand. Adds apply before removes, as RFC 7644 3.5.2 applies operations in order.
 */
async function memberDelta(
  tx: Tx,
  groupId: string,
  change: { members?: string[]; add?: string[]; remove?: string[] },
): Promise<{ joined: string[]; left: string[] }> {
  const named = [...(change.members ?? []), ...(change.add ?? []), ...(change.remove ?? [])];
  const before = new Set(
    change.members
      ? await memberIds(tx, groupId)
      : named.length
        ? (
            await tx.scimGroupMember.findMany({
              where: { groupId, scimUserId: { in: [...new Set(named)] } },
              select: { scimUserId: true },
            })
          ).map((m) => m.scimUserId)
        : [],
  );
  const after = new Set(change.members ?? before);
  for (const add of change.add ?? []) after.add(add);
  for (const remove of change.remove ?? []) after.delete(remove);
  const joined = [...after].filter((m) => !before.has(m));
  const left = [...before].filter((m) => !after.has(m));
  if (joined.length) {
    const size = change.members
      ? after.size
      : (await tx.scimGroupMember.count({ where: { groupId } })) + joined.length - left.length;
    if (size > MAX_MEMBERS) throw new ScimInvalidValueError('members', `must list at most ${MAX_MEMBERS} members`);
  }
  return { joined, left };
}

/**
 * PUT or PATCH: a new name, and members replaced or added and removed. Those who joined get what the group gives,
 * those who left lose its seats; a rename moves everyone from one mapping to another. Answers nothing: a PATCH is
 * answered 204, and a PUT reads the group it answers with afterwards (getDirectoryGroup).
 */
export async function changeDirectoryGroup(
  ctx: Context,
  caller: ScimCaller,
  id: string,
  change: DirectoryGroupChange,
): Promise<void> {
  const data = checked(changeInput, change);
  const now = ctx.clock.now();
  await writing(ctx, async (tx) => {
    const found = await findRow(tx, caller, id, false);
    // The group's row lock: concurrent changes of one group take turns, each seeing the members before it.
    await tx.$executeRaw`select 1 from scim_groups where id = ${found.id} for update`;
    await refuseTaken(tx, caller, data, found.id);
    const { joined, left } = await memberDelta(tx, found.id, data);
    const accounts = await usersOf(tx, caller, [...joined, ...left]);
    if (joined.length)
      await tx.scimGroupMember.createMany({
        data: joined.map((scimUserId) => ({ groupId: found.id, scimUserId })),
        skipDuplicates: true,
      });
    if (left.length) await tx.scimGroupMember.deleteMany({ where: { groupId: found.id, scimUserId: { in: left } } });
    const renamed = data.displayName !== undefined && data.displayName !== found.displayName;
    await tx.scimGroup.update({
      where: { id: found.id },
      data: {
        displayName: data.displayName,
        externalId: data.externalId === undefined ? undefined : data.externalId,
        version: { increment: 1 },
        updatedAt: now,
      },
    });
    await recordAudit(
      ctx,
      {
        action: 'directory.group.change',
        organizationId: caller.organizationId,
        targetType: 'directory_group',
        targetId: found.id,
        details: {
          displayName: data.displayName ?? found.displayName,
          joined: joined.length,
          left: left.length,
          ...(renamed ? { renamedFrom: found.displayName } : {}),
          tokenId: caller.tokenId,
        },
      },
      tx,
    );
    // A rename moves everyone from one mapping to another; otherwise only those who joined or left are concerned.
    const affected = renamed ? await usersOf(tx, caller, [...(await memberIds(tx, found.id)), ...left]) : accounts;
    await followGroups(ctx, tx, caller.organizationId, [...affected.values()], {
      left: [found.displayName],
      seatRefusal: 'fail',
    });
  });
}

export async function deleteDirectoryGroup(ctx: Context, caller: ScimCaller, id: string): Promise<void> {
  await writing(ctx, async (tx) => {
    const found = await findRow(tx, caller, id, false);
    await tx.$executeRaw`select 1 from scim_groups where id = ${found.id} for update`;
    const members = await tx.scimGroupMember.findMany({
      where: { groupId: found.id },
      select: { scimUser: { select: { userId: true } } },
    });
    await tx.scimGroup.delete({ where: { id: found.id } });
    await recordAudit(
      ctx,
      {
        action: 'directory.group.delete',
        organizationId: caller.organizationId,
        targetType: 'directory_group',
        targetId: found.id,
        details: { displayName: found.displayName, tokenId: caller.tokenId },
      },
      tx,
    );
    await followGroups(
      ctx,
      tx,
      caller.organizationId,
      members.map((m) => m.scimUser.userId),
      { left: [found.displayName], seatRefusal: 'audit' },
    );
  });
}
