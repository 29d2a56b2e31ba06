// The sign-in protocols by connection type, and what creating a connection asks of them (docs/architecture.md#single-sign-on).
import type { Context } from '../../context.ts';
import type { SsoProtocol } from './protocol.ts';
import { discoverIssuer, oidcProtocol } from './oidc.protocol.ts';
import { samlProtocol } from './saml.protocol.ts';
import { githubProtocol } from './github.protocol.ts';

export const PROTOCOLS: Record<'oidc' | 'saml' | 'github', SsoProtocol> = { oidc: oidcProtocol, saml: samlProtocol, github: githubProtocol };

/** Checks that an OpenID Connect issuer answers discovery (throws IssuerUnreachableError). */
export async function checkIssuer(ctx: Context, issuer: string): Promise<void> {
  await discoverIssuer(ctx, issuer);
}

export { parseIdpMetadata as readIdpMetadata, serviceProviderMetadata } from './saml.protocol.ts';
