// /sso/{connection id}/*: the browser's way through an organization's identity provider (docs/architecture.md#single-sign-on).
// start sends it to the provider, callback (OpenID Connect, GitHub) and acs (SAML) bring it back signed in, and
// metadata is the SAML service provider's description. Each step parses, calls one SSO service directly (as
// server/oidc does) and maps the result; a refusal ends on /login with its reason, which the page words (never text
// from the request or the provider).
import Router, { type RouterContext, type RouterMiddleware } from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type Koa from 'koa';
import type { ContextBase, Context } from '../../schema/context.ts';
import { makeContext } from '../../schema/context.ts';
import { DomainError } from '../../schema/errors/index.ts';
import { requireTokenScope } from '../../schema/auth/access.ts';
import { API_SCOPE } from '../../schema/auth/scopes.ts';
import { expected } from '../../schema/lib/expected.ts';
import { completeSsoSignIn, samlMetadata, startSsoSignIn } from '../../schema/modules/sso/sso.service.ts';
import { SsoSignInError } from '../../schema/modules/sso/sso.errors.ts';
import { requireStorable } from '../middleware/input-guard.ts';
import { actorMiddleware } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { sessionCookieAttributes, type SessionCookie } from '../portal-contract.ts';
import { noStore } from '../oidc/responses.ts';

/** Binds a sign-in to the browser that started it, for its connection's paths only. */
const SSO_COOKIE = 'tessera_sso';
/**
 * What the sign-in is for, when not for signing in: `link` (connecting a provider to an account) or `test` (an
 * admin's test). A refusal then ends where that started, the security page or the single sign-on settings, rather
 * than on /login, which sends a signed-in person away before its message is read.
 */
const MODE_COOKIE = 'tessera_sso_mode';
const REFUSAL_PAGES = new Map<string, (reason: string) => string>([
  ['link', (reason) => `/portal/security?${new URLSearchParams({ link_error: reason })}`],
  ['test', (reason) => `/admin/settings/sso?${new URLSearchParams({ test_error: reason })}`],
]);

const ID = /^[A-Za-z0-9-]{1,100}$/;

