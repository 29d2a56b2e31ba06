// Mounts /oauth/* and /.well-known/*. Body parsing here accepts forms (the OAuth norm) and JSON. A form is read as
// text and parsed as the URL standard says (params.ts formOrJsonBody), not by the body parser's qs, which nests
// names with dots or brackets that OAuth takes literally.
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type Koa from 'koa';
import type { ContextBase } from '../../schema/context.ts';
import { DomainError } from '../../schema/errors/index.ts';
import { oauthErrors } from './responses.ts';
import { oauthCors } from './cors.ts';
import { authorizeEndpoint } from './authorize.ts';
import { tokenEndpoint } from './token.ts';
import { deviceAuthorizationEndpoint } from './device-authorization.ts';
import { userinfoEndpoint } from './userinfo.ts';
import { revokeEndpoint } from './revocation.ts';
import { introspectEndpoint } from './introspection.ts';
import { logoutEndpoint } from './logout.ts';
import { discoveryEndpoint, jwksEndpoint } from './well-known.ts';
import { registeredClientEndpoint, registrationEndpoint } from './registration.ts';

export function oidcRouter(base: ContextBase, cookie: { secure: boolean }): Router {
  const router = new Router();
  const body = bodyParser({
    enableTypes: ['text', 'json'],
    extendTypes: { text: ['application/x-www-form-urlencoded'] },
    textLimit: '64kb',
    jsonLimit: '64kb',
    encoding: 'utf-8',
  });
  const cors = oauthCors(base);
  const errors = oauthErrors();

  router.get('/oauth/authorize', authorizeEndpoint(base));
  router.post('/oauth/authorize', body, authorizeEndpoint(base));
  router.all('/oauth/token', cors, errors, body, onlyPost, tokenEndpoint(base));
  router.all('/oauth/device_authorization', cors, errors, body, onlyPost, deviceAuthorizationEndpoint(base));
  router.all('/oauth/register', cors, errors, body, onlyPost, registrationEndpoint(base));
  router.get('/oauth/register/:client_id', cors, errors, registeredClientEndpoint(base));
  router.put('/oauth/register/:client_id', cors, errors, body, registeredClientEndpoint(base));
  router.delete('/oauth/register/:client_id', cors, errors, registeredClientEndpoint(base));
  router.get('/oauth/userinfo', cors, errors, userinfoEndpoint(base));
  router.post('/oauth/userinfo', cors, errors, body, userinfoEndpoint(base));
  router.options('/oauth/userinfo', cors);
  router.all('/oauth/revoke', cors, errors, body, onlyPost, revokeEndpoint(base));
  router.all('/oauth/introspect', cors, errors, body, onlyPost, introspectEndpoint(base));
  router.get('/oauth/logout', logoutEndpoint(base, cookie));
  router.post('/oauth/logout', body, logoutEndpoint(base, cookie));
  router.get('/.well-known/openid-configuration', cors, discoveryEndpoint(base));
  router.get('/.well-known/oauth-authorization-server', cors, discoveryEndpoint(base));
  router.get('/.well-known/jwks.json', cors, jwksEndpoint(base));
  router.options('/.well-known/:name', cors);
  return router;
}

const onlyPost: Koa.Middleware = async (ctx, next) => {
  if (ctx.method !== 'POST') {
    ctx.set('Allow', 'POST');
    throw new DomainError('method_not_allowed', 'Use POST');
  }
  await next();
};
