// The directory's requests and how each ended, for its admins to read (docs/architecture.md#directory-provisioning).
// One insert per request, never an update of a shared row (docs/architecture.md#hot-paths); the hourly clean-up
// keeps the last ones.
import type { Context } from '../../context.ts';
import { organizationInScope, requireOrgRole } from '../../auth/access.ts';
import { uuidv7 } from '../../lib/ids.ts';
import type { ScimCaller } from './directory.types.ts';

export interface ScimRequestOutcome {
  method: string;
  /** The path without its query. */
  path: string;
  status: number;
  scimType?: string | null;
  detail?: string | null;
}

const MAX_TEXT = 500;

/** Text as a column can hold it: no NUL, no lone surrogate, at most 500 characters. */
function storable(text: string, max = MAX_TEXT): string {
  return text.replaceAll('\u0000', '').toWellFormed().slice(0, max);
}

export async function recordScimRequest(ctx: Context, caller: ScimCaller, outcome: ScimRequestOutcome): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db.scimRequest.create({
    data: {
      id: uuidv7(now.getTime()),
      organizationId: caller.organizationId,
      tokenId: caller.tokenId,
      method: storable(outcome.method, 10),
      path: storable(outcome.path),
      status: outcome.status,
      scimType: outcome.scimType ? storable(outcome.scimType, 50) : null,
      detail: outcome.detail ? storable(outcome.detail) : null,
      createdAt: now,
    },
  });
}

/** The directory's last requests, newest first, for the admins to see why someone did not arrive. */
export async function listScimRequests(ctx: Context, organizationId?: string | null, limit = 100) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  return ctx.db.scimRequest.findMany({
    where: { organizationId: orgId },
    orderBy: { id: 'desc' },
    take: Math.min(Math.max(limit, 1), 100),
  });
}
