// A SAML sign-in end to end over real HTTP (docs/architecture.md#single-sign-on): an organization proves its domain,
// creates a SAML connection from its IdP's metadata, the IdP imports Tessera's SP metadata from /sso/{id}/metadata,
// and a person goes /sso/{id}/start -> the IdP -> a form POST to /sso/{id}/acs, landing signed in as a new member.
// Every bad answer ends on /login with its reason and no session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { proveDomain } from '../helpers/sso.ts';
import {
  makeSigningKey,
  NAMEID_FORMAT,
  SAML_STATUS,
  startSamlIdp,
  type ResponseOptions,
  type TestSamlIdp,
} from '../helpers/saml-idp.ts';

const DOMAIN = 'saml-acme.test';

let server: TestServer;
let dns: TestDnsServer;
let acme: Tenant;
let idp: TestSamlIdp;
let connectionId: string;
let spMetadata: string;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { DNS_SERVERS: dns.address } });
  const platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme SAML');
  await proveDomain(acme.owner.api, dns, DOMAIN);
  idp = startSamlIdp({ entityId: `https://idp.${DOMAIN}/saml`, ssoUrl: `https://idp.${DOMAIN}/sso` });
  const created = await acme.owner.api.post('/api/v1/connections', {
    type: 'saml',
    name: 'Acme IdP',
    domains: [DOMAIN],
    metadata_xml: idp.metadata,
    role_claim: 'groups',
    role_map: { 'acme-admins': 'admin' },
  });
  if (created.status !== 201)
    throw new Error(`create connection failed: ${created.status} ${JSON.stringify(created.body)}`);
  connectionId = created.body.id;
  spMetadata = await (await fetch(`${server.url}/sso/${connectionId}/metadata`)).text();
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
});

const setCookies = (reply: Response) => reply.headers.getSetCookie();
const sessionCookie = (reply: Response) =>
  setCookies(reply).find((c) => /^tessera_session=[^;]+/.test(c) && !/^tessera_session=;/.test(c));

/** GET /sso/{id}/start as a browser: the redirect to the IdP, which reads the AuthnRequest in it. */
async function start(query = '') {
  const reply = await fetch(`${server.url}/sso/${connectionId}/start${query}`, { redirect: 'manual' });
  expect(reply.status).toBe(303);
  const location = reply.headers.get('location')!;
  expect(location.startsWith(`${idp.ssoUrl}?`), location).toBe(true);
  const request = await idp.readRequest(location, spMetadata);
  return { request, location };
}

/** The IdP's auto-submitted form: SAMLResponse and RelayState POSTed to the ACS. */
const post = (samlResponse: string, relayState: string | null) =>
  fetch(`${server.url}/sso/${connectionId}/acs`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://idp.saml-acme.test' },
    body: new URLSearchParams({
      SAMLResponse: samlResponse,
      ...(relayState === null ? {} : { RelayState: relayState }),
    }),
  });

/** A whole sign-in whose answer the test bends. */
async function signInWith(options: Partial<ResponseOptions> = {}, query = '') {
  const { request } = await start(query);
  const answer = await idp.respond({
    inResponseTo: request.id,
    acsUrl: request.acsUrl,
    spEntityId: request.issuer,
    ...options,
  });
  return { reply: await post(answer.samlResponse, request.relayState), answer, request };
}

function expectRefused(reply: Response, reason: string) {
  expect(reply.status).toBe(303);
  const location = new URL(reply.headers.get('location')!, server.url);
  expect(location.pathname).toBe('/login');
  expect(location.searchParams.get('sso_error')).toBe(reason);
  expect(sessionCookie(reply)).toBeUndefined();
}

