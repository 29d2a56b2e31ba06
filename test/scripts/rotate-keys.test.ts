// `npm run keys:rotate` against a running service's database: new keys are published, old ones stay, and a
// token signed before the rotation still verifies.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { createRemoteJWKSet, jwtVerify, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.stop());

describe('npm run keys:rotate', () => {
  it('adds a current key per algorithm and keeps the previous ones in JWKS', async () => {
    const before = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as {
      keys: { kid: string; alg: string }[];
    };
    expect(before.keys.map((k) => k.alg).sort()).toEqual(['ES256', 'EdDSA', 'RS256']);
    const oldToken = await server.base.keys.sign({
      iss: server.url,
      sub: 'someone',
      exp: Math.floor(Date.now() / 1000) + 600,
    });

    const env = {
      ...process.env,
      DATABASE_URL: server.databaseUrl,
      SECRET_KEY: Buffer.from(server.config.secretKey).toString('hex'),
      LOG_LEVEL: 'silent',
    };
    delete (env as Record<string, string | undefined>).BASE_URL; // vitest's, not ours
    const { stdout } = await run('npm', ['run', '--silent', 'keys:rotate'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env,
    });
    expect(stdout).toMatch(/new signing keys: [\w-]+, [\w-]+, [\w-]+/);

    // The running service notices within a minute; make it look now.
    await server.base.keys.refresh();
    const after = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    const kids = after.keys.map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining(before.keys.map((k) => k.kid)));
    expect(kids.length).toBe(6);

    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    await expect(jwtVerify(oldToken, jwks, { issuer: server.url })).resolves.toBeTruthy();
    // A new key is published before it signs: right after the rotation the previous key still signs.
    const newToken = await server.base.keys.sign({
      iss: server.url,
      sub: 'someone',
      exp: Math.floor(Date.now() / 1000) + 600,
    });
    expect(decodeProtectedHeader(newToken).kid).toBe(decodeProtectedHeader(oldToken).kid);
    await expect(jwtVerify(newToken, jwks, { issuer: server.url })).resolves.toBeTruthy();
  });
});
