// The REST answers the tool reads, in the shapes the interface documents (server/rest's presenters; the tool ships
// alone and speaks REST only, so it declares them rather than importing the server's), and the checks that turn what
// came off the wire into them. An answer is checked once, where the REST client reads it; a value is narrowed, never
// copied, so that --json prints exactly what the API answered, fields the tool does not know included.

/** What was wrong with an answer: where in it (a dotted path, empty for the whole) and what was expected there. */
export class UnexpectedAnswer extends Error {
  readonly at: string;
  readonly expected: string;
  constructor(at: string, expected: string) {
    super(`${at || '(the answer)'}: expected ${expected}`);
    this.at = at;
    this.expected = expected;
  }
}

/** Narrows a value read off the wire at `at` to `T`, or throws UnexpectedAnswer. */
export type Check<T> = (value: unknown, at: string) => T;

const kind =
  <T>(expected: string, is: (value: unknown) => value is T): Check<T> =>
  (value, at) => {
    if (!is(value)) throw new UnexpectedAnswer(at, expected);
    return value;
  };

const string = kind('a string', (v): v is string => typeof v === 'string');
const number = kind('a number', (v): v is number => typeof v === 'number');
const boolean = kind('true or false', (v): v is boolean => typeof v === 'boolean');
/** The body of a 204: none. */
export const nothing = kind('no body', (v): v is null => v === null);

const nullable =
  <T>(check: Check<T>): Check<T | null> =>
  (value, at) =>
    value === null ? null : check(value, at);

const list =
  <T>(item: Check<T>): Check<T[]> =>
  (value, at) => {
    if (!Array.isArray(value)) throw new UnexpectedAnswer(at, 'a list');
    return value.map((v, i) => item(v, `${at}[${i}]`));
  };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const members = kind('an object', isObject);
const within = (at: string, name: string) => (at ? `${at}.${name}` : name);

/** A JSON object with at least `fields`, each checked; other members pass as they came. */
function object<T extends object>(fields: { [K in keyof T]-?: Check<T[K]> }): Check<T> {
  return (value, at) => {
    const found = members(value, at);
    for (const [name, check] of Object.entries<Check<unknown>>(fields)) check(found[name], within(at, name));
    // Every declared field has just been checked.
    return value as T;
  };
}

/** A page of a list (docs/architecture.md#rest-conventions): the items under the list's name, and `next_cursor`. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
export const page =
  <T>(name: string, item: Check<T>): Check<Page<T>> =>
  (value, at) => {
    const found = members(value, at);
    return {
      items: list(item)(found[name], within(at, name)),
      nextCursor: nullable(string)(found.next_cursor, within(at, 'next_cursor')),
    };
  };

/** Products are camelCase, as the interface gives them (server/rest/products.ts). */
export interface Product {
  id: string;
  name: string;
  slug: string;
  description: string;
  features: string[];
  createdAt: string;
  updatedAt: string;
}
export const PRODUCT = object<Product>({
  id: string,
  name: string,
  slug: string,
  description: string,
  features: list(string),
  createdAt: string,
  updatedAt: string,
});

// Enumerations (role, status, billing cycle) are read as strings: the tool prints them, and a value a newer server
// adds is shown rather than refused.
export interface Organization {
  id: string;
  name: string;
  /** The caller's role there; none for a platform admin outside it. */
  role: string | null;
  is_operator: boolean;
  require_mfa: boolean;
  created_at: string;
  updated_at: string;
}
export const ORGANIZATION = object<Organization>({
  id: string,
  name: string,
  role: nullable(string),
  is_operator: boolean,
  require_mfa: boolean,
  created_at: string,
  updated_at: string,
});

export interface Subscription {
  id: string;
  organization_id: string;
  product_id: string;
  total_seats: number;
  assigned_seats: number;
  price_per_seat: number;
  billing_cycle: string;
  status: string;
  end_date: string | null;
  created_at: string;
  updated_at: string;
}
export const SUBSCRIPTION = object<Subscription>({
  id: string,
  organization_id: string,
  product_id: string,
  total_seats: number,
  assigned_seats: number,
  price_per_seat: number,
  billing_cycle: string,
  status: string,
  end_date: nullable(string),
  created_at: string,
  updated_at: string,
});

/** The revocation endpoint's answer (RFC 7009 2.2): an empty object. */
export const REVOKED = object<object>({});

/** `GET /api/v1/users/me`: the signed-in person. */
export interface User {
  id: string;
  email: string;
}
export const USER = object<User>({ id: string, email: string });

/** `POST /oauth/device_authorization` (RFC 8628 3.2). */
export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}
export const DEVICE_AUTHORIZATION = object<DeviceAuthorization>({
  device_code: string,
  user_code: string,
  verification_uri: string,
  verification_uri_complete: string,
  expires_in: number,
  interval: number,
});

/** The token endpoint's answer to the command line's grants: its refresh token rotates with each use. */
export interface Tokens {
  access_token: string;
  refresh_token: string;
}
export const TOKENS = object<Tokens>({ access_token: string, refresh_token: string });

/** A field problem of an error answer: `{"error", "error_description", "details": [{path, message}]}` (the README, Interfaces). */
export interface Detail {
  path: string;
  message: string;
}
const DETAILS = list(object<Detail>({ path: string, message: string }));

/**
 * What an error answer says, as far as it says it: a proxy's error page, or a body of another shape, still makes an
 * error, with the HTTP status for its description.
 */
export function refusal(body: unknown): { error?: string; description?: string; details: Detail[] } {
  const found = isObject(body) ? body : {};
  const error = typeof found.error === 'string' ? found.error : undefined;
  const description = typeof found.error_description === 'string' ? found.error_description : undefined;
  try {
    return { error, description, details: found.details === undefined ? [] : DETAILS(found.details, 'details') };
  } catch {
    return { error, description, details: [] };
  }
}
