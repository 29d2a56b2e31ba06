// SCIM filters (RFC 7644 3.4.2.2) read into Prisma where clauses, and PATCH bodies (RFC 7644 3.5.2) read and applied
// as Entra ID and Okta send them: pure functions, no database.
import { describe, expect, it } from 'vitest';
import {
  groupFilterWhere,
  MAX_FILTER_DEPTH,
  parseScimFilter,
  scimGroupWhere,
  scimUserWhere,
  userFilterWhere,
} from '../../server/scim/filter.ts';
import { patchGroup, patchUser, readPatchBody } from '../../server/scim/patch.ts';
import { groupInputFromScim, userInputFromScim } from '../../server/scim/input.ts';
import { ScimInvalidFilterError, ScimPatchError } from '../../server/scim/scim.errors.ts';
import { ScimInvalidValueError } from '../../schema/modules/directory/directory.errors.ts';
import type { DirectoryUser } from '../../schema/modules/directory/directory.types.ts';

const USER_URN = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** The where clause of a nullable column's comparison: a value is required, so NOT of it holds without one. */
const guarded = (field: string, filter: object) => ({ AND: [{ [field]: { not: null } }, { [field]: filter }] });
const insensitiveEq = (value: string) => ({ gte: value, lte: value, mode: 'insensitive' });

function refusedFilter(fn: () => unknown): ScimInvalidFilterError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ScimInvalidFilterError);
    expect((error as ScimInvalidFilterError).scimType).toBe('invalidFilter');
    expect((error as ScimInvalidFilterError).code).toBe('invalid_request');
    return error as ScimInvalidFilterError;
  }
  throw new Error('expected an invalidFilter refusal');
}

