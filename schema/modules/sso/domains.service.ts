// Domains an organization proves it controls, for single sign-on (docs/architecture.md#single-sign-on): its owners
// add a domain (admins see them), publish the TXT record `_tessera-verification.<domain>` = `tessera-verification=<token>`, and
// ask Tessera to check it. Several organizations may claim a name while it is unproven; once one proves it, nobody
// else can (the partial unique index on verified domains decides a race). Another tenant's domain is not found.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation, type Prisma } from '../../db.ts';
import { ConflictError, NotFoundError } from '../../errors/index.ts';
import { organizationInScope, requireOrgRole, requireOwner } from '../../auth/access.ts';
import { randomToken } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { lookupTxt, printable, SHOWN_VALUES, shownValues } from './dns.ts';
import { DomainTakenError, SignInOwnersOnlyError, VerificationFailedError } from './sso.errors.ts';

export type Domain = Prisma.DomainGetPayload<object>;

/** Where the proof goes and what it says (DNS names are case-insensitive, RFC 4343; the value is compared exactly). */
export const VERIFICATION_PREFIX = '_tessera-verification';
export const verificationName = (domain: string) => `${VERIFICATION_PREFIX}.${domain}`;
export const verificationValue = (token: string) => `tessera-verification=${token}`;

/** The record a person publishes to prove the domain. */
export const verificationOf = (d: Pick<Domain, 'domain' | 'verificationToken'>) => ({
  type: 'TXT' as const,
  name: verificationName(d.domain),
  value: verificationValue(d.verificationToken),
});

const MAX_DOMAIN = 253; // RFC 1035 2.3.4, without the root's trailing dot
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const DOMAIN_RULE = 'must be a domain name such as example.com';

/**
 * What the person typed, as the name DNS knows: trimmed, lower-case, an IDN in punycode (UTS #46 through
 * node:url's domainToASCII), without the root's trailing dot. Only a plain host name of two labels or more passes:
 * no URL, port, path, wildcard or IP address, each label letters, digits and inner hyphens (RFC 1123 2.1).
 */
function normalizeDomain(raw: string): { domain: string } | { problem: string } {
  let value = raw.trim().toLowerCase();
  if (value === '') return { problem: 'must not be empty' };
  if (value.length > 1000) return { problem: `must be at most ${MAX_DOMAIN} characters` };
  if (/\p{Cc}/u.test(value)) return { problem: 'must not contain control characters' };
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(value))
    return { problem: 'must be a domain name, not a URL: leave out the scheme (https://) and any path' };
  if (/\.$/.test(value)) value = value.slice(0, -1);
  const lastLabel = value.slice(value.lastIndexOf('.') + 1);
  // The URL standard reads a numeric last label as IPv4 (1.2.3 is 1.2.0.3, 0x7f.1 is 127.0.0.1).
  if (isIP(value) || isIP(value.replace(/^\[(.*)\]$/, '$1')) || /^(\d+|0x[0-9a-f]*)$/.test(lastLabel)) {
    return { problem: 'must be a domain name, not an IP address' };
  }
  if (value.includes('*'))
    return {
      problem:
        'must be a domain name without a wildcard (*): prove each domain the addresses use (example.com, eu.example.com)',
    };
  if (/[/?#\\]/.test(value)) return { problem: 'must be a domain name without a path' };
  if (value.includes(':')) return { problem: 'must be a domain name without a port' };
  // Percent-escapes would be decoded by domainToASCII; @ and spaces are parts of URLs and addresses, not names.
  if (/[%@\s]/u.test(value)) return { problem: DOMAIN_RULE };
  const ascii = domainToASCII(value);
  if (ascii === '') return { problem: DOMAIN_RULE };
  if (ascii.length > MAX_DOMAIN) return { problem: `must be at most ${MAX_DOMAIN} characters` };
  const labels = ascii.split('.');
  if (labels.length < 2) return { problem: 'must have at least two labels, such as example.com' };
  if (!labels.every((label) => LABEL.test(label))) {
    return { problem: `${DOMAIN_RULE}: each label letters, digits and inner hyphens, at most 63 characters` };
  }
  return { domain: ascii };
}

const domainField = z.string({ message: 'must be a string' }).transform((raw, ctx) => {
  const result = normalizeDomain(raw);
  if ('problem' in result) {
    ctx.addIssue({ code: 'custom', message: result.problem });
    return z.NEVER;
  }
  return result.domain;
});

const addInput = z.object({ domain: domainField });

/** The domain, to change, if the caller is an owner of its organization; with no role there it does not exist. */
async function ownDomain(ctx: Context, id: unknown): Promise<Domain> {
  const domainId = parseInput(fields.id, id);
  const record = await ctx.db.domain.findUnique({ where: { id: domainId } });
  if (!record) throw new NotFoundError('Domain');
  await requireOwner(ctx, record.organizationId, SignInOwnersOnlyError, 'Domain');
  return record;
}

export async function listDomains(ctx: Context, organizationId?: string | null, page?: PageInput) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  const { limit, args } = paged(page, { organizationId: orgId });
  return toPage(await ctx.db.domain.findMany(args), limit);
}

