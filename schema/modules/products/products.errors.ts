// The catalog's refusals, each with the stable code of its HTTP status (409 conflict).
import { ConflictError } from '../../errors/index.ts';

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
