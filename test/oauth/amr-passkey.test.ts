// amr and acr in an ID token after a passkey sign-in (RFC 8176: hwk for a key bound to its device, swk for a synced
// one; user and mfa when the person was verified), checked by openid-client. The passkey is a software
// authenticator (test/helpers/webauthn.ts); BASE_URL is http://localhost:<port>, a relying-party id browsers accept.
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { followRedirect, registerClient, relyingParty } from '../helpers/oauth.ts';
import { SoftPasskey, startPasskeyServer, type AuthenticatorOptions } from '../helpers/webauthn.ts';

const REDIRECT = 'https://rp.example.test/callback';

let server: TestServer & { origin: string };
let tenant: Tenant;
let rp: oidc.Configuration;

beforeAll(async () => {
  server = await startPasskeyServer();
  const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  const app = await registerClient(tenant.admin.api, {
    name: 'Relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email'],
    consent_required: false,
  });
  rp = await relyingParty(server.origin, app);
});
afterAll(() => server?.stop());

/** A member with one passkey of this kind. */
async function memberWithPasskey(
  options: Partial<AuthenticatorOptions>,
): Promise<{ person: Person; key: SoftPasskey }> {
  const person: Person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'amr-passkey');
  const key = new SoftPasskey({ origin: server.origin, ...options });
  const creation = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
  expect(
    (await person.api.post('/api/v1/users/me/passkeys', { name: 'Key', response: key.register(creation.body) })).status,
  ).toBe(201);
  return { person, key };
}

/** A passkey sign-in, with the mfa_token of a password sign-in when given. */
async function passkeySignIn(key: SoftPasskey, mfaToken?: string) {
  const anon = client(server.url);
  const challenge = await anon.post('/api/v1/auth/passkeys/options');
  return anon.post('/api/v1/auth/passkeys/verify', {
    response: key.authenticate(challenge.body),
    ...(mfaToken ? { mfa_token: mfaToken } : {}),
  });
}

/** A member with one passkey of this kind, signed in with it alone: the session token. */
async function passkeySession(options: Partial<AuthenticatorOptions>): Promise<string> {
  const signedIn = await passkeySignIn((await memberWithPasskey(options)).key);
  expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
  return signedIn.body.token;
}

async function idTokenClaims(session: string) {
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(rp, {
    redirect_uri: REDIRECT,
    scope: 'openid email',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
  });
  const location = await followRedirect(url, session);
  expect(location.origin + location.pathname, String(location)).toBe(REDIRECT);
  return (
    await oidc.authorizationCodeGrant(rp, location, { pkceCodeVerifier: verifier, expectedNonce: nonce })
  ).claims()!;
}

describe('an ID token after a passkey sign-in', () => {
  it('a device-bound passkey with user verification: amr [hwk, user, mfa] and the multi-factor acr', async () => {
    expect(await idTokenClaims(await passkeySession({ synced: false, userVerified: true }))).toMatchObject({
      amr: ['hwk', 'user', 'mfa'],
      acr: 'urn:tessera:acr:mfa',
    });
  });

  it('a synced passkey without user verification: amr [swk], one factor', async () => {
    expect(await idTokenClaims(await passkeySession({ synced: true, userVerified: false }))).toMatchObject({
      amr: ['swk'],
      acr: 'urn:tessera:acr:1fa',
    });
  });

  it('the password, then a passkey without user verification: amr [pwd, swk, mfa], two factors; the password counts once', async () => {
    const { person, key } = await memberWithPasskey({ synced: true, userVerified: false });
    const other = await memberWithPasskey({ synced: true, userVerified: false });
    const challenge = await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD });
    expect(challenge.body).toMatchObject({ mfa_required: true, methods: expect.arrayContaining(['passkey']) });
    // Another person's passkey with this token: the password was not theirs, so the passkey alone.
    const foreign = await passkeySignIn(other.key, challenge.body.mfa_token);
    expect(foreign.status).toBe(200);
    expect(await idTokenClaims(foreign.body.token)).toMatchObject({ amr: ['swk'], acr: 'urn:tessera:acr:1fa' });
    const both = await passkeySignIn(key, challenge.body.mfa_token);
    expect(both.status, JSON.stringify(both.body)).toBe(200);
    expect(await idTokenClaims(both.body.token)).toMatchObject({
      amr: ['pwd', 'swk', 'mfa'],
      acr: 'urn:tessera:acr:mfa',
    });
    // The token has been used: a second passkey sign-in with it is refused, not given the password's half again.
    const again = await passkeySignIn(key, challenge.body.mfa_token);
    expect(again.status).toBe(400);
  });
});
