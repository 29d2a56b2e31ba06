// GET /.well-known/openid-configuration, /.well-known/oauth-authorization-server (RFC 8414) and
// /.well-known/jwks.json: public, cacheable for a short while.
import type Koa from 'koa';
import type { ContextBase } from '../../schema/context.ts';
import { discoveryDocument } from '../../schema/modules/oauth/discovery.service.ts';

// The JSON bytes of each document served (the services return the same object until the document changes): no
// serializing or encoding per request.
const documentBytes = new WeakMap<object, Buffer>();
function bytesOf(document: object): Buffer {
  let bytes = documentBytes.get(document);
  if (bytes === undefined) documentBytes.set(document, (bytes = Buffer.from(JSON.stringify(document))));
  return bytes;
}

export function discoveryEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'application/json';
    ctx.body = bytesOf(await discoveryDocument(base));
  };
}

export function jwksEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    // Short, so that a rotation is picked up quickly by relying parties.
    ctx.set('Cache-Control', 'public, max-age=60');
    ctx.type = 'application/jwk-set+json';
    ctx.body = bytesOf(await base.keys.jwks());
  };
}
