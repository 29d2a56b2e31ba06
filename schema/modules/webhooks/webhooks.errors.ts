// Webhooks' refusals, each with the stable code of its HTTP status (409 conflict).
import { ConflictError } from '../../errors/index.ts';

/** The organization has as many webhooks as WEBHOOK_LIMIT_PER_ORGANIZATION allows. */
export class WebhookLimitError extends ConflictError {
  constructor(limit: number) {
    super(`This organization has ${limit} webhooks, the most allowed; delete one first`);
  }
}