describe('user filters', () => {
  it('compares userName case-insensitively, as LOWER() bounds that use its index and need no LIKE escaping', () => {
    expect(scimUserWhere('userName eq "Alice@Example.com"')).toEqual({ userName: insensitiveEq('Alice@Example.com') });
    expect(scimUserWhere('userName eq "a_b%c"')).toEqual({ userName: insensitiveEq('a_b%c') });
  });

  it('takes every comparison operator on strings, escaping LIKE wildcards', () => {
    expect(scimUserWhere('userName ne "x"')).toEqual({ NOT: { userName: insensitiveEq('x') } });
    expect(scimUserWhere('userName co "a_%b"')).toEqual({ userName: { contains: 'a\\_\\%b', mode: 'insensitive' } });
    expect(scimUserWhere('userName sw "J"')).toEqual({ userName: { startsWith: 'J', mode: 'insensitive' } });
    expect(scimUserWhere('userName ew "@example.com"')).toEqual({
      userName: { endsWith: '@example.com', mode: 'insensitive' },
    });
    expect(scimUserWhere('userName gt "m"')).toEqual({ userName: { gt: 'm', mode: 'insensitive' } });
    expect(scimUserWhere('userName ge "m"')).toEqual({ userName: { gte: 'm', mode: 'insensitive' } });
    expect(scimUserWhere('userName lt "m"')).toEqual({ userName: { lt: 'm', mode: 'insensitive' } });
    expect(scimUserWhere('userName le "m"')).toEqual({ userName: { lte: 'm', mode: 'insensitive' } });
  });

  it('compares id and externalId exactly (caseExact), nullable externalId guarded', () => {
    expect(scimUserWhere('id eq "0191-A"')).toEqual({ id: { equals: '0191-A' } });
    expect(scimUserWhere('externalId eq "E-1"')).toEqual(guarded('externalId', { equals: 'E-1' }));
    expect(scimUserWhere('externalId ne "E-1"')).toEqual({ NOT: guarded('externalId', { equals: 'E-1' }) });
    expect(scimUserWhere('externalId sw "E"')).toEqual(guarded('externalId', { startsWith: 'E' }));
  });

  it('reads names, displayName, active and the meta dates', () => {
    expect(scimUserWhere('displayName co "ann"')).toEqual(
      guarded('displayName', { contains: 'ann', mode: 'insensitive' }),
    );
    expect(scimUserWhere('name.givenName eq "Ann"')).toEqual(guarded('givenName', insensitiveEq('Ann')));
    expect(scimUserWhere('name.familyName sw "Sm"')).toEqual(
      guarded('familyName', { startsWith: 'Sm', mode: 'insensitive' }),
    );
    expect(scimUserWhere('active eq true')).toEqual({ active: { equals: true } });
    expect(scimUserWhere('active ne false')).toEqual({ NOT: { active: { equals: false } } });
    expect(scimUserWhere('meta.created gt "2026-01-01T00:00:00Z"')).toEqual({
      createdAt: { gt: new Date('2026-01-01T00:00:00Z') },
    });
    expect(scimUserWhere('meta.lastModified le "2026-01-01T10:00:00+02:00"')).toEqual({
      updatedAt: { lte: new Date('2026-01-01T08:00:00Z') },
    });
    expect(scimUserWhere('meta.lastModified eq "2026-01-01T00:00:00Z"')).toEqual({
      updatedAt: { equals: new Date('2026-01-01T00:00:00Z') },
    });
  });

  it('reads emails as the primary address, and type and primary from the stored list', () => {
    expect(scimUserWhere('emails eq "a@x.test"')).toEqual({ email: insensitiveEq('a@x.test') });
    expect(scimUserWhere('emails.value eq "a@x.test"')).toEqual({ email: insensitiveEq('a@x.test') });
    expect(scimUserWhere('emails co "@x.test"')).toEqual({ email: { contains: '@x.test', mode: 'insensitive' } });
    expect(scimUserWhere('emails.type eq "work"')).toEqual({ emails: { array_contains: [{ type: 'work' }] } });
    expect(scimUserWhere('emails[primary eq true]')).toEqual({ emails: { array_contains: [{ primary: true }] } });
  });

  it('reads value paths, including the sub-attribute after them as Entra ID sends it', () => {
    expect(scimUserWhere('emails[type eq "work"].value eq "a@x.test"')).toEqual({
      AND: [{ emails: { array_contains: [{ type: 'work' }] } }, { email: insensitiveEq('a@x.test') }],
    });
    expect(scimUserWhere('emails[type eq "work" and value co "x"]')).toEqual({
      AND: [{ emails: { array_contains: [{ type: 'work' }] } }, { email: { contains: 'x', mode: 'insensitive' } }],
    });
    expect(scimUserWhere('groups[value eq "g1"]')).toEqual({ groups: { some: { groupId: { equals: 'g1' } } } });
    expect(scimUserWhere('groups.display eq "Admins"')).toEqual({
      groups: { some: { group: { displayName: insensitiveEq('Admins') } } },
    });
  });

  it('reads and, or, not and parentheses with their precedence', () => {
    expect(scimUserWhere('userName eq "a" or userName eq "b" and active eq true')).toEqual({
      OR: [{ userName: insensitiveEq('a') }, { AND: [{ userName: insensitiveEq('b') }, { active: { equals: true } }] }],
    });
    expect(scimUserWhere('(userName eq "a" or userName eq "b") and active eq true')).toEqual({
      AND: [{ OR: [{ userName: insensitiveEq('a') }, { userName: insensitiveEq('b') }] }, { active: { equals: true } }],
    });
    expect(scimUserWhere('not (displayName eq "x")')).toEqual({ NOT: guarded('displayName', insensitiveEq('x')) });
    expect(scimUserWhere('userName pr and not (externalId pr)')).toEqual({
      AND: [{ userName: { gt: '' } }, { NOT: { externalId: { gt: '' } } }],
    });
  });

  it('reads pr and null comparisons', () => {
    expect(scimUserWhere('externalId pr')).toEqual({ externalId: { gt: '' } });
    expect(scimUserWhere('active pr')).toEqual({});
    expect(scimUserWhere('emails pr')).toEqual({});
    expect(scimUserWhere('groups pr')).toEqual({ groups: { some: {} } });
    expect(scimUserWhere('name pr')).toEqual({ OR: [{ givenName: { gt: '' } }, { familyName: { gt: '' } }] });
    expect(scimUserWhere('externalId eq null')).toEqual({ NOT: { externalId: { gt: '' } } });
    expect(scimUserWhere('externalId ne null')).toEqual({ externalId: { gt: '' } });
  });

  it('takes attribute names and operators in any case, and the core schema URN as a prefix', () => {
    const expected = { userName: insensitiveEq('a') };
    expect(scimUserWhere('USERNAME EQ "a"')).toEqual(expected);
    expect(scimUserWhere('username Eq "a"')).toEqual(expected);
    expect(scimUserWhere(`${USER_URN}:userName eq "a"`)).toEqual(expected);
    expect(scimUserWhere(`${USER_URN.toLowerCase()}:name.GIVENNAME eq "A"`)).toEqual(
      guarded('givenName', insensitiveEq('A')),
    );
    expect(scimUserWhere('Emails[Type eq "work"]')).toEqual({ emails: { array_contains: [{ type: 'work' }] } });
    expect(scimUserWhere('userName eq "a" AND active eq true OR active eq false')).toEqual({
      OR: [{ AND: [expected, { active: { equals: true } }] }, { active: { equals: false } }],
    });
  });
});

