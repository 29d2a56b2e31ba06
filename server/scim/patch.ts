// PATCH (RFC 7644 3.5.2) of a directory's users and groups (docs/architecture.md#directory-provisioning).
// The body is checked and each operation's path read against the attributes Tessera keeps, before anything is
// applied: a User's operations then go through the scim-patch package onto the user's current SCIM document, and a
// Group's become a change of its members as a delta, so that two directories' concurrent PATCHes (or one's
// retries) add and remove members without undoing each other. Directories' habits are taken as they come: Entra
// ID's capitalised ops ("Replace"), booleans as "False", `value` without a path, and members removed by value.
import type { Filter } from 'scim2-parse-filter';
import { ScimError, scimPatch, type ScimPatchOperation, type ScimResource } from 'scim-patch';
import type {
  DirectoryGroupChange,
  DirectoryUser,
  DirectoryUserInput,
} from '../../schema/modules/directory/directory.types.ts';
import { expected } from '../../schema/lib/expected.ts';
import { own, parseScimFilter, shown } from './filter.ts';
import { attributesOf, isObject, memberIdsOf, userDocument, userInputFromScim, type Json } from './input.ts';
import { GROUP_SCHEMA, USER_SCHEMA } from './resources.ts';
import { ScimPatchError } from './scim.errors.ts';

export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const MAX_PATCH_OPERATIONS = 1_000;
const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:user';
const MAX_PATH_LENGTH = 1_000;

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path?: string;
  value?: unknown;
}

/** The operations of a PatchOp body (RFC 7644 3.5.2): its schema, 1 to 1,000 operations, each op add, replace or remove. */
export function readPatchBody(body: unknown): PatchOperation[] {
  if (!isObject(body))
    throw new ScimPatchError(
      'invalidSyntax',
      'The body must be a PatchOp object: {"schemas": [...PatchOp], "Operations": [...]}',
      '(body)',
    );
  const attrs = attributesOf(body, PATCH_OP_SCHEMA);
  const schemas = attrs.get('schemas');
  if (
    !Array.isArray(schemas) ||
    !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === PATCH_OP_SCHEMA.toLowerCase())
  ) {
    throw new ScimPatchError('invalidSyntax', `schemas must hold "${PATCH_OP_SCHEMA}"`, 'schemas');
  }
  const operations = attrs.get('operations');
  if (!Array.isArray(operations) || operations.length === 0 || operations.length > MAX_PATCH_OPERATIONS) {
    throw new ScimPatchError('invalidSyntax', `Operations must be an array of 1 to ${MAX_PATCH_OPERATIONS} operations`);
  }
  return operations.map((operation, i) => {
    const at = `Operations[${i}]`;
    if (!isObject(operation))
      throw new ScimPatchError('invalidSyntax', `${at} must be an object {op, path, value}`, at);
    const fields = attributesOf(operation, PATCH_OP_SCHEMA, `${at}.`);
    const op = fields.get('op');
    if (typeof op !== 'string' || !/^(add|replace|remove)$/i.test(op))
      throw new ScimPatchError('invalidSyntax', `${at}.op must be add, replace or remove`, `${at}.op`);
    const path = fields.get('path');
    if (path !== undefined && (typeof path !== 'string' || !path.trim() || path.length > MAX_PATH_LENGTH)) {
      throw new ScimPatchError(
        'invalidPath',
        `${at}.path must be an attribute path of at most ${MAX_PATH_LENGTH} characters`,
        `${at}.path`,
      );
    }
    const result: PatchOperation = { op: op.toLowerCase() as PatchOperation['op'] };
    if (path !== undefined) result.path = path.trim();
    if (fields.has('value')) result.value = fields.get('value');
    // RFC 7644 3.5.2.2: a remove without a path has no target; 3.5.2.1/3: add and replace carry a value.
    if (result.op === 'remove' && result.path === undefined)
      throw new ScimPatchError('noTarget', `${at}: remove needs a path`, at);
    if (result.op !== 'remove' && result.value === undefined)
      throw new ScimPatchError('invalidValue', `${at}: ${result.op} needs a value`, at);
    return result;
  });
}

