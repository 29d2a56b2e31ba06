// What the Koa server and the SvelteKit portal agree on, in one dependency-free file both import: the bridge Koa
// attaches to each Node request, and how the session cookie is written wherever it is set or cleared (REST
// sign-in, /oauth/logout, the portal's sign-in and sign-out), and the device cookie wherever a sign-in sets it.

/** A GraphQL response, shaped as the HTTP endpoint would send it. */
export interface GraphQLResponse {
  data?: Record<string, unknown>;
  errors?: { message: string; extensions?: { code?: string; [key: string]: unknown } }[];
}

/** The session cookie's name, and Secure when the issuer is https. */
export interface SessionCookie {
  name: string;
  secure: boolean;
}

/**
 * What Koa attaches to each Node request (`req.tessera`) before handing it to the portal. The portal never
 * touches the database: every read and write is a GraphQL operation run in-process.
 */
export interface TesseraBridge {
  /** Executes a GraphQL operation as the holder of `sessionToken`, or anonymously. */
  graphql(
    document: string,
    variables?: Record<string, unknown>,
    credentials?: { sessionToken?: string | null },
  ): Promise<GraphQLResponse>;
  cookie: SessionCookie;
}

/**
 * The session cookie's attributes (docs/architecture.md#identity-sessions-and-tokens): HttpOnly, SameSite=Lax, the whole site, Secure under https; a
 * session's cookie expires with it, a cleared one carries no expiry of its own. Koa's and SvelteKit's cookie
 * options both take this shape.
 */
export function sessionCookieAttributes(cookie: Pick<SessionCookie, 'secure'>, expires?: Date) {
  return {
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: cookie.secure,
    path: '/',
    ...(expires ? { expires } : {}),
  };
}

/** The device cookie's name: the browser's proof that it signed in to an account before (docs/architecture.md#identity-sessions-and-tokens). */
export const DEVICE_COOKIE = 'tessera_device';

/**
 * The device cookie's attributes: HttpOnly, Secure under https, the whole site, until the token inside expires (a
 * year). SameSite=Strict, since only sign-ins read it, and they are posted from Tessera's own pages or by API clients.
 */
export function deviceCookieAttributes(cookie: Pick<SessionCookie, 'secure'>, expires: Date) {
  return { httpOnly: true, sameSite: 'strict' as const, secure: cookie.secure, path: '/', expires };
}
