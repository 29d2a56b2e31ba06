// What a user types for a product or an organization, turned into the record the REST routes address: a product by
// its slug or its id, an organization by its id or its name (the README, Command-line tool).
import { ORGANIZATION, PRODUCT, type Product } from './answers.ts';
import type { Api } from './cli.ts';
import { ApiError } from './errors.ts';

/** Tessera's ids are UUIDs; a product slug or an organization name of that shape is read as an id. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The product with the slug or the id `ref`. GET /v1/products/{slug} finds it by slug; the catalog has no route
 * by id, so an id is looked up in the catalog's list. PATCH and DELETE address products by id only.
 */
export async function findProduct(api: Api, ref: string): Promise<Product> {
  try {
    return await api.get(`/v1/products/${encodeURIComponent(ref)}`, PRODUCT);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404 && UUID.test(ref))) throw error;
    const product = (await api.all('/v1/products', 'products', PRODUCT)).find((p) => p.id === ref.toLowerCase());
    if (!product) throw error;
    return product;
  }
}

/** The most near misses an unknown organization name lists. */
const NEAR_MISSES = 10;

/**
 * The id of the organization `ref` names: an id as it is, else the one organization of the caller's (every one,
 * for platform admins) with exactly that name. The list is asked for names containing `ref` in any case
 * (?search=, up to 200 characters, as long as a name), every page of it, and filtered here to the exact name. None
 * is an error that lists those near misses; more than one, an error that lists the namesakes.
 */
export async function organizationId(api: Api, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref.toLowerCase();
  const found = await api.all(
    ref.length <= 200 ? `/v1/organizations?search=${encodeURIComponent(ref)}` : '/v1/organizations',
    'organizations',
    ORGANIZATION,
  );
  const named = found.filter((o) => o.name === ref);
  const [only] = named;
  if (only && named.length === 1) return only.id;
  if (named.length > 1) {
    throw new ApiError(
      409,
      `${named.length} organizations are named "${ref}": give one's id`,
      named.map((o) => ({ path: o.id, message: `created ${o.created_at}` })),
    );
  }
  const near = found.filter((o) => o.name.toLowerCase().includes(ref.toLowerCase()));
  if (!near.length) throw new ApiError(404, `no organization is named "${ref}": give its exact name or its id`);
  const listed = near.slice(0, NEAR_MISSES).map((o) => ({ path: o.id, message: o.name }));
  if (near.length > NEAR_MISSES) listed.push({ path: '…', message: `${near.length - NEAR_MISSES} more` });
  throw new ApiError(
    404,
    `no organization is named exactly "${ref}"; these names contain it: give one exactly, or its id`,
    listed,
  );
}
