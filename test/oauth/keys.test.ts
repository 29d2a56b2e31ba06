// Signing keys: the published key set (RS256, ES256, EdDSA; public parts only), ID tokens in the algorithm a
// client registered, rotation that never breaks tokens in flight, and private keys encrypted at rest.
import { createHash, randomBytes } from 'node:crypto';
import { compactDecrypt, createRemoteJWKSet, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client as restClient } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  followRedirect,
  registerClient,
  relyingParty,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { createDb } from '../../schema/db.ts';
import { KeyStore } from '../../schema/keys/signing-keys.ts';

const REDIRECT = 'https://rp.example.test/callback';
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

let server: TestServer;
let tenant: Tenant;
let session: string;

interface Jwks {
  keys: (JWK & { kid: string; alg: string; use: string })[];
}

const fetchJwks = async (): Promise<Jwks> => {
  const res = await fetch(`${server.url}/.well-known/jwks.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as Jwks;
};

/** A client that skips consent and registers `alg` for its ID tokens (none given: the service's default). */
const register = (alg?: string) =>
  registerClient(tenant.admin.api, {
    name: `App signing with ${alg ?? 'the default'}`,
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email'],
    consent_required: false,
    ...(alg ? { id_token_signed_response_alg: alg } : {}),
  });

/** The code flow through openid-client, told which ID token algorithm to expect and to check its signature. */
async function tokensFor(c: RegisteredClient, alg = 'RS256') {
  const config = await relyingParty(server.url, c, { id_token_signed_response_alg: alg });
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid email',
    nonce,
    state: 'st',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const location = await followRedirect(url, session);
  return oidc.authorizationCodeGrant(config, location, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: 'st',
  });
}

const atHash = (accessToken: string, hash: 'sha256' | 'sha512') => {
  const digest = createHash(hash).update(accessToken).digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
};

const userinfoStatus = async (accessToken: string) =>
  (await restClient(server.url, { token: accessToken }).get('/oauth/userinfo')).status;

beforeAll(async () => {
  ({ server, tenant, session } = await startWithSignedInMember());
});
afterAll(() => server?.stop());
afterEach(() => {
  vi.restoreAllMocks();
});

describe('GET /.well-known/jwks.json', () => {
  it('publishes an RS256, an ES256 and an EdDSA key with kid, alg and use, and no private parts', async () => {
    const res = await fetch(`${server.url}/.well-known/jwks.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/(jwk-set\+)?json/);
    const { keys } = (await res.json()) as Jwks;
    expect(keys.map((k) => k.alg).sort()).toEqual(['ES256', 'EdDSA', 'RS256']);
    expect(new Set(keys.map((k) => k.kid)).size).toBe(keys.length);
    for (const key of keys) {
      expect(key.kid).toMatch(/^\S+$/);
      expect(key.use).toBe('sig');
      for (const member of PRIVATE_MEMBERS) expect(key, `${key.alg} key has ${member}`).not.toHaveProperty(member);
    }
    expect(keys.find((k) => k.alg === 'RS256')).toMatchObject({ kty: 'RSA', e: 'AQAB' });
    expect(keys.find((k) => k.alg === 'ES256')).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(keys.find((k) => k.alg === 'EdDSA')).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    // Each is a usable public key of its algorithm.
    for (const key of keys) await expect(importJWK(key, key.alg)).resolves.toBeTruthy();
  });
});

describe('ID tokens in the algorithm the client registered', () => {
  const cases: [string | undefined, string, string, 'sha256' | 'sha512'][] = [
    [undefined, 'RS256', 'RSA', 'sha256'],
    ['ES256', 'ES256', 'EC', 'sha256'],
    ['EdDSA', 'EdDSA', 'OKP', 'sha512'],
  ];
  for (const [registered, alg, kty, hash] of cases) {
    it(`${registered ?? 'the default'}: the ID token is ${alg}, verifies with the published ${kty} key, and its at_hash uses ${hash}`, async () => {
      const c = await register(registered);
      const tokens = await tokensFor(c, alg);
      const header = decodeProtectedHeader(tokens.id_token!);
      expect(header.alg).toBe(alg);
      const published = (await fetchJwks()).keys.find((k) => k.kid === header.kid);
      expect(published).toMatchObject({ alg, kty });

      const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(tokens.id_token!, jwks, {
        issuer: server.url,
        audience: c.client_id,
        algorithms: [alg],
      });
      expect(payload.sub).toBe(tenant.member.id);
      expect(payload.at_hash).toBe(atHash(tokens.access_token, hash));
      // Access tokens stay RS256 whatever the ID token algorithm.
      expect(decodeProtectedHeader(tokens.access_token)).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
      await expect(
        jwtVerify(tokens.access_token, jwks, { issuer: server.url, audience: c.client_id, typ: 'at+jwt' }),
      ).resolves.toBeTruthy();
    });
  }

  it('refuses an algorithm it does not offer at registration', async () => {
    const reply = await tenant.admin.api.post('/api/v1/oauth-clients', {
      name: 'HMAC app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      id_token_signed_response_alg: 'HS256',
    });
    expect(reply.status).toBe(400);
    const none = await tenant.admin.api.post('/api/v1/oauth-clients', {
      name: 'Unsigned app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      id_token_signed_response_alg: 'none',
    });
    expect(none.status).toBe(400);
  });
});