// ---- paths ------------------------------------------------------------------------------------------------------

/** A path as read: its attribute (lower case), an optional value filter, an optional sub-attribute (lower case). */
interface ParsedPath {
  attribute: string;
  filter?: { text: string; tree: Filter };
  sub?: string;
  /** The enterprise extension, whose attributes Tessera does not keep. */
  extension?: boolean;
}

const PATH = /^([a-z][\w$-]*)(?:\[(.+)\])?(?:\.([a-z$][\w$-]*))?$/is;

function readPath(text: string, own: string, other: string): ParsedPath {
  let rest = text;
  const lower = text.toLowerCase();
  if (lower.startsWith('urn:')) {
    if (lower === ENTERPRISE_USER_SCHEMA || lower.startsWith(`${ENTERPRISE_USER_SCHEMA}:`))
      return { attribute: '', extension: true };
    if (lower.startsWith(`${own.toLowerCase()}:`)) rest = text.slice(own.length + 1);
    else if (lower.startsWith(other.toLowerCase()))
      throw new ScimPatchError('invalidPath', `The path ${shown(text)} is an attribute of another resource type`);
    else throw new ScimPatchError('invalidPath', `The path ${shown(text)} names a schema this resource does not have`);
  }
  const match = PATH.exec(rest);
  if (!match)
    throw new ScimPatchError('invalidPath', `The path ${shown(text)} is not an attribute path (RFC 7644 3.5.2)`);
  const parsed: ParsedPath = { attribute: expected(match[1], "a matched path's attribute").toLowerCase() };
  if (match[2] !== undefined) {
    let tree: Filter;
    try {
      tree = parseScimFilter(match[2]);
    } catch {
      throw new ScimPatchError('invalidFilter', `The value filter of the path ${shown(text)} is not a valid filter`);
    }
    parsed.filter = { text: match[2], tree };
  }
  if (match[3] !== undefined) parsed.sub = match[3].toLowerCase();
  return parsed;
}

/** The attribute names a value filter compares (`type eq "work" and primary eq true` -> type, primary). */
function filterNames(filter: Filter): string[] {
  switch (filter.op) {
    case 'and':
    case 'or':
      return (filter as { filters: Filter[] }).filters.flatMap(filterNames);
    case 'not':
      return filterNames((filter as { filter: Filter }).filter);
    case '[]':
      return ['[]'];
    default:
      return [(filter as { attrPath: string }).attrPath.toLowerCase()];
  }
}

// ---- users ------------------------------------------------------------------------------------------------------

/** A kept User attribute: its canonical name, and its sub-attributes by lower-case name (a multi-valued one has some). */
type KeptAttribute =
  | { name: string; sub?: Record<string, string>; multi?: false }
  | { name: string; sub: Record<string, string>; multi: true };

/** The User attributes Tessera keeps, by lower-case name: canonical name and sub-attributes. */
const USER_KEPT: Record<string, KeptAttribute> = {
  username: { name: 'userName' },
  externalid: { name: 'externalId' },
  displayname: { name: 'displayName' },
  active: { name: 'active' },
  name: { name: 'name', sub: { givenname: 'givenName', familyname: 'familyName' } },
  emails: { name: 'emails', sub: { value: 'value', type: 'type', primary: 'primary' }, multi: true },
};
/** Core User attributes (RFC 7643 4.1) Tessera does not keep: changes to them are accepted and ignored. */
const USER_IGNORED = new Set([
  'nickname',
  'profileurl',
  'title',
  'usertype',
  'preferredlanguage',
  'locale',
  'timezone',
  'password',
  'phonenumbers',
  'ims',
  'photos',
  'addresses',
  'entitlements',
  'roles',
  'x509certificates',
]);
/** Sub-attributes of kept attributes that are not kept (name.formatted is made from the parts). */
const USER_IGNORED_SUB: Record<string, Set<string>> = {
  name: new Set(['formatted', 'middlename', 'honorificprefix', 'honorificsuffix']),
  emails: new Set(['display']),
};
/** RFC 7643 readOnly attributes, and the metadata: a PATCH may not change them (RFC 7644 3.5.2, mutability). */
const READ_ONLY = new Set(['id', 'meta', 'groups', 'schemas']);

