// SCIM filters (RFC 7644 3.4.2.2) as Prisma where clauses over a directory's users and groups
// (docs/architecture.md#directory-provisioning). scim2-parse-filter reads the text; this file decides what each
// attribute means here, and refuses the rest with invalidFilter (RFC 7644 3.12).
import { parse, type Filter } from 'scim2-parse-filter';
import { parseTimestamp } from '../../schema/lib/input.ts';
import type { GroupWhere, UserWhere } from '../../schema/modules/directory/directory.types.ts';
import { GROUP_SCHEMA, USER_SCHEMA } from './resources.ts';
import { ScimInvalidFilterError } from './scim.errors.ts';

export const MAX_FILTER_LENGTH = 2_000;
export const MAX_FILTER_DEPTH = 20;

/** An attribute name as a refusal shows it: the caller's own text, cut short and free of control characters. */
export function shown(name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f]/g, '?').toWellFormed();
  return JSON.stringify(clean.length > 80 ? `${clean.slice(0, 80)}...` : clean);
}

// Control characters have no place in a filter. A line break also matters to the parser: its tokenizer's quoted
// string pattern matches "\n" two ways, so an unclosed quote followed by line breaks backtracks exponentially.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** Reads a filter's text into its syntax tree, or refuses it: too long, control characters, malformed, too deep. */
export function parseScimFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH)
    throw new ScimInvalidFilterError(`The filter is longer than ${MAX_FILTER_LENGTH} characters`);
  if (CONTROL.test(text) || !text.isWellFormed())
    throw new ScimInvalidFilterError('The filter contains control characters or malformed Unicode');
  if (!text.trim()) throw new ScimInvalidFilterError('The filter is empty');
  if (bracketDepth(text) > MAX_FILTER_DEPTH)
    throw new ScimInvalidFilterError(`The filter is nested more than ${MAX_FILTER_DEPTH} levels deep`);
  let filter: Filter;
  try {
    filter = parse(text);
  } catch {
    // The parser's messages quote pieces of the input and its internals: a fixed one is safer to show and log.
    throw new ScimInvalidFilterError('The filter is not valid SCIM filter syntax (RFC 7644 3.4.2.2)');
  }
  if (depthOf(filter, 1) > MAX_FILTER_DEPTH)
    throw new ScimInvalidFilterError(`The filter is nested more than ${MAX_FILTER_DEPTH} levels deep`);
  return filter;
}

/** The deepest nesting of parentheses and brackets outside quoted strings (the parser recurses on each). */
function bracketDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === ')' || c === ']') depth--;
  }
  return deepest;
}

/** The depth of the tree: each and, or, not and value path is a level. */
function depthOf(filter: Filter, depth: number): number {
  if (depth > MAX_FILTER_DEPTH) return depth;
  switch (filter.op) {
    case 'and':
    case 'or':
      return Math.max(depth, ...(filter as { filters: Filter[] }).filters.map((f) => depthOf(f, depth + 1)));
    case 'not':
      return depthOf((filter as { filter: Filter }).filter, depth + 1);
    case '[]':
      return depthOf((filter as { valFilter: Filter }).valFilter, depth + 1);
    default:
      return depth;
  }
}

// ---- attributes -------------------------------------------------------------------------------------------------

type Where = Record<string, unknown>;
type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
type Value = string | number | boolean | null;

/** A single-valued attribute held in a column: `at` places a scalar filter on it in the where clause. */
interface Scalar {
  kind: 'string' | 'boolean' | 'dateTime';
  at: (filter: unknown) => Where;
  /** caseExact false (RFC 7643 2.2): compared case-insensitively. */
  caseExact: boolean;
  /** The column is never null, so `pr` always holds and comparisons need no null guard. */
  required: boolean;
}

/** A key of the objects of a JSON array column, matched by containment: eq only. */
interface JsonKey {
  kind: 'jsonKey';
  at: (value: Value) => Where;
  type: 'string' | 'boolean';
}

/**
 * A multi-valued attribute: a where clause over one of its values (`some`), or over the row itself (`wrap` identity).
 * Its `value` is what the attribute named alone compares (RFC 7643 2.4).
 */