export function ssoRouter(base: ContextBase, cookie: SessionCookie, limits: Koa.Middleware): Router {
  const router = new Router({ prefix: '/sso/:id' });
  const form = bodyParser({ enableTypes: ['form'], formLimit: '1mb', encoding: 'utf-8' });
  const anonymous = (ctx: Koa.Context): Context => makeContext(base, null, ctx.state.request as RequestState);
  const cookiePath = (id: string) => `/sso/${id}`;
  /** The connection's id, past the check of its form that every step has passed (router.use below). */
  const connectionId = (ctx: RouterContext) => expected(ctx.params.id, 'the connection id of /sso/:id');

  const clearCookies = (ctx: RouterContext) => {
    // An id that is no id (a NUL, a slash) names no cookie path: there is then no cookie of ours to clear.
    const id = ctx.params.id ?? '';
    if (!ID.test(id)) return;
    for (const name of [SSO_COOKIE, MODE_COOKIE])
      ctx.cookies.set(name, null, { ...sessionCookieAttributes(cookie), path: cookiePath(id) });
  };

  const failed = (ctx: RouterContext, reason: string, mode: string | null) => {
    noStore(ctx);
    clearCookies(ctx);
    const word = reason.replace(/[^a-z_]/g, '').slice(0, 40) || 'sso_failed';
    const page = mode === null ? undefined : REFUSAL_PAGES.get(mode);
    ctx.status = 303;
    ctx.redirect(page ? page(word) : `/login?${new URLSearchParams({ sso_error: word })}`);
  };

  /**
   * A refusal ends on /login (or where the sign-in started): a refused sign-in with its reason, any other refusal
   * (input no service can take, an unknown connection) with its code.
   */
  const attempt = async <T>(ctx: RouterContext, work: () => Promise<T>, mode: string | null): Promise<T | null> => {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === 'service_unavailable') throw error;
      const refused = error instanceof SsoSignInError ? error : null;
      // The stored request's purpose, when the refusal came after it was found, is surer than the cookie's.
      failed(
        ctx,
        error.code === 'not_found' ? 'unknown_connection' : (refused?.reason ?? error.code),
        refused?.purpose ?? mode,
      );
      return null;
    }
  };

  router.use(async (ctx, next) => {
    if (!ID.test(ctx.params.id ?? '')) return failed(ctx, 'unknown_connection', null);
    await next();
  });
  // The rate limits count by the request's context: anonymous but for the start, which reads the session.
  const asAnonymous: Koa.Middleware = async (ctx, next) => {
    ctx.state.tessera = anonymous(ctx);
    await next();
  };

  // An admin's test sign-in and connecting a provider to an account need the session: the only step that reads one.
  router.get('/start', actorMiddleware(base), limits, async (ctx) => {
    const id = connectionId(ctx);
    const query = ctx.query;
    const one = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const input = {
      connectionId: id,
      returnTo: one(query.return_to),
      loginHint: one(query.login_hint),
      test: query.test === '1',
      link: query.link === '1',
    };
    const mode = input.link ? 'link' : input.test ? 'test' : null;
    const context = ctx.state.tessera as Context;
    const result = await attempt(
      ctx,
      () => {
        // An app's access token acts only with the api scope, as over GraphQL (docs/architecture.md#authorization).
        requireTokenScope(context, API_SCOPE);
        requireStorable([[input, '']]);
        return startSsoSignIn(context, input);
      },
      mode,
    );
    if (!result) return;
    noStore(ctx);
    const until = { ...sessionCookieAttributes(cookie, new Date(result.expiresAt)), path: cookiePath(id) };
    ctx.cookies.set(SSO_COOKIE, result.browserToken, until);
    ctx.cookies.set(MODE_COOKIE, mode, until);
    ctx.status = 303;
    ctx.redirect(result.url);
  });

  const complete =
    (answer: (ctx: RouterContext) => Record<string, unknown>): RouterMiddleware =>
    async (ctx) => {
      const input = {
        connectionId: connectionId(ctx),
        browserToken: ctx.cookies.get(SSO_COOKIE) ?? null,
        ...answer(ctx),
      };
      const result = await attempt(
        ctx,
        () => {
          requireStorable([[input, '']]);
          return completeSsoSignIn(anonymous(ctx), input);
        },
        ctx.cookies.get(MODE_COOKIE) ?? null,
      );
      if (!result) return;
      noStore(ctx);
      clearCookies(ctx);
      ctx.status = 303;
      if (result.kind === 'tested')
        return ctx.redirect(`/admin/settings/sso/test/${encodeURIComponent(result.resultId)}`);
      if (result.kind === 'linked') return ctx.redirect('/portal/security?linked=1');
      const { login, returnTo } = result;
      ctx.cookies.set(cookie.name, login.token, {
        ...sessionCookieAttributes(cookie, new Date(login.expiresAt)),
        overwrite: true,
      });
      // Without a place to go, /login sends a signed-in person to their home; an organization that requires a second
      // factor first has them set one up, as after a password.
      const next = returnTo ?? '/login';
      ctx.redirect(
        login.mfaEnrollmentRequired ? `/portal/security?${new URLSearchParams({ enrol: '1', return_to: next })}` : next,
      );
    };

  router.get(
    '/callback',
    asAnonymous,
    limits,
    complete((ctx) => ({
      state: typeof ctx.query.state === 'string' ? ctx.query.state : null,
      callbackUrl: `${base.settings.issuer()}${ctx.originalUrl}`,
    })),
  );

  router.post(
    '/acs',
    asAnonymous,
    limits,
    form,
    complete((ctx) => {
      const body = (ctx.request.body ?? {}) as Record<string, unknown>;
      return {
        state: typeof body.RelayState === 'string' ? body.RelayState : null,
        samlResponse: typeof body.SAMLResponse === 'string' ? body.SAMLResponse : null,
      };
    }),
  );

  router.get('/metadata', asAnonymous, limits, async (ctx) => {
    const metadata = await samlMetadata(ctx.state.tessera as Context, connectionId(ctx));
    if (!metadata) throw new DomainError('not_found', 'No SAML connection here');
    ctx.type = 'application/samlmetadata+xml';
    ctx.body = metadata;
  });

  return router;
}