function readOnly(name: string, resource: string): never {
  const hint = name === 'groups' ? ": change the group's members instead" : '';
  throw new ScimPatchError('mutability', `${shown(name)} is read-only on a ${resource}${hint}`);
}

/** A complex value's keys made canonical; sub-attributes that are not kept are left out. */
function canonicalObject(value: unknown, attr: string, sub: Record<string, string>): unknown {
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, v] of attributesOf(value, USER_SCHEMA, `${attr}.`)) {
    const name = own(sub, key);
    if (name) out[name] = v;
  }
  return out;
}

function canonicalUserValue(kept: KeptAttribute, attr: string, value: unknown): unknown {
  const { sub } = kept;
  if (!sub) return value;
  if (kept.multi && Array.isArray(value)) return value.map((v) => canonicalObject(v, attr, sub));
  return canonicalObject(value, attr, sub);
}

/** A User operation rewritten onto the kept attributes' canonical names, or null when it only touches ignored ones. */
function userOperation(operation: PatchOperation): ScimPatchOperation | null {
  if (operation.path === undefined) {
    // No path: the value holds the attributes (RFC 7644 3.5.2.1, 3.5.2.3), named as in a resource.
    if (!isObject(operation.value))
      throw new ScimPatchError(
        'invalidValue',
        `${operation.op} without a path needs an object of attributes as its value`,
      );
    const value: Json = {};
    for (const [key, v] of Object.entries(operation.value)) {
      const path = readPath(key, USER_SCHEMA, GROUP_SCHEMA);
      if (path.extension || USER_IGNORED.has(path.attribute)) continue;
      if (READ_ONLY.has(path.attribute)) {
        // Okta and others echo the id in a value object; anything else read-only is refused.
        if (path.attribute === 'id' || path.attribute === 'schemas' || path.attribute === 'meta') continue;
        readOnly(path.attribute, 'User');
      }
      const kept = own(USER_KEPT, path.attribute);
      if (!kept || path.filter) throw new ScimPatchError('invalidPath', `A User has no attribute ${shown(key)}`);
      if (path.sub) {
        // Entra ID sends {"name.givenName": "..."} in a value without a path.
        const sub = kept.sub && own(kept.sub, path.sub);
        if (own(USER_IGNORED_SUB, path.attribute)?.has(path.sub)) continue;
        if (!sub || kept.multi) throw new ScimPatchError('invalidPath', `A User has no attribute ${shown(key)}`);
        value[`${kept.name}.${sub}`] = v;
        continue;
      }
      const canonical = canonicalUserValue(kept, path.attribute, v);
      // A complex value sets the sub-attributes it names and leaves the others (RFC 7644 3.5.2.1): as dotted keys,
      // since scim-patch would put the object in place of the whole attribute.
      if (kept.sub && !kept.multi && isObject(canonical)) {
        for (const [sub, subValue] of Object.entries(canonical)) value[`${kept.name}.${sub}`] = subValue;
      } else {
        value[kept.name] = canonical;
      }
    }
    return { op: operation.op as 'add', value };
  }
  const path = readPath(operation.path, USER_SCHEMA, GROUP_SCHEMA);
  if (path.extension || USER_IGNORED.has(path.attribute)) return null;
  if (READ_ONLY.has(path.attribute)) readOnly(path.attribute, 'User');
  const kept = own(USER_KEPT, path.attribute);
  if (!kept) throw new ScimPatchError('invalidPath', `A User has no attribute ${shown(operation.path)}`);
  let canonical = kept.name;
  if (path.filter) {
    if (!kept.multi)
      throw new ScimPatchError('invalidPath', `${shown(kept.name)} is not multi-valued: it takes no [filter]`);
    const { sub } = kept;
    const unknown = filterNames(path.filter.tree).find((n) => !own(sub, n));
    if (unknown)
      throw new ScimPatchError(
        'invalidFilter',
        `The value filter of ${shown(operation.path)} compares ${shown(unknown)}, which ${kept.name} does not have`,
      );
    canonical += `[${path.filter.text}]`;
  }
  if (path.sub) {
    if (own(USER_IGNORED_SUB, path.attribute)?.has(path.sub)) return null;
    const sub = kept.sub && own(kept.sub, path.sub);
    if (!sub) throw new ScimPatchError('invalidPath', `A User has no attribute ${shown(operation.path)}`);
    canonical += `.${sub}`;
  }
  const value = path.sub ? operation.value : canonicalUserValue(kept, path.attribute, operation.value);
  return operation.op === 'remove'
    ? { op: 'remove', path: canonical, ...(value === undefined ? {} : { value }) }
    : { op: operation.op, path: canonical, value };
}

