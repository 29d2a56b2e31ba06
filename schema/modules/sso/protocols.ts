// The sign-in protocols by connection type (docs/architecture.md#single-sign-on). Each is loaded with its first use:
// SAML's XML stack and openid-client are megabytes that a deployment without such connections never holds.
import type { LoadedConnection, SsoProtocol } from './protocol.ts';

/** The protocols' modules, also for what only their connections have: an issuer's discovery, SAML metadata. */
export const oidcModule = () => import('./oidc.protocol.ts');
export const samlModule = () => import('./saml.protocol.ts');
const githubModule = () => import('./github.protocol.ts');

const PROTOCOLS: Record<LoadedConnection['type'], () => Promise<SsoProtocol>> = {
  oidc: async () => (await oidcModule()).oidcProtocol,
  saml: async () => (await samlModule()).samlProtocol,
  github: async () => (await githubModule()).githubProtocol,
};

export const protocolOf = (type: LoadedConnection['type']): Promise<SsoProtocol> => PROTOCOLS[type]();
