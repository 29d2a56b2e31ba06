// GET /.well-known/openid-configuration, /.well-known/oauth-authorization-server (RFC 8414) and
// /.well-known/jwks.json: public, cacheable for a short while.
import type Koa from 'koa';
import type { ContextBase } from '../../schema/context.ts';
import { discoveryDocument } from '../../schema/modules/oauth/discovery.service.ts';

// The JSON text of each document served (the service returns the same object until the document changes).
const documentText = new WeakMap<object, string>();

export function discoveryEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    const document = await discoveryDocument(base);
    let text = documentText.get(document);
    if (text === undefined) documentText.set(document, (text = JSON.stringify(document)));
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'application/json';
    ctx.body = text;
  };
}

export function jwksEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    // Short, so that a rotation is picked up quickly by relying parties.
    ctx.set('Cache-Control', 'public, max-age=60');
    ctx.type = 'application/jwk-set+json';
    ctx.body = await base.keys.jwks();
  };
}