interface Multi {
  kind: 'multi';
  sub: { value: Scalar | JsonKey; [name: string]: Scalar | JsonKey };
  wrap: (element: Where) => Where;
  present: Where;
}

/** A complex single-valued attribute (name): only `pr` applies to it as a whole. */
interface Complex {
  kind: 'complex';
  present: Where;
}

type Attribute = Scalar | Multi | Complex;

interface Resource {
  schema: string;
  attributes: Record<string, Attribute>;
}

const column = (kind: Scalar['kind'], field: string, caseExact: boolean, required: boolean): Scalar => ({
  kind,
  caseExact,
  required,
  at: (filter) => ({ [field]: filter }),
});

const emailValue: Scalar = column('string', 'email', false, true);
// The directory's own list of addresses (the `emails` JSON column) answers type and primary; the value is the
// account's address, the primary one (the `email` column), which is what directories look people up by.
const emails: Multi = {
  kind: 'multi',
  sub: {
    value: emailValue,
    type: { kind: 'jsonKey', type: 'string', at: (value) => ({ emails: { array_contains: [{ type: value }] } }) },
    primary: {
      kind: 'jsonKey',
      type: 'boolean',
      at: (value) => ({ emails: { array_contains: [{ primary: value }] } }),
    },
  },
  wrap: (where) => where,
  present: {},
};

const userGroups: Multi = {
  kind: 'multi',
  sub: {
    value: column('string', 'groupId', true, true),
    display: { kind: 'string', caseExact: false, required: true, at: (filter) => ({ group: { displayName: filter } }) },
  },
  wrap: (where) => ({ groups: { some: where } }),
  present: { groups: { some: {} } },
};

const groupMembers: Multi = {
  kind: 'multi',
  sub: {
    value: column('string', 'scimUserId', true, true),
    display: {
      kind: 'string',
      caseExact: false,
      required: false,
      at: (filter) => ({ scimUser: { displayName: filter } }),
    },
  },
  wrap: (where) => ({ members: { some: where } }),
  present: { members: { some: {} } },
};

const meta = {
  'meta.created': column('dateTime', 'createdAt', true, true),
  'meta.lastmodified': column('dateTime', 'updatedAt', true, true),
};

const USER: Resource = {
  schema: USER_SCHEMA,
  attributes: {
    id: column('string', 'id', true, true),
    username: column('string', 'userName', false, true),
    externalid: column('string', 'externalId', true, false),
    displayname: column('string', 'displayName', false, false),
    name: { kind: 'complex', present: { OR: [{ givenName: { gt: '' } }, { familyName: { gt: '' } }] } },
    'name.givenname': column('string', 'givenName', false, false),
    'name.familyname': column('string', 'familyName', false, false),
    active: column('boolean', 'active', true, true),
    emails,
    groups: userGroups,
    ...meta,
  },
};

const GROUP: Resource = {
  schema: GROUP_SCHEMA,
  attributes: {
    id: column('string', 'id', true, true),
    displayname: column('string', 'displayName', false, true),
    externalid: column('string', 'externalId', true, false),
    members: groupMembers,
    ...meta,
  },
};

