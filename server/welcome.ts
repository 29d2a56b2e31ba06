// What `npm start` tells the person at the terminal once the service is up: where to go, in plain lines. The
// JSON log (stdout) stays as it is for machines; these lines go to stderr.
import type { Config } from './config.ts';
import { relyingPartyOf } from '../schema/modules/passkeys/passkeys.service.ts';

export function welcomeLines(issuer: string, config: Pick<Config, 'mail' | 'role'>): string[] {
  const mail =
    config.role === 'api'
      ? 'sent by the worker processes (ROLE=worker), through their SMTP_URL'
      : config.mail.smtpUrl
        ? `sent through ${new URL(config.mail.smtpUrl).host}`
        : `not configured (set SMTP_URL); mail is kept in the development mailbox at ${issuer}/admin/settings/mail`;
  const lines = [`Tessera is ready (${config.role === 'all' ? 'API and worker' : 'API only'}).`];
  lines.push(
    `  Sign in:       ${issuer}/login`,
    `  Admin portal:  ${issuer}/admin/dashboard`,
    `  GraphQL:       ${issuer}/graphql`,
    `  OpenAPI:       ${issuer}/openapi.json`,
    `  Mail:          ${mail}`,
    `  Passkeys:      ${passkeysLine(issuer)}`,
  );
  return lines;
}

/** Browsers refuse an IP address as a WebAuthn relying party: then no passkey is offered, and the person is told why. */
function passkeysLine(issuer: string): string {
  const rp = relyingPartyOf(issuer);
  return rp
    ? `for ${rp.id}`
    : 'off: BASE_URL has an IP address for its host, which browsers refuse; set it to a domain name (localhost works)';
}
