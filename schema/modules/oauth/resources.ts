// Resource indicators (RFC 8707, docs/architecture.md#apps-without-secrets): the `resource` parameter names the
// protected resources an access token is for, and the token's `aud` is then those resources instead of the client.
// A client may ask only for the resources registered for it; a client known by its metadata document, for those
// the organization it acts in registered (authorize/load.ts). The authorization request fixes the grant's resources;
// a token request may narrow them, never widen them. Without `resource` nothing changes: `aud` is the client id.
import { InvalidTarget } from './oauth.errors.ts';

/** More than any real request names; a bound on what a request may make us compare and sign. */
export const MAX_RESOURCES = 10;
const MAX_RESOURCE_LENGTH = 2048;

/**
 * The `resource` parameter, given once or repeated (RFC 8707 2): each an absolute URI without a fragment, in the order
 * given, each once. Absent: none. Anything else is invalid_target.
 */
export function parseResources(value: unknown): string[] {
  if (value === undefined) return [];
  const given = Array.isArray(value) ? value : [value];
  if (given.length > MAX_RESOURCES) throw new InvalidTarget(`At most ${MAX_RESOURCES} resources may be asked for`);
  for (const resource of given) {
    if (typeof resource !== 'string' || !absoluteWithoutFragment(resource))
      throw new InvalidTarget('Each resource must be an absolute URI without a fragment');
  }
  return [...new Set(given as string[])];
}

function absoluteWithoutFragment(value: string): boolean {
  if (value.length === 0 || value.length > MAX_RESOURCE_LENGTH || value.includes('#')) return false;
  return URL.canParse(value);
}

/** `asked` is within `allowed` (compared exactly, as registered), else invalid_target naming the first that is not. */
export function requireResourcesAllowed(asked: readonly string[], allowed: readonly string[]): void {
  const refused = asked.find((resource) => !allowed.includes(resource));
  if (refused !== undefined) throw new InvalidTarget(`The resource ${refused} is not registered for this client`);
}

/** An access token's `aud`: its resources (one as a string, RFC 7519 4.1.3), or the client itself when none. */
export function audienceOf(resources: readonly string[], clientId: string): string | string[] {
  const [only, ...more] = resources;
  if (only === undefined) return clientId;
  return more.length ? [...resources] : only;
}
