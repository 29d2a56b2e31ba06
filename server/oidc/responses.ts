// How OAuth endpoints answer: JSON that is never cached, protocol errors as {error, error_description} with
// the status of server/errors/http.ts, and our own HTML page for errors that must not be redirected.
import type Koa from 'koa';
import { sendError, sendUnavailable } from '../errors/http.ts';
import { classifyError } from '../errors/classify.ts';
import { OAuthError } from '../../schema/modules/oauth/oauth.errors.ts';
import { escapeHtml } from '../../schema/lib/html.ts';

export function noStore(ctx: Koa.Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

export function sendJson(ctx: Koa.Context, body: unknown, status = 200): void {
  noStore(ctx);
  ctx.status = status;
  ctx.body = body;
}

/** Answers OAuth errors, and a database that is unavailable (503), from the wrapped handler; anything else goes
 *  on to the general error middleware. */
export function oauthErrors(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (classifyError(error).kind === 'unavailable') sendUnavailable(ctx);
      else if (error instanceof OAuthError) sendError(ctx, error.code, error.message, { status: error.status });
      else throw error;
      noStore(ctx);
    }
  };
}

export function errorPage(ctx: Koa.Context, error: OAuthError): void {
  ctx.status = 400;
  ctx.type = 'text/html; charset=utf-8';
  noStore(ctx);
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in error</title>
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1f2937}code{background:#f3f4f6;padding:.1rem .3rem}</style></head>
<body><h1>This sign-in request cannot continue</h1><p>${escapeHtml(error.message)}</p>
<p>Error code: <code>${escapeHtml(error.code)}</code></p><p>Go back to the application and try again, or contact its developer.</p></body></html>`;
}
