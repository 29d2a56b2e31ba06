// Webhooks' refusals, each with the stable code of its HTTP status (409 conflict).
import { ConflictError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** The organization has as many webhooks as WEBHOOK_LIMIT_PER_ORGANIZATION allows. */
export class WebhookLimitError extends ConflictError {
  constructor(limit: number) {
    super(`This organization has ${limit} webhooks, the most allowed; delete one first`);
  }
}

/** The codes a UserError of this domain's mutations can carry (WebhooksErrorCode in schema.graphql). */
export const WEBHOOKS_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request', 'conflict'];
