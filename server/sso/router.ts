// /sso/{connection id}/*: the browser's way through an organization's identity provider (docs/architecture.md#single-sign-on).
// start sends it to the provider, callback (OpenID Connect, GitHub) and acs (SAML) bring it back signed in, and
// metadata is the SAML service provider's description. Each step parses, runs one operation and maps the result;
// a refusal ends on /login with its reason, which the page words (never text from the request or the provider).
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type Koa from 'koa';
import type { ContextBase, Context } from '../../schema/context.ts';
import { makeContext } from '../../schema/context.ts';
import { DomainError, UserError } from '../../schema/errors/index.ts';
import type { Executor } from '../graphql/executor.ts';
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
const REFUSAL_PAGES: Record<string, (reason: string) => string> = {
  link: (reason) => `/portal/security?${new URLSearchParams({ link_error: reason })}`,
  test: (reason) => `/admin/settings/sso?${new URLSearchParams({ test_error: reason })}`,
};

const START = /* GraphQL */ `
  mutation ($input: StartSsoSignInInput!) {
    startSsoSignIn(input: $input) {
      __typename
      ... on SsoStart {
        url
        browserToken
        expiresAt
      }
      ... on UserError {
        code
        details {
          path
          message
        }
      }
    }
  }
`;

const COMPLETE = /* GraphQL */ `
  mutation ($input: CompleteSsoSignInInput!) {
    completeSsoSignIn(input: $input) {
      __typename
      ... on SsoSignedIn {
        returnTo
        login {
          token
          expiresAt
          mfaEnrollmentRequired
        }
      }
      ... on SsoTested {
        resultId
      }
      ... on SsoLinked {
        connectionName
      }
    }
  }
`;

const METADATA = /* GraphQL */ `
  query ($id: String!) {
    samlMetadata(connectionId: $id)
  }
`;

type Problem = { code: string; details?: readonly { path: string; message: string }[] | null };

/** The stable reason /login words: an sso_failed refusal's own, else the error's code. */
const reasonOf = (problem: Problem) => problem.details?.find((d) => d.path === 'reason')?.message ?? problem.code;

const ID = /^[A-Za-z0-9-]{1,100}$/;

export function ssoRouter(base: ContextBase, run: Executor, cookie: SessionCookie, limits: Koa.Middleware): Router {
  const router = new Router({ prefix: '/sso/:id' });
  const form = bodyParser({ enableTypes: ['form'], formLimit: '1mb', encoding: 'utf-8' });
  const anonymous = (ctx: Koa.Context): Context => makeContext(base, null, ctx.state.request as RequestState);
  const cookiePath = (id: string) => `/sso/${id}`;

  const clearCookies = (ctx: Koa.Context) => {
    // An id that is no id (a NUL, a slash) names no cookie path: there is then no cookie of ours to clear.
    if (!ID.test(ctx.params.id ?? '')) return;
    for (const name of [SSO_COOKIE, MODE_COOKIE])
      ctx.cookies.set(name, null, { ...sessionCookieAttributes(cookie), path: cookiePath(ctx.params.id!) });
  };

  const failed = (ctx: Koa.Context, reason: string, mode: string | null) => {
    noStore(ctx);
    clearCookies(ctx);
    const word = reason.replace(/[^a-z_]/g, '').slice(0, 40) || 'sso_failed';
    ctx.status = 303;
    ctx.redirect(
      mode && Object.hasOwn(REFUSAL_PAGES, mode)
        ? REFUSAL_PAGES[mode]!(word)
        : `/login?${new URLSearchParams({ sso_error: word })}`,
    );
  };

  /** A top-level error of the operation (input it cannot take, a rate limit) ends on /login like a refusal. */
  const attempt = async (ctx: Koa.Context, work: () => Promise<Record<string, any>>, mode: string | null) => {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof DomainError) || error.code === 'service_unavailable') throw error;
      // The stored request's purpose, when the refusal came after it was found, is surer than the cookie's.
      const purpose = error instanceof UserError ? error.details.find((d) => d.path === 'purpose')?.message : undefined;
      failed(
        ctx,
        error.code === 'not_found' ? 'unknown_connection' : error instanceof UserError ? reasonOf(error) : error.code,
        purpose ?? mode,
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
    const id = ctx.params.id!;
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
    const data = await attempt(ctx, () => run(ctx.state.tessera as Context, START, { input }), mode);
    if (!data) return;
    const result = data.startSsoSignIn;
    if (result.__typename === 'UserError')
      return failed(ctx, result.code === 'not_found' ? 'unknown_connection' : reasonOf(result), mode);
    noStore(ctx);
    const until = { ...sessionCookieAttributes(cookie, new Date(result.expiresAt)), path: cookiePath(id) };
    ctx.cookies.set(SSO_COOKIE, result.browserToken, until);
    ctx.cookies.set(MODE_COOKIE, mode, until);
    ctx.status = 303;
    ctx.redirect(result.url);
  });

  const complete =
    (answer: (ctx: Koa.Context) => Record<string, unknown>): Koa.Middleware =>
    async (ctx) => {
      const id = ctx.params.id!;
      const input = { connectionId: id, browserToken: ctx.cookies.get(SSO_COOKIE) ?? null, ...answer(ctx) };
      const data = await attempt(
        ctx,
        () => run(anonymous(ctx), COMPLETE, { input }),
        ctx.cookies.get(MODE_COOKIE) ?? null,
      );
      if (!data) return;
      const result = data.completeSsoSignIn;
      noStore(ctx);
      clearCookies(ctx);
      ctx.status = 303;
      if (result.__typename === 'SsoTested')
        return ctx.redirect(`/admin/settings/sso/test/${encodeURIComponent(result.resultId)}`);
      if (result.__typename === 'SsoLinked') return ctx.redirect('/portal/security?linked=1');
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
    const { samlMetadata } = await run(ctx.state.tessera as Context, METADATA, { id: ctx.params.id });
    if (!samlMetadata) throw new DomainError('not_found', 'No SAML connection here');
    ctx.type = 'application/samlmetadata+xml';
    ctx.body = samlMetadata;
  });

  return router;
}
