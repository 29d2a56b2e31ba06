// Tokens carried by mailed links (docs/architecture.md#mail): 256 random bits, stored as SHA-256, single use,
// expiring. Issuing one voids the unused ones of the same person and purpose, in the same statement.
import { Prisma } from '../../db.ts';
import { addSeconds } from '../../lib/clock.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';

/**
 * Reset links issued before this prefix carry `tsr_`, the refresh tokens' prefix: they are still found, since a token
 * is looked up by the hash of its whole value and its purpose, never by its prefix.
 */
const RESET_LINK_PREFIX = 'tsp_';
/** One kind of link: both prove an address, and /verify-email takes either. */
const VERIFICATION_LINK_PREFIX = 'tsv_';

export const LINK_TOKEN_PURPOSES = {
  password_reset: { prefix: RESET_LINK_PREFIX, ttlSeconds: 3600 },
  email_verification: { prefix: VERIFICATION_LINK_PREFIX, ttlSeconds: 24 * 3600 },
  email_change: { prefix: VERIFICATION_LINK_PREFIX, ttlSeconds: 24 * 3600 },
} as const;

export type LinkPurpose = keyof typeof LINK_TOKEN_PURPOSES;

export interface NewLinkToken {
  token: string;
  /** The SQL that voids the older tokens of `userId` for the purpose and inserts this one, as CTEs to add to a statement. */
  ctes: Prisma.Sql;
  expiresAt: Date;
}

/**
 * Holds, until the transaction ends, the right to issue links of `purpose` for `key` (a user id; for a reset, the
 * address). Run before the statement that issues one: a statement's snapshot is taken when it starts, so the one that
 * waited here sees the token a concurrent issuer committed and voids it, and of concurrent requests only the newest
 * link stays live. Without it, each voided only what was committed before both began, and several stayed live.
 */
export const issuingLock = (purpose: LinkPurpose, key: string) =>
  Prisma.sql`select pg_advisory_xact_lock(hashtextextended(${`link:${purpose}:${key}`}, 0))`;

/** A query that gives one user id: `select id from <earlier CTE>`, or `select <id>::text`. */
export const userIdQuery = (id: string) => Prisma.sql`select ${id}::text as id`;

/**
 * A fresh token of `purpose`, and the CTEs that store it for the user the query `owner` gives (userIdQuery, or a
 * select from an earlier CTE): no row is written when it gives none.
 */
export function newLinkToken(
  purpose: LinkPurpose,
  owner: Prisma.Sql,
  email: string | Prisma.Sql,
  now: Date,
): NewLinkToken {
  const { prefix, ttlSeconds } = LINK_TOKEN_PURPOSES[purpose];
  const token = randomToken(prefix);
  const expiresAt = addSeconds(now, ttlSeconds);
  const ctes = Prisma.sql`
    voided as (
      update link_tokens set ended_at = ${now}::timestamp
      where user_id in (${owner}) and purpose = ${purpose} and ended_at is null),
    issued as (
      insert into link_tokens (id, user_id, purpose, token_hash, email, expires_at, created_at)
      select ${uuidv7()}, owner.id, ${purpose}, ${sha256(token)}, ${email}, ${expiresAt}::timestamp, ${now}::timestamp
      from (${owner}) as owner(id))`;
  return { token, ctes, expiresAt };
}

export interface LiveLinkToken {
  id: string;
  userId: string;
  purpose: LinkPurpose;
  email: string;
}

/** The unused, unexpired token of one of `purposes`, or null: a read, to refuse a bad link before slow work. */
export async function findLiveLinkToken(
  db: Pick<Prisma.TransactionClient, 'linkToken'>,
  token: string,
  purposes: readonly LinkPurpose[],
  now: Date,
): Promise<LiveLinkToken | null> {
  const row = await db.linkToken.findFirst({
    where: { tokenHash: sha256(token), purpose: { in: [...purposes] }, endedAt: null, expiresAt: { gt: now } },
    select: { id: true, userId: true, purpose: true, email: true },
  });
  return row as LiveLinkToken | null;
}

/** Uses the token: of any number of concurrent uses, exactly one gets it back; the others get null. */
export async function claimLinkToken(
  tx: Pick<Prisma.TransactionClient, '$queryRaw'>,
  token: string,
  purposes: readonly LinkPurpose[],
  now: Date,
): Promise<LiveLinkToken | null> {
  const [row] = await tx.$queryRaw<{ id: string; user_id: string; purpose: LinkPurpose; email: string }[]>`
    update link_tokens set ended_at = ${now}::timestamp
    where token_hash = ${sha256(token)} and purpose = any(${[...purposes]}::text[]) and ended_at is null and expires_at > ${now}::timestamp
    returning id, user_id, purpose, email`;
  return row ? { id: row.id, userId: row.user_id, purpose: row.purpose, email: row.email } : null;
}