describe('SAML sign-in over HTTP', () => {
  it('serves the SP metadata an IdP imports: entity id and ACS of this connection', async () => {
    const reply = await fetch(`${server.url}/sso/${connectionId}/metadata`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
    expect(await reply.text()).toBe(spMetadata);
    expect(spMetadata).toContain(`entityID="${server.url}/sso/${connectionId}/metadata"`);
    expect(spMetadata).toContain(`Location="${server.url}/sso/${connectionId}/acs"`);
    expect(spMetadata).toContain('WantAssertionsSigned="true"');
  });

  it('start sends the browser to the IdP with an AuthnRequest from this SP, the login hint passed on', async () => {
    const { request, location } = await start(`?login_hint=${encodeURIComponent(`ada@${DOMAIN}`)}`);
    expect(request).toMatchObject({
      issuer: `${server.url}/sso/${connectionId}/metadata`,
      acsUrl: `${server.url}/sso/${connectionId}/acs`,
      destination: idp.ssoUrl,
    });
    expect(request.relayState).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(new URL(location).searchParams.get('login_hint')).toBe(`ada@${DOMAIN}`);
  });

  it('a signed assertion signs a new person in (a session cookie) as a member with the role the IdP gives', async () => {
    const email = `grace@${DOMAIN}`;
    const { reply } = await signInWith({
      nameId: email,
      nameIdFormat: NAMEID_FORMAT.email,
      attributes: { displayName: 'Grace Hopper', groups: ['staff', 'acme-admins'] },
    });
    expect(reply.status).toBe(303);
    expect(new URL(reply.headers.get('location')!, server.url).searchParams.get('sso_error')).toBeNull();
    const cookie = sessionCookie(reply);
    expect(cookie).toMatch(/^tessera_session=tss_/);
    expect(cookie).toMatch(/HttpOnly/i);
    const token = /^tessera_session=([^;]+)/.exec(cookie!)![1]!;
    const me = await client(server.url, { token }).get('/api/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email, name: 'Grace Hopper', email_verified: true });
    const members = await acme.owner.api.get(`/v1/organizations/${acme.id}/members?limit=100`);
    expect(
      members.body.members.find(
        (m: { email?: string; user?: { email: string } }) => (m.email ?? m.user?.email) === email,
      ),
    ).toMatchObject({ role: 'admin' });
  });

  it('an Entra ID style answer (persistent NameID, e-mail in a claim URI) signs in too', async () => {
    const email = `ada@${DOMAIN}`;
    const { reply } = await signInWith({
      nameId: 'Xr7Z0oQb4Ykqf5nM-entra-like-persistent-id',
      nameIdFormat: NAMEID_FORMAT.persistent,
      attributes: {
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress': email,
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname': 'Ada',
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname': 'Lovelace',
      },
    });
    const token = /^tessera_session=([^;]+)/.exec(sessionCookie(reply) ?? '')?.[1];
    expect(token).toBeDefined();
    expect((await client(server.url, { token }).get('/api/v1/users/me')).body).toMatchObject({
      email,
      name: 'Ada Lovelace',
    });
  });

  describe('refuses, back on /login with the reason and no session', () => {
    const refusals: [string, Partial<ResponseOptions>, string][] = [
      ['an unsigned assertion', { sign: 'none' }, 'invalid_response'],
      ['a signed response around an unsigned assertion', { sign: 'response' }, 'invalid_response'],
      ['an assertion signed by another key', { signingKey: makeSigningKey('Impostor') }, 'invalid_response'],
      [
        'an expired assertion',
        { notBefore: new Date(Date.now() - 30 * 60_000), notOnOrAfter: new Date(Date.now() - 20 * 60_000) },
        'invalid_response',
      ],
      ['an assertion for another audience', { audience: 'https://other-sp.test/metadata' }, 'invalid_response'],
      ['an assertion for another recipient', { recipient: 'https://other-sp.test/acs' }, 'invalid_response'],
      [
        'an assertion answering another request',
        { inResponseTo: '_not-this-one', responseInResponseTo: null },
        'invalid_response',
      ],
      [
        'an IdP that did not sign the person in',
        { status: SAML_STATUS.responder, statusDetail: SAML_STATUS.authnFailed, sign: 'none' },
        'idp_error',
      ],
    ];
    for (const [what, options, reason] of refusals) {
      it(what, async () => {
        const { reply } = await signInWith({ nameId: `eve@${DOMAIN}`, ...options });
        expectRefused(reply, reason);
      });
    }

    it("an admin's test refused ends on the settings page with its reason, though the IdP's cross-site POST carries no cookie", async () => {
      const started = await fetch(`${server.url}/sso/${connectionId}/start?test=1`, {
        redirect: 'manual',
        headers: { cookie: `tessera_session=${acme.owner.token}` },
      });
      expect(started.status).toBe(303);
      const request = await idp.readRequest(started.headers.get('location')!, spMetadata);
      const answer = await idp.respond({
        inResponseTo: request.id,
        acsUrl: request.acsUrl,
        spEntityId: request.issuer,
        nameId: `eve@${DOMAIN}`,
        sign: 'none',
      });
      const reply = await post(answer.samlResponse, request.relayState);
      const back = new URL(reply.headers.get('location')!, server.url);
      expect(back.pathname).toBe('/admin/settings/sso');
      expect(back.searchParams.get('test_error')).toBe('invalid_response');
      expect(sessionCookie(reply)).toBeUndefined();
    });

    it('the same answer twice: the first signs in, the second finds its sign-in used up', async () => {
      const { reply, answer, request } = await signInWith({ nameId: `twice@${DOMAIN}` });
      expect(sessionCookie(reply)).toBeDefined();
      expectRefused(await post(answer.samlResponse, request.relayState), 'expired_request');
    });

    it('an answer replayed into another sign-in (its RelayState swapped for a fresh one)', async () => {
      const { reply, answer } = await signInWith({ nameId: `replay@${DOMAIN}` });
      expect(sessionCookie(reply)).toBeDefined();
      const { request: fresh } = await start();
      expectRefused(await post(answer.samlResponse, fresh.relayState), 'invalid_response');
    });

    it('an answer without RelayState, and garbage, base64 or not', async () => {
      const { request } = await start();
      const good = await idp.respond({ inResponseTo: request.id, acsUrl: request.acsUrl, spEntityId: request.issuer });
      expectRefused(await post(good.samlResponse, null), 'expired_request');
      for (const samlResponse of [
        '%%%',
        Buffer.from('<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>').toString('base64'),
        'A'.repeat(300 * 1024),
      ]) {
        const { request: next } = await start();
        expectRefused(await post(samlResponse, next.relayState), 'invalid_response');
      }
    });
  });
});
