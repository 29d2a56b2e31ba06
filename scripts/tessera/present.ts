// Readable text for the records the commands print.
import { record, table } from './cli.ts';

export const productText = (p: any) =>
  record([['id', p.id], ['name', p.name], ['slug', p.slug], ['description', p.description || '-'], ['features', p.features], ['created', p.createdAt], ['updated', p.updatedAt]]);

export const productsTable = (products: any[]) =>
  table(products.map((p) => [p.slug, p.name, p.features.join(','), p.id]), ['SLUG', 'NAME', 'FEATURES', 'ID']);

export const subscriptionText = (s: any) =>
  record([
    ['id', s.id], ['organization', s.organization_id], ['product', s.product_id], ['status', s.status],
    ['seats', `${s.assigned_seats} of ${s.total_seats} assigned`], ['price per seat', s.price_per_seat], ['billing cycle', s.billing_cycle],
    ['end date', s.end_date], ['created', s.created_at], ['updated', s.updated_at],
  ]);

export const subscriptionsTable = (subs: any[]) =>
  table(
    subs.map((s) => [s.id, s.organization_id, s.product_id, s.status, `${s.assigned_seats}/${s.total_seats}`, String(s.price_per_seat), s.billing_cycle, s.end_date ?? '-']),
    ['ID', 'ORGANIZATION', 'PRODUCT', 'STATUS', 'SEATS', 'PRICE', 'CYCLE', 'END DATE'],
  );