describe('private keys at rest', () => {
  it('are stored as JWE (dir, A256GCM) under SECRET_KEY, never as a plain JWK', async () => {
    const rows = await server.base.db.signingKey.findMany();
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const row of rows) {
      const parts = row.privateJwe.split('.');
      expect(parts).toHaveLength(5);
      const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
      expect(header).toMatchObject({ alg: 'dir', enc: 'A256GCM' });
      expect(() => JSON.parse(row.privateJwe)).toThrow();
      expect(row.privateJwe).not.toMatch(/"d"\s*:/);
      for (const member of PRIVATE_MEMBERS) expect(row.publicJwk as object).not.toHaveProperty(member);

      // With the secret key it opens to the private half of the published key.
      const { plaintext } = await compactDecrypt(row.privateJwe, server.config.secretKey);
      const jwk = JSON.parse(new TextDecoder().decode(plaintext)) as JWK;
      expect(jwk.d).toBeTruthy();
      expect(jwk).toMatchObject(row.publicJwk as object);
      await expect(importJWK(jwk, row.alg)).resolves.toBeTruthy();
      // Any other key cannot open it.
      await expect(compactDecrypt(row.privateJwe, new Uint8Array(32).fill(7))).rejects.toThrow();
    }
  });
});

describe('key rotation', () => {
  it('publishes the new keys at once, keeps tokens signed before it valid, and signs with the new key once it is active', async () => {
    const c = await register('ES256');
    const before = await tokensFor(c, 'ES256');
    const oldAccessKid = decodeProtectedHeader(before.access_token).kid!;
    const oldIdKid = decodeProtectedHeader(before.id_token!).kid!;
    const oldKids = (await fetchJwks()).keys.map((k) => k.kid);

    const newKids = await server.base.keys.rotate();
    expect(newKids).toHaveLength(3);
    const after = await fetchJwks();
    const kids = after.keys.map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([...oldKids, ...newKids]));
    expect(after.keys.filter((k) => k.alg === 'RS256')).toHaveLength(2);

    // Tokens from before the rotation keep working.
    expect(await userinfoStatus(before.access_token)).toBe(200);
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    await expect(jwtVerify(before.access_token, jwks, { issuer: server.url })).resolves.toBeTruthy();
    await expect(jwtVerify(before.id_token!, jwks, { issuer: server.url })).resolves.toBeTruthy();

    // Right after the rotation the previous key still signs, so no relying party meets an unknown kid ...
    const soon = await tokensFor(c, 'ES256');
    expect(decodeProtectedHeader(soon.access_token).kid).toBe(oldAccessKid);

    // ... and once the new keys are active (two minutes on) they sign.
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 3 * 60_000);
    const later = await tokensFor(c, 'ES256');
    const newAccessKid = decodeProtectedHeader(later.access_token).kid!;
    const newIdKid = decodeProtectedHeader(later.id_token!).kid!;
    expect(newAccessKid).not.toBe(oldAccessKid);
    expect(newIdKid).not.toBe(oldIdKid);
    expect(newKids).toContain(newAccessKid);
    expect(newKids).toContain(newIdKid);
    expect(after.keys.find((k) => k.kid === newIdKid)?.alg).toBe('ES256');
    expect(await userinfoStatus(later.access_token)).toBe(200);
    expect(await userinfoStatus(before.access_token)).toBe(200);
    const fresh = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    await expect(jwtVerify(later.access_token, fresh, { issuer: server.url, typ: 'at+jwt' })).resolves.toBeTruthy();
    await expect(
      jwtVerify(later.id_token!, fresh, { issuer: server.url, audience: c.client_id, algorithms: ['ES256'] }),
    ).resolves.toBeTruthy();
  });

  it('a token verified before is refused once its key is retired (verifications are remembered only under the key set that made them)', async () => {
    const c = await register();
    const tokens = await tokensFor(c);
    const kid = decodeProtectedHeader(tokens.access_token).kid!;
    expect(await userinfoStatus(tokens.access_token)).toBe(200);
    expect(await userinfoStatus(tokens.access_token)).toBe(200); // answered from what the first call verified

    // Rotations until the key that signed it is no longer among the two kept for its algorithm (at most two).
    let rotations = 0;
    while ((await fetchJwks()).keys.some((k) => k.kid === kid)) {
      expect(await userinfoStatus(tokens.access_token)).toBe(200);
      expect(rotations++).toBeLessThan(2);
      await server.base.keys.rotate();
    }
    expect(rotations).toBeGreaterThan(0);
    expect(await userinfoStatus(tokens.access_token)).toBe(401);
  });
});

describe('processes starting together on an empty database', () => {
  it('make one key per algorithm between them, so the first rotation retires none that signs', async () => {
    // given an empty database and five processes' key stores
    const database = await createTestDatabase();
    const dbs = Array.from({ length: 5 }, () => createDb(database.url));
    const secret = randomBytes(32);
    try {
      // when they all start at once
      await Promise.all(dbs.map((db) => new KeyStore(db, secret).init()));

      // then there is one key per algorithm, and a token signed by any of them survives a rotation by another
      const keys = await dbs[0]!.signingKey.findMany({ where: { retiredAt: null } });
      expect(keys.map((k) => k.alg).sort()).toEqual(['ES256', 'EdDSA', 'RS256']);
      const signer = new KeyStore(dbs[1]!, secret);
      await signer.init();
      const token = await signer.sign({ sub: 'x', exp: Math.floor(Date.now() / 1000) + 3600 });
      await new KeyStore(dbs[2]!, secret).rotate();
      const verifier = new KeyStore(dbs[3]!, secret);
      await verifier.init();
      await expect(verifier.verify(token)).resolves.toMatchObject({ payload: { sub: 'x' } });
    } finally {
      await Promise.all(dbs.map((db) => db.$disconnect()));
      await database.drop();
    }
  });
});