describe('group filters', () => {
  it('reads displayName (case-insensitive), id, externalId and meta', () => {
    expect(scimGroupWhere('displayName eq "Admins"')).toEqual({ displayName: insensitiveEq('Admins') });
    expect(scimGroupWhere('id eq "g1"')).toEqual({ id: { equals: 'g1' } });
    expect(scimGroupWhere('externalId eq "x"')).toEqual(guarded('externalId', { equals: 'x' }));
    expect(scimGroupWhere('meta.created ge "2026-01-01T00:00:00Z"')).toEqual({
      createdAt: { gte: new Date('2026-01-01T00:00:00Z') },
    });
    expect(scimGroupWhere('urn:ietf:params:scim:schemas:core:2.0:Group:displayName sw "Ad"')).toEqual({
      displayName: { startsWith: 'Ad', mode: 'insensitive' },
    });
  });

  it('reads members as a member with that user id, as Entra ID checks a membership', () => {
    expect(scimGroupWhere('members[value eq "u1"]')).toEqual({ members: { some: { scimUserId: { equals: 'u1' } } } });
    expect(scimGroupWhere('members.value eq "u1"')).toEqual({ members: { some: { scimUserId: { equals: 'u1' } } } });
    expect(scimGroupWhere('members eq "u1"')).toEqual({ members: { some: { scimUserId: { equals: 'u1' } } } });
    expect(scimGroupWhere('id eq "g1" and members[value eq "u1"]')).toEqual({
      AND: [{ id: { equals: 'g1' } }, { members: { some: { scimUserId: { equals: 'u1' } } } }],
    });
    expect(scimGroupWhere('members[value eq "u1" or value eq "u2"]')).toEqual({
      members: { some: { OR: [{ scimUserId: { equals: 'u1' } }, { scimUserId: { equals: 'u2' } }] } },
    });
    expect(scimGroupWhere('members pr')).toEqual({ members: { some: {} } });
    expect(scimGroupWhere('not (members pr)')).toEqual({ NOT: { members: { some: {} } } });
  });

  it('refuses User attributes on groups and Group attributes on users', () => {
    refusedFilter(() => scimGroupWhere('userName eq "a"'));
    refusedFilter(() => scimUserWhere('members[value eq "a"]'));
    refusedFilter(() => scimGroupWhere(`${USER_URN}:displayName eq "a"`));
    refusedFilter(() => scimUserWhere('urn:ietf:params:scim:schemas:core:2.0:Group:displayName eq "a"'));
  });
});

