// The token endpoint's redeeming statements are composed from fragments (oauth/token/statements.ts), four ways each
// (with or without the audit row, with or without the license lookups). A statement is read whole: each composition
// is written out, as SQL with its parameters named, beside the grant that runs it, and this test fails when the code
// composes anything else. After a deliberate change, `npx vitest run test/oauth/token-statements.test.ts -u` writes
// the files again; their diff is the change to review.
import { describe, expect, it } from 'vitest';
import { REDEEM_CODE } from '../../schema/modules/oauth/token/authorization-code.ts';
import { REDEEM_REFRESH_TOKEN } from '../../schema/modules/oauth/token/refresh-token.ts';
import type { Composition } from '../../schema/modules/oauth/token/statements.ts';

const COMPOSITIONS: [string, Composition][] = [
  ['a client of plain scopes only, no audit row', { audit: false, products: false }],
  ['a client of plain scopes only, with AUDIT_TOKEN_ISSUANCE', { audit: true, products: false }],
  ['with the license lookups, no audit row', { audit: false, products: true }],
  ['with the license lookups and AUDIT_TOKEN_ISSUANCE', { audit: true, products: true }],
];

const written = (grant: string, statement: { readable: (how: Composition) => string }) =>
  [
    `-- The ${grant} grant's one statement, in each of its compositions, as the code composes it.\n` +
      '-- Written by test/oauth/token-statements.test.ts (run it with -u after a change); never run from here.',
    ...COMPOSITIONS.map(([name, how]) => `-- ${name}\n${statement.readable(how)};`),
  ].join('\n\n') + '\n';

describe('the redeeming statements, read whole', () => {
  it('authorization_code', async () => {
    await expect(written('authorization_code', REDEEM_CODE)).toMatchFileSnapshot(
      '../../schema/modules/oauth/token/authorization-code.sql',
    );
  });

  it('refresh_token', async () => {
    await expect(written('refresh_token', REDEEM_REFRESH_TOKEN)).toMatchFileSnapshot(
      '../../schema/modules/oauth/token/refresh-token.sql',
    );
  });
});
