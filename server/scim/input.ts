// A directory's SCIM resources (RFC 7643 4.1, 4.2) read into the services' inputs, and a user as the SCIM document
// a PATCH applies to (docs/architecture.md#directory-provisioning). Attribute names are case-insensitive (RFC 7643
// 2.1) and may carry their schema's URN; attributes Tessera does not keep (phone numbers, the enterprise
// extension, ...) are accepted and ignored, as directories send whatever their mappings hold.
import { ScimInvalidValueError } from '../../schema/modules/directory/directory.errors.ts';
import type {
  DirectoryEmail,
  DirectoryGroupInput,
  DirectoryUser,
  DirectoryUserInput,
} from '../../schema/modules/directory/directory.types.ts';
import { GROUP_SCHEMA, USER_SCHEMA } from './resources.ts';

export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The object's attributes by lower-case name, the core schema's URN prefix taken off (`urn:...:User:userName`).
 * Two spellings of one name are refused: which one was meant cannot be told.
 */
export function attributesOf(body: Json, schema: string, where = ''): Map<string, unknown> {
  const prefix = `${schema.toLowerCase()}:`;
  const found = new Map<string, unknown>();
  for (const [key, value] of Object.entries(body)) {
    let name = key.toLowerCase();
    if (name.startsWith(prefix)) name = name.slice(prefix.length);
    if (found.has(name))
      throw new ScimInvalidValueError(`${where}${key}`, 'is given twice (attribute names are case-insensitive)');
    found.set(name, value);
  }
  return found;
}

function optionalString(value: unknown, path: string, max: number): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string') throw new ScimInvalidValueError(path, 'must be a string');
  if (value.length > max) throw new ScimInvalidValueError(path, `must be at most ${max} characters`);
  return value;
}

/** A boolean, or the strings "True" and "False" that Entra ID sends for booleans in PATCH (any case). */
export function scimBoolean(value: unknown, path: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw new ScimInvalidValueError(path, 'must be true or false');
}

const NAME_MAX = 500;

function emailsOf(value: unknown): DirectoryEmail[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw new ScimInvalidValueError('emails', 'must be an array of {value, type, primary}');
  if (value.length > 100) throw new ScimInvalidValueError('emails', 'must hold at most 100 addresses');
  return value.map((item, i) => {
    const path = `emails[${i}]`;
    if (!isObject(item)) throw new ScimInvalidValueError(path, 'must be an object {value, type, primary}');
    const attrs = attributesOf(item, USER_SCHEMA, `${path}.`);
    const address = optionalString(attrs.get('value'), `${path}.value`, 320);
    if (!address) throw new ScimInvalidValueError(`${path}.value`, 'is required');
    const email: DirectoryEmail = { value: address };
    const primary = scimBoolean(attrs.get('primary'), `${path}.primary`);
    if (primary !== undefined) email.primary = primary;
    const type = optionalString(attrs.get('type'), `${path}.type`, 50);
    if (type) email.type = type;
    return email;
  });
}

/** A User resource (POST, PUT, or the result of a PATCH) as the users service takes it. */
export function userInputFromScim(body: unknown): DirectoryUserInput {
  if (!isObject(body)) throw new ScimInvalidValueError('(body)', 'must be a JSON object: a User resource');
  const attrs = attributesOf(body, USER_SCHEMA);
  const userName = optionalString(attrs.get('username'), 'userName', NAME_MAX);
  if (!userName) throw new ScimInvalidValueError('userName', 'is required');
  const input: DirectoryUserInput = { userName };
  const externalId = optionalString(attrs.get('externalid'), 'externalId', NAME_MAX);
  if (externalId !== undefined) input.externalId = externalId;
  const displayName = optionalString(attrs.get('displayname'), 'displayName', NAME_MAX);
  if (displayName !== undefined) input.displayName = displayName;
  const active = scimBoolean(attrs.get('active'), 'active');
  if (active !== undefined) input.active = active;
  const name = attrs.get('name');
  if (name !== undefined && name !== null) {
    if (!isObject(name)) throw new ScimInvalidValueError('name', 'must be an object {givenName, familyName}');
    const parts = attributesOf(name, USER_SCHEMA, 'name.');
    const givenName = optionalString(parts.get('givenname'), 'name.givenName', NAME_MAX);
    const familyName = optionalString(parts.get('familyname'), 'name.familyName', NAME_MAX);
    if (givenName !== undefined) input.givenName = givenName;
    if (familyName !== undefined) input.familyName = familyName;
  }
  const emails = emailsOf(attrs.get('emails'));
  if (emails !== undefined) input.emails = emails;
  return input;
}

/** The SCIM ids of a group's members as given: `[{value}, ...]`. */
export function memberIdsOf(value: unknown, path = 'members'): string[] {
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, i) => {
    const at = Array.isArray(value) ? `${path}[${i}]` : path;
    if (!isObject(item)) throw new ScimInvalidValueError(at, 'must be an object {value: <a User id>}');
    const id = attributesOf(item, GROUP_SCHEMA, `${at}.`).get('value');
    if (typeof id !== 'string' || !id || id.length > 200)
      throw new ScimInvalidValueError(`${at}.value`, 'must be the id of a User');
    return id;
  });
}

/** A Group resource (POST or PUT) as the groups service takes it. */
export function groupInputFromScim(body: unknown): DirectoryGroupInput {
  if (!isObject(body)) throw new ScimInvalidValueError('(body)', 'must be a JSON object: a Group resource');
  const attrs = attributesOf(body, GROUP_SCHEMA);
  const displayName = optionalString(attrs.get('displayname'), 'displayName', NAME_MAX);
  if (!displayName) throw new ScimInvalidValueError('displayName', 'is required');
  const input: DirectoryGroupInput = { displayName };
  const externalId = optionalString(attrs.get('externalid'), 'externalId', NAME_MAX);
  if (externalId !== undefined) input.externalId = externalId;
  const members = attrs.get('members');
  if (members !== undefined && members !== null) {
    if (!Array.isArray(members)) throw new ScimInvalidValueError('members', 'must be an array of {value: <a User id>}');
    input.members = memberIdsOf(members);
  }
  return input;
}

/** The attributes of a user that a PATCH can change, as a SCIM document (patch.ts applies it). */
export function userDocument(user: DirectoryUser): Json {
  const name: Json = {};
  if (user.givenName !== null) name.givenName = user.givenName;
  if (user.familyName !== null) name.familyName = user.familyName;
  const document: Json = {
    schemas: [USER_SCHEMA],
    userName: user.userName,
    active: user.active,
    emails: user.emails.map((email) => ({ ...email })),
  };
  if (user.externalId !== null) document.externalId = user.externalId;
  if (user.displayName !== null) document.displayName = user.displayName;
  if (Object.keys(name).length) document.name = name;
  return document;
}