export async function addDomain(
  ctx: Context,
  organizationId: string | null | undefined,
  input: unknown,
): Promise<Domain> {
  const { domain } = parseInput(addInput, input);
  const orgId = organizationInScope(ctx, organizationId);
  await requireOwner(ctx, orgId, SignInOwnersOnlyError);
  try {
    return await ctx.db.$transaction(async (tx) => {
      const record = await tx.domain.create({
        data: {
          id: uuidv7(),
          organizationId: orgId,
          domain,
          verificationToken: randomToken('', 24),
          createdAt: ctx.clock.now(),
        },
      });
      await recordAudit(
        ctx,
        { action: 'domain.add', organizationId: orgId, targetType: 'domain', targetId: record.id, details: { domain } },
        tx,
      );
      return record;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError(`${domain} is already a domain of this organization`);
    throw error;
  }
}

/** A failed check leaves its reason in the audit trail (and what was found, as the message shows it). */
const auditFailure = (ctx: Context, record: Domain, details: Record<string, unknown>, tx?: Prisma.TransactionClient) =>
  recordAudit(
    ctx,
    {
      action: 'domain.verify',
      outcome: 'failure',
      organizationId: record.organizationId,
      targetType: 'domain',
      targetId: record.id,
      details: { domain: record.domain, ...details },
    },
    tx,
  );

/**
 * Checks the TXT record. The lookup runs with no transaction open, since an answer may take seconds
 * (docs/architecture.md#hot-paths: nothing slow while a transaction is open); then one conditional update marks the
 * domain verified. Of organizations proving the same name at once, the partial unique index lets exactly one commit:
 * the others are told the domain is taken. An already verified domain answers as it is.
 */
export async function verifyDomain(ctx: Context, id: unknown): Promise<Domain> {
  const record = await ownDomain(ctx, id);
  if (record.verifiedAt) return record;
  const taken = await ctx.db.domain.findFirst({
    where: { domain: record.domain, verifiedAt: { not: null }, organizationId: { not: record.organizationId } },
    select: { id: true },
  });
  if (taken) {
    await auditFailure(ctx, record, { reason: 'domain_taken' });
    throw new DomainTakenError(record.domain);
  }

  const { name, value } = verificationOf(record);
  const answer = await lookupTxt(ctx.settings, name);
  const now = ctx.clock.now();
  if (!('values' in answer) || !answer.values.some((v) => v.trim() === value)) {
    const found = 'values' in answer ? answer.values : [];
    const problem = 'problem' in answer ? answer.problem : found.length ? `found ${shownValues(found)}` : undefined;
    const error = new VerificationFailedError(name, value, found.slice(0, SHOWN_VALUES).map(printable), problem);
    await ctx.db.$transaction(async (tx) => {
      await tx.domain.updateMany({ where: { id: record.id }, data: { checkedAt: now } });
      await auditFailure(ctx, record, { reason: 'verification_failed', found: error.details[0]?.message }, tx);
    });
    throw error;
  }

  try {
    const verified = await ctx.db.$transaction(async (tx) => {
      // Only the request that finds it unverified marks and audits it: a concurrent check of the same row waits for
      // this one's row lock, then finds it verified and answers it.
      const { count } = await tx.domain.updateMany({
        where: { id: record.id, verifiedAt: null },
        data: { verifiedAt: now, checkedAt: now },
      });
      if (count) {
        await recordAudit(
          ctx,
          {
            action: 'domain.verify',
            organizationId: record.organizationId,
            targetType: 'domain',
            targetId: record.id,
            details: { domain: record.domain },
          },
          tx,
        );
      }
      return tx.domain.findUnique({ where: { id: record.id } });
    });
    if (!verified) throw new NotFoundError('Domain');
    return verified;
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    await auditFailure(ctx, record, { reason: 'domain_taken' });
    throw new DomainTakenError(record.domain);
  }
}

export async function deleteDomain(ctx: Context, id: unknown): Promise<Domain> {
  const record = await ownDomain(ctx, id);
  return ctx.db.$transaction(async (tx) => {
    const { count } = await tx.domain.deleteMany({ where: { id: record.id } });
    if (!count) throw new NotFoundError('Domain');
    await recordAudit(
      ctx,
      {
        action: 'domain.delete',
        organizationId: record.organizationId,
        targetType: 'domain',
        targetId: record.id,
        details: { domain: record.domain },
      },
      tx,
    );
    return record;
  });
}
