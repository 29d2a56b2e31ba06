// What an e-mail address says of where it belongs.

/** The part after the last @ of an address, lower-case (the whole text when there is none: a domain_hint). */
export const domainOf = (emailOrDomain: string) => emailOrDomain.slice(emailOrDomain.lastIndexOf('@') + 1).toLowerCase();
