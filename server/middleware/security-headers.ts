// Headers every response carries: no framing (clickjacking on sign-in and consent), no MIME sniffing, and no
// Referer leaving the site (authorization URLs, codes and consent requests travel in query strings; not
// no-referrer, under which browsers send Origin: null on same-origin form posts and CSRF checks fail). Set
// before the handler runs, so the portal (which writes the response itself) carries them too; a page may
// replace the CSP with a stricter one.
import type Koa from 'koa';

export function securityHeaders(): Koa.Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('Content-Security-Policy', "frame-ancestors 'none'");
    await next();
  };
}
