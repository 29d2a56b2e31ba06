// The directory's users and groups on the wire (RFC 7643 4.1, 4.2, 3.1 meta; RFC 7644 3.4.2 ListResponse), and
// the `attributes` / `excludedAttributes` parameters (RFC 7644 3.4.2.5) applied to them.
import type { DirectoryGroup, DirectoryUser } from '../../schema/modules/directory/directory.types.ts';
import { LIST_SCHEMA } from './responses.ts';

type Json = Record<string, unknown>;

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** Where the endpoints are: `{BASE_URL}/scim/v2`. */
export const scimBase = (issuer: string) => `${issuer.replace(/\/+$/, '')}/scim/v2`;

const meta = (resourceType: string, location: string, r: { createdAt: Date; updatedAt: Date; version: number }) => ({
  resourceType,
  created: r.createdAt.toISOString(),
  lastModified: r.updatedAt.toISOString(),
  location,
  version: `W/"${r.version}"`,
});

export function userResource(user: DirectoryUser, base: string): Json {
  const location = `${base}/Users/${user.id}`;
  const resource: Json = { schemas: [USER_SCHEMA], id: user.id };
  if (user.externalId !== null) resource.externalId = user.externalId;
  resource.userName = user.userName;
  if (user.givenName !== null || user.familyName !== null) {
    const name: Json = {};
    if (user.givenName !== null) name.givenName = user.givenName;
    if (user.familyName !== null) name.familyName = user.familyName;
    name.formatted = [user.givenName, user.familyName].filter(Boolean).join(' ');
    resource.name = name;
  }
  if (user.displayName !== null) resource.displayName = user.displayName;
  resource.active = user.active;
  const emails = user.emails.length ? user.emails : [{ value: user.email, primary: true }];
  resource.emails = emails.map((e) => ({
    value: e.value,
    ...(e.type ? { type: e.type } : {}),
    primary: e.primary ?? e.value === user.email,
  }));
  resource.groups = user.groups.map((g) => ({ value: g.id, display: g.displayName, $ref: `${base}/Groups/${g.id}` }));
  resource.meta = meta('User', location, user);
  return resource;
}

export function groupResource(group: DirectoryGroup, base: string, withMembers = true): Json {
  const resource: Json = { schemas: [GROUP_SCHEMA], id: group.id };
  if (group.externalId !== null) resource.externalId = group.externalId;
  resource.displayName = group.displayName;
  if (withMembers) {
    resource.members = group.members.map((m) => ({
      value: m.id,
      display: m.displayName ?? m.userName,
      $ref: `${base}/Users/${m.id}`,
      type: 'User',
    }));
  }
  resource.meta = meta('Group', `${base}/Groups/${group.id}`, group);
  return resource;
}

export function listResponse(resources: Json[], totalResults: number, startIndex: number): Json {
  return { schemas: [LIST_SCHEMA], totalResults, startIndex, itemsPerPage: resources.length, Resources: resources };
}

// ---- attributes and excludedAttributes --------------------------------------------------------------------------

/** Requested attribute names: lower case, the core URN taken off, split into attribute and sub-attribute. */
export interface Projection {
  only?: Map<string, Set<string> | null>;
  except?: Map<string, Set<string> | null>;
}

function names(text: string | undefined, schema: string): Map<string, Set<string> | null> | undefined {
  if (text === undefined) return undefined;
  const prefix = `${schema.toLowerCase()}:`;
  const found = new Map<string, Set<string> | null>();
  for (let name of text
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    if (name.startsWith(prefix)) name = name.slice(prefix.length);
    const [attribute, sub] = name.split('.', 2) as [string, string | undefined];
    if (sub === undefined) found.set(attribute, null);
    else if (found.get(attribute) !== null) found.set(attribute, (found.get(attribute) ?? new Set()).add(sub));
  }
  return found;
}

export function projection(attributes: string | undefined, excluded: string | undefined, schema: string): Projection {
  return { only: names(attributes, schema), except: names(excluded, schema) };
}

/** Whether the projection asks for the attribute at all (a group's members are not read when it does not). */
export function wants(p: Projection, attribute: string): boolean {
  if (p.only && !p.only.has(attribute)) return false;
  return !(p.except && p.except.get(attribute) === null);
}

/** `id` and `schemas` are always returned (RFC 7643 2.4, returned "always"); the rest as asked. */
const ALWAYS = new Set(['id', 'schemas']);

export function project(resource: Json, p: Projection): Json {
  if (!p.only && !p.except) return resource;
  const out: Json = {};
  for (const [key, value] of Object.entries(resource)) {
    const name = key.toLowerCase();
    if (ALWAYS.has(name)) {
      out[key] = value;
      continue;
    }
    if (p.only && !p.only.has(name)) continue;
    if (p.except?.get(name) === null) continue;
    const keep = p.only?.get(name);
    const drop = p.except?.get(name);
    out[key] = keep || drop ? subProject(value, keep ?? null, drop ?? null) : value;
  }
  return out;
}

function subProject(value: unknown, keep: Set<string> | null, drop: Set<string> | null): unknown {
  if (Array.isArray(value)) return value.map((v) => subProject(v, keep, drop));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).filter(([k]) => (!keep || keep.has(k.toLowerCase())) && !drop?.has(k.toLowerCase())),
  );
}
