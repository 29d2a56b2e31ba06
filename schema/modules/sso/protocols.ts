// The sign-in protocols by connection type (docs/architecture.md#single-sign-on).
import type { SsoProtocol } from './protocol.ts';
import { oidcProtocol } from './oidc.protocol.ts';
import { samlProtocol } from './saml.protocol.ts';
import { githubProtocol } from './github.protocol.ts';

export const PROTOCOLS: Record<'oidc' | 'saml' | 'github', SsoProtocol> = {
  oidc: oidcProtocol,
  saml: samlProtocol,
  github: githubProtocol,
};
