// The absolute links mails carry, from BASE_URL: the portal pages that take each token.
import type { Context } from '../../context.ts';

/** Takes the issuer rather than a request's context: the worker writes reset links too. */
export const resetPasswordUrl = (issuer: string, token: string) =>
  `${issuer}/reset-password?token=${encodeURIComponent(token)}`;
export const forgotPasswordUrl = (ctx: Context) => `${ctx.settings.issuer()}/forgot-password`;
export const verifyEmailUrl = (ctx: Context, token: string) =>
  `${ctx.settings.issuer()}/verify-email?token=${encodeURIComponent(token)}`;