/** `table[key]` for the table's own keys only: `__proto__` or `constructor` is no attribute. */
export function own<T>(table: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Finds an attribute by its path: names are case-insensitive (RFC 7643 2.1) and may carry the schema's URN. */
function resolve(resource: Resource, path: string): { attribute: Attribute; sub?: Scalar | JsonKey } {
  let name = path.toLowerCase();
  const urn = resource.schema.toLowerCase();
  if (name.startsWith(`${urn}:`)) name = name.slice(urn.length + 1);
  const direct = own(resource.attributes, name);
  if (direct) return { attribute: direct };
  const dot = name.lastIndexOf('.');
  if (dot > 0) {
    const parent = own(resource.attributes, name.slice(0, dot));
    const sub = parent?.kind === 'multi' ? own(parent.sub, name.slice(dot + 1)) : undefined;
    if (parent && sub) return { attribute: parent, sub };
  }
  throw new ScimInvalidFilterError(
    `The filter names the attribute ${shown(path)}, which ${resource === USER ? 'Users' : 'Groups'} cannot be filtered by`,
  );
}

// ---- comparisons ------------------------------------------------------------------------------------------------

// Prisma's contains, startsWith and endsWith are LIKE patterns whose wildcards it does not escape (prisma/prisma#19506).
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

function refuse(path: string, op: string, why: string): never {
  throw new ScimInvalidFilterError(`The filter compares ${shown(path)} with "${op}": ${why}`);
}

/** A comparison of a string column; null values are guarded so that `not` and `ne` keep two-valued logic. */
function compareString(attr: Scalar, path: string, op: CompareOp, value: Value): Where {
  if (typeof value !== 'string') refuse(path, op, 'its value must be a string');
  const mode = attr.caseExact ? {} : { mode: 'insensitive' };
  let filter: Record<string, unknown>;
  switch (op) {
    case 'eq':
    case 'ne':
      // Case-insensitive equality as LOWER(a) >= LOWER(b) and <= LOWER(b): Prisma's insensitive `equals` is an
      // unescaped ILIKE, and this form also uses the lower() unique indexes on userName and a group's displayName.
      filter = attr.caseExact ? { equals: value } : { gte: value, lte: value, ...mode };
      break;
    case 'co':
      filter = { contains: escapeLike(value), ...mode };
      break;
    case 'sw':
      filter = { startsWith: escapeLike(value), ...mode };
      break;
    case 'ew':
      filter = { endsWith: escapeLike(value), ...mode };
      break;
    default:
      filter = { [{ gt: 'gt', ge: 'gte', lt: 'lt', le: 'lte' }[op]]: value, ...mode };
  }
  const where = guarded(attr, filter);
  return op === 'ne' ? { NOT: where } : where;
}

function compareBoolean(attr: Scalar, path: string, op: CompareOp, value: Value): Where {
  // RFC 7644 3.4.2.2: ordering or substring operators on a boolean are an invalidFilter.
  if (op !== 'eq' && op !== 'ne') refuse(path, op, 'a boolean is compared with eq or ne only');
  if (typeof value !== 'boolean') refuse(path, op, 'its value must be true or false');
  const where = guarded(attr, { equals: value });
  return op === 'ne' ? { NOT: where } : where;
}

function compareDateTime(attr: Scalar, path: string, op: CompareOp, value: Value): Where {
  if (op === 'co' || op === 'sw' || op === 'ew')
    refuse(path, op, 'a date-time is compared with eq, ne, gt, ge, lt or le');
  const date = typeof value === 'string' ? parseTimestamp(value) : undefined;
  if (!date) refuse(path, op, 'its value must be an RFC 3339 date-time such as "2026-01-31T12:00:00Z"');
  const prismaOp = { eq: 'equals', ne: 'equals', gt: 'gt', ge: 'gte', lt: 'lt', le: 'lte' }[op];
  const where = guarded(attr, { [prismaOp]: date });
  return op === 'ne' ? { NOT: where } : where;
}

function compareJsonKey(key: JsonKey, path: string, op: CompareOp, value: Value): Where {
  if (op !== 'eq' && op !== 'ne') refuse(path, op, 'this sub-attribute is compared with eq or ne only');
  if (typeof value !== key.type) refuse(path, op, `its value must be a ${key.type}`);
  const where = key.at(value);
  return op === 'ne' ? { NOT: where } : where;
}

/** A nullable column's comparison also requires a value, so that NOT of it holds for rows without one. */
function guarded(attr: Scalar, filter: Record<string, unknown>): Where {
  return attr.required ? attr.at(filter) : { AND: [attr.at({ not: null }), attr.at(filter)] };
}

function present(attr: Scalar | JsonKey, path: string): Where {
  if (attr.kind === 'jsonKey') refuse(path, 'pr', 'this sub-attribute is compared with eq or ne only');
  if (attr.required && attr.kind !== 'string') return {};
  // A string is present when it is neither null nor empty (RFC 7644 3.4.2.2 "pr"); `> ''` says both in one comparison.
  return attr.kind === 'string' ? attr.at({ gt: '' }) : attr.at({ not: null });
}

function compareScalar(attr: Scalar | JsonKey, path: string, op: CompareOp, value: Value): Where {
  // RFC 7644 3.4.2.2 gives null as a comparison value: "eq null" is "not pr", "ne null" is "pr".
  if (value === null) {
    if (op === 'eq') return { NOT: present(attr, path) };
    if (op === 'ne') return present(attr, path);
    refuse(path, op, 'null is compared with eq or ne only');
  }
  if (attr.kind === 'jsonKey') return compareJsonKey(attr, path, op, value);
  if (attr.kind === 'boolean') return compareBoolean(attr, path, op, value);
  if (attr.kind === 'dateTime') return compareDateTime(attr, path, op, value);
  return compareString(attr, path, op, value);
}

// ---- the tree ---------------------------------------------------------------------------------------------------

/** Translates `filter`; inside a value path (`emails[...]`) names are the multi-valued attribute's sub-attributes. */
function translate(resource: Resource, filter: Filter, within?: { multi: Multi; path: string }): Where {
  switch (filter.op) {
    case 'and':
    case 'or': {
      const parts = (filter as { filters: Filter[] }).filters.map((f) => translate(resource, f, within));
      return filter.op === 'and' ? { AND: parts } : { OR: parts };
    }
    case 'not':
      return { NOT: translate(resource, (filter as { filter: Filter }).filter, within) };
    case '[]': {
      const { attrPath, valFilter } = filter as { attrPath: string; valFilter: Filter };
      if (within) throw new ScimInvalidFilterError('A value path cannot hold another value path');
      const { attribute, sub } = resolve(resource, attrPath);
      if (attribute.kind !== 'multi' || sub)
        throw new ScimInvalidFilterError(`${shown(attrPath)} is not a multi-valued attribute: it takes no [filter]`);
      return attribute.wrap(translate(resource, valFilter, { multi: attribute, path: attrPath }));
    }
    case 'pr': {
      const { attrPath } = filter as { attrPath: string };
      if (within) return present(subAttribute(within, attrPath), attrPath);
      const { attribute, sub } = resolve(resource, attrPath);
      if (attribute.kind === 'complex') return attribute.present;
      if (attribute.kind === 'multi') return sub ? attribute.wrap(present(sub, attrPath)) : attribute.present;
      return present(attribute, attrPath);
    }
    default: {
      const { attrPath, compValue } = filter;
      const op = filter.op;
      if (within) return compareScalar(subAttribute(within, attrPath), attrPath, op, compValue);
      const { attribute, sub } = resolve(resource, attrPath);
      if (attribute.kind === 'complex')
        refuse(attrPath, op, 'a complex attribute is compared through its sub-attributes');
      // A multi-valued attribute named alone compares its values (RFC 7644 3.4.2.2: "emails co ..." means emails.value).
      if (attribute.kind === 'multi')
        return attribute.wrap(compareScalar(sub ?? attribute.sub.value, attrPath, op, compValue));
      return compareScalar(attribute, attrPath, op, compValue);
    }
  }
}

function subAttribute(within: { multi: Multi; path: string }, name: string): Scalar | JsonKey {
  const found = own(within.multi.sub, name.toLowerCase());
  if (!found)
    throw new ScimInvalidFilterError(`${shown(within.path)} has no sub-attribute ${shown(name)} to filter by`);
  return found;
}

/** The where clause over a directory's users that a parsed filter asks for. */
export function userFilterWhere(filter: Filter): UserWhere {
  return translate(USER, filter);
}

/** The where clause over a directory's groups that a parsed filter asks for. */
export function groupFilterWhere(filter: Filter): GroupWhere {
  return translate(GROUP, filter);
}

/** `?filter=` of GET /Users, read and translated; refuses with ScimInvalidFilterError. */
export function scimUserWhere(text: string): UserWhere {
  return userFilterWhere(parseScimFilter(text));
}

/** `?filter=` of GET /Groups, read and translated; refuses with ScimInvalidFilterError. */
export function scimGroupWhere(text: string): GroupWhere {
  return groupFilterWhere(parseScimFilter(text));
}
