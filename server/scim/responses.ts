// What /scim/v2 answers: application/scim+json bodies and the SCIM error schema (RFC 7644 3.12), with one table
// from a refusal to its status and scimType (docs/architecture.md#directory-provisioning).
import type Koa from 'koa';
import type { Logger } from 'pino';
import { RateLimitedError, UserError } from '../../schema/errors/index.ts';
import { ServiceUnavailableError } from '../../schema/errors/unavailable.ts';
import { classifyError } from '../errors/classify.ts';
import { STATUS_BY_CODE } from '../errors/http.ts';
import type { RequestState } from '../middleware/request.ts';
import { ScimHttpError } from './scim.errors.ts';

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const SEARCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** How a request ended, as the directory's log keeps it. */
export interface ScimOutcome {
  status: number;
  scimType?: string;
  detail?: string;
}

export function sendScim(ctx: Koa.Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.body = JSON.stringify(body);
  ctx.set('Content-Type', SCIM_CONTENT_TYPE);
}

function sendScimError(ctx: Koa.Context, outcome: ScimOutcome): void {
  const body: Record<string, unknown> = { schemas: [ERROR_SCHEMA], status: String(outcome.status) };
  if (outcome.scimType) body.scimType = outcome.scimType;
  // A detail may quote the request (an attribute's name): never at great length.
  if (outcome.detail)
    body.detail = outcome.detail.length > 1000 ? `${outcome.detail.slice(0, 1000)}...` : outcome.detail;
  sendScim(ctx, outcome.status, body);
}

/** The status of a service's refusal: its code's, SCIM's own reading for the codes the directory services use. */
function statusOf(code: string): number {
  if (code === 'invalid_request') return 400;
  if (code === 'conflict') return 409;
  return STATUS_BY_CODE[code] ?? 400;
}

/**
 * Answers `error` in the SCIM error schema and says how the request ended. A service's DomainError carries its
 * status through its code and its SCIM type as `scimType` (directory.errors.ts, scim.errors.ts); a 400 without one is invalidValue.
 * Anything unexpected is logged and answered 500 without detail (docs/architecture.md#errors).
 */
export function answerError(ctx: Koa.Context, error: unknown, logger: Logger): ScimOutcome {
  if (error instanceof ScimHttpError) {
    for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
    const outcome = { status: error.status, scimType: error.scimType, detail: error.message };
    sendScimError(ctx, outcome);
    return outcome;
  }
  const what = classifyError(error);
  const requestId = (ctx.state.request as RequestState | undefined)?.requestId;
  let outcome: ScimOutcome;
  switch (what.kind) {
    case 'domain': {
      const domain = what.error;
      const status = statusOf(domain.code);
      const scimType = (domain as { scimType?: unknown }).scimType;
      outcome = { status, detail: domain.message };
      if (typeof scimType === 'string') outcome.scimType = scimType;
      else if (status === 400) outcome.scimType = 'invalidValue';
      const [problem] = domain instanceof UserError ? domain.details : [];
      if (problem && !outcome.detail) outcome.detail = problem.message;
      if (domain instanceof RateLimitedError || domain instanceof ServiceUnavailableError)
        ctx.set('Retry-After', String(domain.retryAfterSeconds));
      break;
    }
    case 'request':
      outcome = { status: statusOf(what.code), detail: what.message };
      if (outcome.status === 400) outcome.scimType = 'invalidSyntax';
      break;
    case 'unavailable':
      logger.warn({ err: error, requestId }, 'database unavailable');
      ctx.set('Retry-After', String(what.error.retryAfterSeconds));
      outcome = { status: 503, detail: what.error.message };
      break;
    case 'internal':
      logger.error({ err: error, requestId }, 'unhandled error in /scim/v2');
      outcome = { status: 500 };
  }
  sendScimError(ctx, outcome);
  return outcome;
}