describe('refused filters', () => {
  it('refuses unknown attributes, the enterprise extension among them', () => {
    for (const text of [
      'nickName eq "a"',
      'foo pr',
      'name.middleName eq "a"',
      'emails.display eq "a"',
      'meta.version eq "1"',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "1"',
      'groups[type eq "direct"]',
      '__proto__ eq "a"',
      'constructor.prototype eq "a"',
      'constructor eq "a"',
      'toString pr',
      'emails.constructor eq "a"',
      'emails[hasOwnProperty eq "a"]',
    ]) {
      const error = refusedFilter(() => scimUserWhere(text));
      expect(error.message.length).toBeLessThan(300);
    }
  });

  it('refuses comparisons that make no sense for the attribute', () => {
    for (const text of [
      'active gt true',
      'active co "t"',
      'active eq "true"',
      'userName eq 5',
      'userName eq true',
      'meta.created co "2026"',
      'meta.created eq "yesterday"',
      'meta.created gt 5',
      'name eq "x"',
      'emails[type gt "a"]',
      'emails.type co "w"',
      'emails[type pr]',
      'userName gt null',
      'userName[value eq "a"]',
      'emails[value eq "a"].type[x eq "y"]',
      'emails[nope eq "a"]',
      'members[emails[type eq "w"]]',
    ]) {
      refusedFilter(() => scimUserWhere(text));
    }
    refusedFilter(() => scimGroupWhere('members[value gt 5]'));
    refusedFilter(() => scimGroupWhere('members[value eq "a"].value[x eq "y"]'));
  });

  it('refuses malformed text with one safe message', () => {
    for (const text of [
      '',
      '   ',
      'userName',
      'userName eq',
      'userName eq "unclosed',
      'userName eq "a" and',
      '(userName eq "a"',
      'userName eq "a")',
      'userName eq "a" userName eq "b"',
      'emails[type eq "work"',
      'emails type eq "work"]',
      'eq "a"',
      '"a" eq userName',
      "userName eq 'a'",
      'userName === "a"',
      'userName eq a',
      'userName eq {"a":1}',
      'or',
      'not',
      '!!!',
      '[]',
      ')(',
      '\\',
      'userName eq "a" or or userName eq "b"',
      'userName lk "a"',
    ]) {
      const error = refusedFilter(() => scimUserWhere(text));
      expect(error.message).not.toContain('Unexpected');
    }
  });

  it('refuses NUL, control characters, line breaks and malformed Unicode before parsing', () => {
    for (const text of [
      'userName eq "a\u0000"',
      'userName eq "a"\u0000',
      'userName\teq\u0001"a"',
      'userName eq "a\nb"',
      'userName eq "\ud800"',
    ]) {
      refusedFilter(() => scimUserWhere(text));
    }
  });

  it('refuses at once an unclosed quote with many line breaks (the parser would backtrack exponentially)', () => {
    const started = performance.now();
    refusedFilter(() => scimUserWhere(`userName eq "${'\n'.repeat(60)}`));
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('refuses filters over 2,000 characters, and a 10 kB one quickly', () => {
    const long = `userName eq "${'a'.repeat(1990)}"`;
    expect(long.length).toBeGreaterThan(2000);
    refusedFilter(() => scimUserWhere(long));
    const huge = Array.from({ length: 500 }, (_, i) => `userName eq "${i}"`).join(' or ');
    expect(huge.length).toBeGreaterThan(10_000);
    const started = performance.now();
    refusedFilter(() => scimUserWhere(huge));
    expect(performance.now() - started).toBeLessThan(50);
    // just under the limit is fine
    const fits = `userName eq "${'a'.repeat(2000 - 14)}"`;
    expect(fits.length).toBe(2000);
    expect(scimUserWhere(fits)).toEqual({ userName: insensitiveEq('a'.repeat(1986)) });
  });

  it(`refuses nesting deeper than ${MAX_FILTER_DEPTH}, in parentheses or in the tree, and 900 parentheses at once`, () => {
    const nested = (n: number) => `${'('.repeat(n)}userName eq "a"${')'.repeat(n)}`;
    expect(scimUserWhere(nested(MAX_FILTER_DEPTH))).toEqual({ userName: insensitiveEq('a') });
    refusedFilter(() => scimUserWhere(nested(MAX_FILTER_DEPTH + 1)));
    // brackets and parentheses inside quoted values do not count
    expect(scimUserWhere(`userName eq "${'(['.repeat(30)}"`)).toEqual({ userName: insensitiveEq('(['.repeat(30)) });
    const nots = (n: number) => `${'not ('.repeat(n)}userName eq "a"${')'.repeat(n)}`;
    expect(() => scimUserWhere(nots(MAX_FILTER_DEPTH - 1))).not.toThrow();
    refusedFilter(() => scimUserWhere(nots(MAX_FILTER_DEPTH)));
    const ands = (n: number): string =>
      n === 0 ? 'active eq true' : `userName eq "a" and (active eq false or ${ands(n - 1)})`;
    refusedFilter(() => scimUserWhere(ands(12)));
    refusedFilter(() => scimUserWhere(nested(900)));
    refusedFilter(() => scimUserWhere('not '.repeat(450) + 'userName eq "a"'));
  });

  it("parses what it accepts into the package's tree", () => {
    expect(parseScimFilter('userName eq "a"')).toEqual({ op: 'eq', attrPath: 'userName', compValue: 'a' });
    expect(() => userFilterWhere({ op: 'eq', attrPath: 'nope', compValue: 'a' })).toThrow(ScimInvalidFilterError);
    expect(groupFilterWhere({ op: 'pr', attrPath: 'externalId' })).toEqual({ externalId: { gt: '' } });
  });
});

// ---- PATCH ------------------------------------------------------------------------------------------------------

const body = (...Operations: unknown[]) => ({ schemas: [PATCH_OP], Operations });

function refusedPatch(fn: () => unknown, scimType: string): ScimPatchError | ScimInvalidValueError {
  try {
    fn();
  } catch (error) {
    expect(error).toSatisfy((e) => e instanceof ScimPatchError || e instanceof ScimInvalidValueError);
    expect((error as ScimPatchError).scimType).toBe(scimType);
    expect((error as ScimPatchError).code).toBe('invalid_request');
    return error as ScimPatchError;
  }
  throw new Error(`expected a ${scimType} refusal`);
}

const USER: DirectoryUser = {
  id: 'u1',
  userName: 'ann@example.com',
  externalId: 'ext-1',
  active: true,
  displayName: 'Ann Smith',
  givenName: 'Ann',
  familyName: 'Smith',
  email: 'ann@example.com',
  emails: [{ value: 'ann@example.com', primary: true, type: 'work' }],
  groups: [{ id: 'g1', displayName: 'Staff' }],
  version: 3,
  createdAt: new Date('2026-01-01T00:00:00Z'),
  updatedAt: new Date('2026-01-02T00:00:00Z'),
};
const AS_INPUT = {
  userName: 'ann@example.com',
  externalId: 'ext-1',
  active: true,
  displayName: 'Ann Smith',
  givenName: 'Ann',
  familyName: 'Smith',
  emails: [{ value: 'ann@example.com', primary: true, type: 'work' }],
};

const patched = (...operations: unknown[]) => patchUser(USER, readPatchBody(body(...operations)));

describe('PATCH bodies', () => {
  it('reads operations, ops in any case', () => {
    expect(
      readPatchBody(
        body(
          { op: 'Replace', path: 'active', value: 'False' },
          { op: 'ADD', value: { a: 1 } },
          { op: 'remove', path: 'x' },
        ),
      ),
    ).toEqual([
      { op: 'replace', path: 'active', value: 'False' },
      { op: 'add', value: { a: 1 } },
      { op: 'remove', path: 'x' },
    ]);
    // member names are case-insensitive too
    expect(
      readPatchBody({
        SCHEMAS: [PATCH_OP.toUpperCase()],
        operations: [{ OP: 'add', Path: 'displayName', VALUE: 'x' }],
      }),
    ).toEqual([{ op: 'add', path: 'displayName', value: 'x' }]);
  });

  it('refuses a body that is not a PatchOp', () => {
    for (const bad of [
      null,
      [],
      'x',
      5,
      {},
      { Operations: [{ op: 'add', value: {} }] },
      { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], Operations: [{ op: 'add', value: {} }] },
      { schemas: PATCH_OP, Operations: [{ op: 'add', value: {} }] },
      body(),
      { schemas: [PATCH_OP], Operations: {} },
      { schemas: [PATCH_OP], Operations: 'add' },
    ]) {
      refusedPatch(() => readPatchBody(bad), 'invalidSyntax');
    }
  });

  it('refuses more than 1,000 operations and takes 1,000', () => {
    const op = { op: 'replace', path: 'displayName', value: 'x' };
    expect(readPatchBody(body(...Array(1000).fill(op)))).toHaveLength(1000);
    refusedPatch(() => readPatchBody(body(...Array(1001).fill(op))), 'invalidSyntax');
  });

  it('refuses bad operations with their RFC 7644 3.12 type', () => {
    refusedPatch(() => readPatchBody(body('add')), 'invalidSyntax');
    refusedPatch(() => readPatchBody(body({ op: 'move', path: 'a', value: 1 })), 'invalidSyntax');
    refusedPatch(() => readPatchBody(body({ op: 5, path: 'a' })), 'invalidSyntax');
    refusedPatch(() => readPatchBody(body({ path: 'a', value: 1 })), 'invalidSyntax');
    refusedPatch(() => readPatchBody(body({ op: 'remove' })), 'noTarget');
    refusedPatch(() => readPatchBody(body({ op: 'add', path: 'displayName' })), 'invalidValue');
    refusedPatch(() => readPatchBody(body({ op: 'add', path: 5, value: 1 })), 'invalidPath');
    refusedPatch(() => readPatchBody(body({ op: 'add', path: '', value: 1 })), 'invalidPath');
    refusedPatch(() => readPatchBody(body({ op: 'add', path: 'a'.repeat(1001), value: 1 })), 'invalidPath');
  });
});

describe('PATCH of a user', () => {
  it('keeps the user as it is with nothing to change', () => {
    expect(patched({ op: 'replace', path: 'title', value: 'CEO' })).toEqual(AS_INPUT);
  });

  it("takes Entra ID's operations: Replace with a path, booleans as strings, emails by type", () => {
    expect(patched({ op: 'Replace', path: 'active', value: 'False' })).toEqual({ ...AS_INPUT, active: false });
    expect(patched({ op: 'Replace', path: 'active', value: 'True' })).toEqual({ ...AS_INPUT, active: true });
    expect(patched({ op: 'Add', path: 'emails[type eq "work"].value', value: 'ann.smith@example.com' })).toEqual({
      ...AS_INPUT,
      emails: [{ value: 'ann.smith@example.com', primary: true, type: 'work' }],
    });
    expect(
      patched(
        { op: 'Replace', path: 'name.givenName', value: 'Anne' },
        { op: 'Replace', path: 'displayName', value: 'Anne Smith' },
        { op: 'Add', path: 'externalId', value: 'ext-2' },
      ),
    ).toEqual({
      ...AS_INPUT,
      givenName: 'Anne',
      displayName: 'Anne Smith',
      externalId: 'ext-2',
    });
    // a home address the user does not have yet is added (RFC 7644 3.5.2.1 with a value filter)
    expect(patched({ op: 'Add', path: 'emails[type eq "home"].value', value: 'ann@home.test' }).emails).toEqual([
      { value: 'ann@example.com', primary: true, type: 'work' },
      { value: 'ann@home.test', type: 'home' },
    ]);
  });

  it("takes Entra ID's value objects without a path, dotted keys and the enterprise extension among them", () => {
    expect(patched({ op: 'Replace', value: { active: false } })).toEqual({ ...AS_INPUT, active: false });
    expect(
      patched({
        op: 'replace',
        value: { 'name.givenName': 'Anne', 'name.formatted': 'Anne Smith', displayName: 'Anne S' },
      }),
    ).toEqual({
      ...AS_INPUT,
      givenName: 'Anne',
      displayName: 'Anne S',
    });
    expect(
      patched({
        op: 'Add',
        value: {
          'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department': 'Sales',
          'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: '7' },
          title: 'Director',
          [`${USER_URN}:userName`]: 'ann.smith@example.com',
        },
      }),
    ).toEqual({ ...AS_INPUT, userName: 'ann.smith@example.com' });
  });

  it("takes Okta's operations: replace without a path, the id echoed", () => {
    expect(patched({ op: 'replace', value: { id: 'u1', active: false } })).toEqual({ ...AS_INPUT, active: false });
    expect(patched({ op: 'replace', value: { name: { givenName: 'Anne' } } })).toEqual({
      ...AS_INPUT,
      givenName: 'Anne',
    });
  });

  it('merges a complex value into the attribute and leaves the sub-attributes it does not name', () => {
    expect(patched({ op: 'replace', path: 'name', value: { familyName: 'Jones', Formatted: 'x' } })).toEqual({
      ...AS_INPUT,
      familyName: 'Jones',
    });
    expect(patched({ op: 'add', value: { NAME: { GivenName: 'Anne' } } })).toEqual({ ...AS_INPUT, givenName: 'Anne' });
  });

  it('adds, replaces and removes addresses and other attributes', () => {
    expect(patched({ op: 'add', path: 'emails', value: [{ value: 'b@x.test', type: 'home' }] }).emails).toEqual([
      { value: 'ann@example.com', primary: true, type: 'work' },
      { value: 'b@x.test', type: 'home' },
    ]);
    expect(patched({ op: 'replace', path: 'emails', value: [{ Value: 'b@x.test', Primary: 'True' }] }).emails).toEqual([
      { value: 'b@x.test', primary: true },
    ]);
    expect(patched({ op: 'remove', path: 'emails[type eq "work"]' }).emails).toBeUndefined();
    expect(patched({ op: 'remove', path: 'name.givenName' })).toEqual({ ...AS_INPUT, givenName: undefined });
    expect(patched({ op: 'remove', path: 'externalId' })).not.toHaveProperty('externalId');
    expect(patched({ op: 'remove', path: 'phoneNumbers[type eq "work"]' })).toEqual(AS_INPUT);
  });

  it('takes paths in any case and with the core URN', () => {
    expect(patched({ op: 'replace', path: 'DISPLAYNAME', value: 'X' }).displayName).toBe('X');
    expect(patched({ op: 'replace', path: `${USER_URN}:name.familyName`, value: 'Y' }).familyName).toBe('Y');
    expect(patched({ op: 'replace', path: 'Emails[Type eq "work"].Value', value: 'z@x.test' }).emails).toEqual([
      { value: 'z@x.test', primary: true, type: 'work' },
    ]);
  });

  it("refuses unknown attributes, other resources' and read-only ones", () => {
    refusedPatch(() => patched({ op: 'replace', path: 'nope', value: 1 }), 'invalidPath');
    refusedPatch(() => patched({ op: 'replace', path: 'name.nope', value: 1 }), 'invalidPath');
    refusedPatch(() => patched({ op: 'replace', path: 'members', value: [{ value: 'u2' }] }), 'invalidPath');
    refusedPatch(
      () => patched({ op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:Group:displayName', value: 'x' }),
      'invalidPath',
    );
    refusedPatch(() => patched({ op: 'replace', path: 'urn:example:custom:attr', value: 'x' }), 'invalidPath');
    refusedPatch(() => patched({ op: 'replace', value: { nope: 1 } }), 'invalidPath');
    refusedPatch(() => patched({ op: 'replace', path: 'userName[value eq "a"]', value: 'x' }), 'invalidPath');
    refusedPatch(() => patched({ op: 'replace', path: 'emails[nope eq "a"].value', value: 'x' }), 'invalidFilter');
    refusedPatch(() => patched({ op: 'replace', path: 'emails[type eq ].value', value: 'x' }), 'invalidFilter');
    refusedPatch(() => patched({ op: 'replace', path: 'emails..value', value: 'x' }), 'invalidPath');
    refusedPatch(() => patched({ op: 'add', path: 'groups', value: [{ value: 'g2' }] }), 'mutability');
    refusedPatch(() => patched({ op: 'replace', path: 'id', value: 'u2' }), 'mutability');
    refusedPatch(() => patched({ op: 'replace', value: { groups: [] } }), 'mutability');
    refusedPatch(() => patched({ op: 'replace', value: 'False' }), 'invalidValue');
  });

  it('refuses what leaves the user invalid, and replace of a value that is not there', () => {
    refusedPatch(() => patched({ op: 'remove', path: 'userName' }), 'invalidValue');
    refusedPatch(() => patched({ op: 'replace', path: 'active', value: 'maybe' }), 'invalidValue');
    refusedPatch(() => patched({ op: 'replace', path: 'userName', value: 5 }), 'invalidValue');
    refusedPatch(() => patched({ op: 'replace', path: 'emails', value: 'a@x.test' }), 'invalidValue');
    refusedPatch(
      () => patched({ op: 'replace', path: 'emails[type eq "work" and primary eq false].value', value: 'x@x.test' }),
      'noTarget',
    );
  });

  it('never writes through __proto__ or constructor paths', () => {
    const before = JSON.stringify(Object.prototype);
    for (const operation of [
      { op: 'add', path: '__proto__.polluted', value: 'yes' },
      { op: 'add', value: { '__proto__.polluted': 'yes' } },
      { op: 'add', value: JSON.parse('{"__proto__": {"polluted": "yes"}}') },
      { op: 'add', path: 'constructor.prototype.polluted', value: 'yes' },
      { op: 'add', path: 'name', value: JSON.parse('{"__proto__": {"polluted": "yes"}}') },
      { op: 'add', path: 'emails', value: [JSON.parse('{"value": "a@x.test", "__proto__": {"polluted": "yes"}}')] },
    ]) {
      try {
        patched(operation);
      } catch {
        // refused or not, nothing leaks
      }
    }
    for (const path of [
      'constructor',
      'name.constructor',
      'emails[constructor eq "a"].value',
      'emails.__proto__',
      'toString',
    ]) {
      expect(() => patched({ op: 'replace', path, value: 'x' })).toThrow(ScimPatchError);
    }
    expect(() => patched({ op: 'replace', value: { constructor: 'x' } })).toThrow(ScimPatchError);
    expect(patched({ op: 'replace', path: 'name', value: { constructor: 'x', hasOwnProperty: 'y' } })).toEqual(
      AS_INPUT,
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(Object.prototype)).toBe(before);
  });
});

describe('PATCH of a group', () => {
  const group = (...operations: unknown[]) => patchGroup(readPatchBody(body(...operations)));

  it("takes Entra ID's member operations: Add and Remove with a path and a list of values", () => {
    expect(group({ op: 'Add', path: 'members', value: [{ value: 'u1' }, { value: 'u2' }] })).toEqual({
      add: ['u1', 'u2'],
    });
    expect(group({ op: 'Remove', path: 'members', value: [{ value: 'u1' }] })).toEqual({ remove: ['u1'] });
    expect(group({ op: 'Replace', path: 'displayName', value: 'Sales' })).toEqual({ displayName: 'Sales' });
    expect(group({ op: 'Replace', value: { displayName: 'Sales' } })).toEqual({ displayName: 'Sales' });
    expect(group({ op: 'Add', path: 'externalId', value: 'e1' })).toEqual({ externalId: 'e1' });
  });

  it("takes Okta's: remove by a value filter, replace without a path with the id echoed, replace of the list", () => {
    expect(group({ op: 'remove', path: 'members[value eq "u1"]' })).toEqual({ remove: ['u1'] });
    expect(group({ op: 'remove', path: 'members[value eq "u1" or value eq "u2"]' })).toEqual({ remove: ['u1', 'u2'] });
    expect(group({ op: 'replace', value: { id: 'g1', displayName: 'Sales' } })).toEqual({ displayName: 'Sales' });
    expect(group({ op: 'replace', path: 'members', value: [{ value: 'u3', display: 'Ann' }] })).toEqual({
      members: ['u3'],
    });
    expect(group({ op: 'add', value: { members: [{ value: 'u4' }] } })).toEqual({ add: ['u4'] });
    expect(group({ op: 'replace', value: { members: [{ value: 'u4' }] } })).toEqual({ members: ['u4'] });
  });

  it('removes every member when the path names members and no value', () => {
    expect(group({ op: 'remove', path: 'members' })).toEqual({ members: [] });
    expect(group({ op: 'remove', path: 'members' }, { op: 'add', path: 'members', value: [{ value: 'u1' }] })).toEqual({
      members: ['u1'],
    });
  });

  it('keeps operations in order: the last word on a member counts', () => {
    expect(
      group({ op: 'add', path: 'members', value: [{ value: 'u1' }] }, { op: 'remove', path: 'members[value eq "u1"]' }),
    ).toEqual({ remove: ['u1'] });
    expect(
      group(
        { op: 'remove', path: 'members', value: [{ value: 'u1' }] },
        { op: 'add', path: 'members', value: { value: 'u1' } },
      ),
    ).toEqual({ add: ['u1'] });
    expect(
      group(
        { op: 'replace', path: 'members', value: [{ value: 'u1' }, { value: 'u2' }] },
        { op: 'remove', path: 'members', value: [{ value: 'u1' }] },
        { op: 'add', path: 'members', value: [{ value: 'u3' }] },
      ),
    ).toEqual({ members: ['u2', 'u3'] });
    expect(group({ op: 'remove', path: 'externalId' })).toEqual({ externalId: null });
  });

  it('takes paths in any case and with the Group URN', () => {
    expect(group({ op: 'add', path: 'MEMBERS', value: [{ VALUE: 'u1' }] })).toEqual({ add: ['u1'] });
    expect(
      group({ op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:Group:displayName', value: 'X' }),
    ).toEqual({ displayName: 'X' });
    expect(group({ op: 'remove', path: 'Members[Value eq "u1"]' })).toEqual({ remove: ['u1'] });
  });

  it('refuses what it cannot apply', () => {
    refusedPatch(() => group({ op: 'add', path: 'userName', value: 'x' }), 'invalidPath');
    refusedPatch(
      () => group({ op: 'add', path: 'urn:ietf:params:scim:schemas:core:2.0:User:userName', value: 'x' }),
      'invalidPath',
    );
    refusedPatch(
      () =>
        group({ op: 'add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'x' }),
      'invalidPath',
    );
    refusedPatch(() => group({ op: 'replace', value: { nope: 1 } }), 'invalidPath');
    refusedPatch(() => group({ op: 'replace', path: 'members[value eq "u1"].display', value: 'x' }), 'invalidPath');
    refusedPatch(() => group({ op: 'remove', path: 'members.value' }), 'invalidPath');
    refusedPatch(() => group({ op: 'remove', path: 'members[display eq "Ann"]' }), 'invalidFilter');
    refusedPatch(() => group({ op: 'remove', path: 'members[value eq "u1" and value eq "u2"]' }), 'invalidFilter');
    refusedPatch(() => group({ op: 'remove', path: 'members[value eq ]' }), 'invalidFilter');
    refusedPatch(() => group({ op: 'remove', path: 'members[value eq ' }), 'invalidPath');
    refusedPatch(() => group({ op: 'remove', path: 'displayName' }), 'mutability');
    refusedPatch(() => group({ op: 'replace', path: 'id', value: 'x' }), 'mutability');
    refusedPatch(() => group({ op: 'replace', path: 'displayName', value: 5 }), 'invalidValue');
    refusedPatch(() => group({ op: 'replace', path: 'displayName', value: '  ' }), 'invalidValue');
    refusedPatch(() => group({ op: 'replace', path: 'externalId', value: { a: 1 } }), 'invalidValue');
    refusedPatch(() => group({ op: 'add', path: 'members', value: ['u1'] }), 'invalidValue');
    refusedPatch(() => group({ op: 'add', path: 'members', value: [{ value: 5 }] }), 'invalidValue');
    refusedPatch(() => group({ op: 'add', path: 'members', value: [{ id: 'u1' }] }), 'invalidValue');
    refusedPatch(() => group({ op: 'add', path: 'members', value: [{ value: 'x'.repeat(201) }] }), 'invalidValue');
    refusedPatch(() => group({ op: 'add', value: 'members' }), 'invalidValue');
  });
});

describe('resources read as the services take them', () => {
  it('reads a User as Entra ID posts it, unknown attributes and the enterprise extension ignored', () => {
    expect(
      userInputFromScim({
        schemas: [USER_URN, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
        externalId: 'e1',
        userName: 'Test_User_1@example.com',
        active: true,
        displayName: 'Test User',
        emails: [{ primary: true, type: 'work', value: 'Test_User_1@example.com' }],
        meta: { resourceType: 'User' },
        name: { formatted: 'Test User', familyName: 'User', givenName: 'Test' },
        roles: [],
        title: 'x',
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Sales' },
      }),
    ).toEqual({
      userName: 'Test_User_1@example.com',
      externalId: 'e1',
      active: true,
      displayName: 'Test User',
      givenName: 'Test',
      familyName: 'User',
      emails: [{ value: 'Test_User_1@example.com', primary: true, type: 'work' }],
    });
  });

  it("takes attribute names in any case, and active as Entra's strings", () => {
    expect(userInputFromScim({ USERNAME: 'a', Active: 'False', NAME: { GIVENNAME: 'A' } })).toEqual({
      userName: 'a',
      active: false,
      givenName: 'A',
    });
  });

  it('refuses a User it cannot read', () => {
    for (const bad of [
      null,
      [],
      'a',
      {},
      { userName: '' },
      { userName: 5 },
      { userName: 'a', active: 'yes' },
      { userName: 'a', emails: 'a@x' },
      { userName: 'a', emails: [{}] },
      { userName: 'a', emails: [{ value: 5 }] },
      { userName: 'a', name: 'A' },
      { userName: 'a', userNAME: 'b' },
      { userName: 'a', externalId: 5 },
      { userName: 'a'.repeat(501) },
    ]) {
      refusedPatch(() => userInputFromScim(bad), 'invalidValue');
    }
  });

  it('reads and refuses Groups', () => {
    expect(
      groupInputFromScim({ displayName: 'Sales', members: [{ value: 'u1', display: 'A' }], externalId: 'e' }),
    ).toEqual({ displayName: 'Sales', externalId: 'e', members: ['u1'] });
    expect(groupInputFromScim({ DisplayName: 'Sales' })).toEqual({ displayName: 'Sales' });
    for (const bad of [
      null,
      {},
      { displayName: 5 },
      { displayName: 'a', members: {} },
      { displayName: 'a', members: [{ value: 1 }] },
    ]) {
      refusedPatch(() => groupInputFromScim(bad), 'invalidValue');
    }
  });
});
