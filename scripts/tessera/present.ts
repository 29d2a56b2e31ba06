// Readable text for the records the commands print. Tables show short ids (shortId); `get` and --json the whole id.
import type { Organization, Product, Subscription } from './answers.ts';
import { record, shortId, table } from './cli.ts';

/** "2030-01-01T00:00:00.000Z" as "2030-01-01", for tables; `get` shows the whole time. */
const day = (iso: string | null | undefined) => iso?.slice(0, 10) ?? '-';

export const productText = (p: Product) =>
  record([
    ['id', p.id],
    ['name', p.name],
    ['slug', p.slug],
    ['description', p.description || '-'],
    ['features', p.features],
    ['created', p.createdAt],
    ['updated', p.updatedAt],
  ]);

export const productsTable = (products: Product[]) =>
  table(
    products.map((p) => [p.slug, p.name, p.features.join(','), shortId(p.id)]),
    ['SLUG', 'NAME', 'FEATURES', 'ID'],
  );

export const organizationText = (o: Organization) =>
  record([
    ['id', o.id],
    ['name', o.name],
    ['your role', o.role],
    ['operator', o.is_operator ? 'yes' : 'no'],
    ['created', o.created_at],
    ['updated', o.updated_at],
  ]);

export const organizationsTable = (orgs: Organization[]) =>
  table(
    orgs.map((o) => [o.name, o.role ?? '-', o.is_operator ? 'yes' : 'no', day(o.created_at), shortId(o.id)]),
    ['NAME', 'ROLE', 'OPERATOR', 'CREATED', 'ID'],
  );

export const subscriptionText = (s: Subscription) =>
  record([
    ['id', s.id],
    ['organization', s.organization_id],
    ['product', s.product_id],
    ['status', s.status],
    ['seats', `${s.assigned_seats} of ${s.total_seats} assigned`],
    ['price per seat', s.price_per_seat],
    ['billing cycle', s.billing_cycle],
    ['end date', s.end_date],
    ['created', s.created_at],
    ['updated', s.updated_at],
  ]);

export const subscriptionsTable = (subs: Subscription[]) =>
  table(
    subs.map((s) => [
      shortId(s.id),
      shortId(s.organization_id),
      shortId(s.product_id),
      s.status,
      `${s.assigned_seats}/${s.total_seats}`,
      String(s.price_per_seat),
      s.billing_cycle,
      day(s.end_date),
    ]),
    ['ID', 'ORGANIZATION', 'PRODUCT', 'STATUS', 'SEATS', 'PRICE', 'CYCLE', 'END DATE'],
  );
