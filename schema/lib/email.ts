// What an e-mail address says of where it belongs.
import { domainToASCII } from 'node:url';

/**
 * The domain of an address (the part after its last @; the whole text when there is none, as a domain_hint), as
 * domains are kept: lower-case ASCII, an internationalized name in punycode. Empty when it is no domain.
 */
export function domainOf(emailOrDomain: string): string {
  const domain = emailOrDomain
    .slice(emailOrDomain.lastIndexOf('@') + 1)
    .trim()
    .toLowerCase()
    .replace(/\.$/, '');
  return /^[\x21-\x7e]*$/.test(domain) ? domain : domainToASCII(domain);
}