/**
 * What a user becomes under `operations`: applied by scim-patch to the user's current document, then read as a User
 * again (so "False" is false, and a userName removed is refused as missing).
 */
export function patchUser(current: DirectoryUser, operations: PatchOperation[]): DirectoryUserInput {
  const rewritten = operations.map(userOperation).filter((o): o is ScimPatchOperation => o !== null);
  const document = userDocument(current) as unknown as ScimResource;
  let patched: ScimResource;
  try {
    patched = rewritten.length
      ? scimPatch(document, rewritten, { mutateDocument: false, treatMissingAsAdd: true })
      : document;
  } catch (error) {
    if (error instanceof ScimError) {
      const scimType =
        (['noTarget', 'invalidPath', 'invalidValue', 'invalidFilter'] as const).find((t) => t === error.scimCode) ??
        'invalidSyntax';
      throw new ScimPatchError(scimType, error.message.slice(0, 300));
    }
    throw error;
  }
  return userInputFromScim(patched);
}

// ---- groups -----------------------------------------------------------------------------------------------------

/** The members a value filter on `members` picks: `value eq "<id>"`, or several of them joined by `or`. */
function membersPicked(filter: Filter, text: string): string[] {
  if (filter.op === 'or') return (filter as { filters: Filter[] }).filters.flatMap((f) => membersPicked(f, text));
  const compare = filter as { op: string; attrPath?: string; compValue?: unknown };
  if (compare.op === 'eq' && compare.attrPath?.toLowerCase() === 'value' && typeof compare.compValue === 'string')
    return [compare.compValue];
  throw new ScimPatchError(
    'invalidFilter',
    `The path ${shown(text)} picks members other than by value eq "<id>" (or several joined by or)`,
  );
}

/** A change to the member list, kept as a delta until a replace gives the whole list. */
class MemberChange {
  members: Set<string> | undefined;
  readonly add = new Set<string>();
  readonly remove = new Set<string>();

  replace(ids: string[]): void {
    this.members = new Set(ids);
    this.add.clear();
    this.remove.clear();
  }

  adding(ids: string[]): void {
    for (const id of ids) {
      if (this.members) this.members.add(id);
      else {
        this.add.add(id);
        this.remove.delete(id);
      }
    }
  }

  removing(ids: string[]): void {
    for (const id of ids) {
      if (this.members) this.members.delete(id);
      else {
        this.remove.add(id);
        this.add.delete(id);
      }
    }
  }
}

function displayNameOf(value: unknown): string {
  if (typeof value !== 'string' || !value.trim())
    throw new ScimPatchError('invalidValue', 'displayName must be a non-empty string', 'displayName');
  return value;
}

function externalIdOf(value: unknown): string | null {
  if (value !== null && typeof value !== 'string')
    throw new ScimPatchError('invalidValue', 'externalId must be a string', 'externalId');
  return value;
}

