// The catalog's refusals, each with the stable code of its HTTP status (403 forbidden, 409 conflict).
import { ConflictError, ForbiddenError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** Platform administrators write the catalog (docs/architecture.md#subscriptions-seats-and-licenses). */
export class CatalogWriterOnlyError extends ForbiddenError {
  constructor() {
    super('Only platform administrators change the product catalog');
  }
}

export class SlugTakenError extends ConflictError {
  constructor(slug: string) {
    super(`A product with the slug "${slug}" already exists`);
  }
}

export class ProductInUseError extends ConflictError {
  constructor() {
    super('The product has subscriptions: it cannot be deleted while any subscription refers to it');
  }
}

/** The codes a UserError of this domain's mutations can carry (ProductsErrorCode in schema.graphql). */
export const PRODUCTS_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request', 'conflict'];