/** A Group attribute changed by add or replace (with a path, or as a key of a value without one). */
function setGroupAttribute(
  change: DirectoryGroupChange,
  members: MemberChange,
  op: 'add' | 'replace',
  key: string,
  value: unknown,
): void {
  const path = readPath(key, GROUP_SCHEMA, USER_SCHEMA);
  if (path.extension)
    throw new ScimPatchError('invalidPath', `The path ${shown(key)} is an attribute of another resource type`);
  if (path.attribute === 'id' || path.attribute === 'meta' || path.attribute === 'schemas')
    throw new ScimPatchError('mutability', `${shown(key)} is read-only on a Group`);
  if (path.filter || path.sub) {
    if (path.attribute === 'members')
      throw new ScimPatchError(
        'invalidPath',
        `Members are added or replaced as a list: ${shown(key)} cannot be changed`,
      );
    throw new ScimPatchError('invalidPath', `A Group has no attribute ${shown(key)}`);
  }
  switch (path.attribute) {
    case 'displayname':
      change.displayName = displayNameOf(value);
      return;
    case 'externalid':
      change.externalId = externalIdOf(value);
      return;
    case 'members': {
      // Entra ID adds one member per operation as a one-element array; a single object is taken too.
      const ids = value === null ? [] : memberIdsOf(value);
      if (op === 'replace') members.replace(ids);
      else members.adding(ids);
      return;
    }
    default:
      throw new ScimPatchError('invalidPath', `A Group has no attribute ${shown(key)}`);
  }
}

function removeFromGroup(
  change: DirectoryGroupChange,
  members: MemberChange,
  operation: PatchOperation & { path: string },
): void {
  const path = readPath(operation.path, GROUP_SCHEMA, USER_SCHEMA);
  if (path.extension)
    throw new ScimPatchError(
      'invalidPath',
      `The path ${shown(operation.path)} is an attribute of another resource type`,
    );
  switch (path.attribute) {
    case 'members':
      if (path.sub)
        throw new ScimPatchError(
          'invalidPath',
          `Members are removed whole: ${shown(operation.path)} cannot be removed`,
        );
      if (path.filter) return members.removing(membersPicked(path.filter.tree, operation.path));
      // Entra ID names the members to remove in the value; without one, every member goes (RFC 7644 3.5.2.2).
      if (operation.value === undefined || operation.value === null) return members.replace([]);
      return members.removing(memberIdsOf(operation.value));
    case 'externalid':
      if (path.filter || path.sub) break;
      change.externalId = null;
      return;
    case 'displayname':
      if (path.filter || path.sub) break;
      throw new ScimPatchError('mutability', 'displayName is required: it cannot be removed');
    case 'id':
    case 'meta':
    case 'schemas':
      throw new ScimPatchError('mutability', `${shown(operation.path)} is read-only on a Group`);
  }
  throw new ScimPatchError('invalidPath', `A Group has no attribute ${shown(operation.path)}`);
}

/** What `operations` change in a group: its name and external id, and its members as additions and removals. */
export function patchGroup(operations: PatchOperation[]): DirectoryGroupChange {
  const change: DirectoryGroupChange = {};
  const members = new MemberChange();
  for (const operation of operations) {
    if (operation.op === 'remove') {
      removeFromGroup(change, members, operation as PatchOperation & { path: string });
    } else if (operation.path !== undefined) {
      setGroupAttribute(change, members, operation.op, operation.path, operation.value);
    } else {
      if (!isObject(operation.value))
        throw new ScimPatchError(
          'invalidValue',
          `${operation.op} without a path needs an object of attributes as its value`,
        );
      for (const [key, value] of Object.entries(operation.value)) {
        // Okta renames a group with {"op": "replace", "value": {"id": "...", "displayName": "..."}}: the id is its own.
        if (/^(id|schemas|meta)$/i.test(key)) continue;
        setGroupAttribute(change, members, operation.op, key, value);
      }
    }
  }
  if (members.members) change.members = [...members.members];
  else {
    if (members.add.size) change.add = [...members.add];
    if (members.remove.size) change.remove = [...members.remove];
  }
  return change;
}
