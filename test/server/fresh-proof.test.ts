// Fresh proof for changes at the account's level (docs/architecture.md#second-factors): deleting one's account and
// setting up a first second factor need the password again (or a code of the authenticator app), counted by the
// sign-in throttle, as removing a factor does. A stolen session alone deletes nothing and cannot enrol its own
// authenticator app, whose ID tokens would then say acr mfa. An account that signs in through its identity provider
// has no password anyone knows: a sign-in of the last five minutes stands in for it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { codeAt, enrolTotp, toMidStep } from '../helpers/totp.ts';
import { SoftPasskey } from '../helpers/webauthn.ts';
import { addOidcConnection, proveDomain, ssoSignInThroughOidc, startSsoStage, type SsoStage } from '../helpers/sso.ts';

const DOMAIN = 'fresh-proof.test';
const clock = movableClock();
let stage: SsoStage;
let tenant: Tenant;
let connectionId: string;

beforeAll(async () => {
  stage = await startSsoStage({ clock });
  tenant = await createTenant(stage.server.url, stage.platform);
  await proveDomain(tenant.owner.api, stage.dns, DOMAIN);
  connectionId = await addOidcConnection(tenant.owner.api, stage.upstreams[0]!, {
    name: 'Fresh IdP',
    domains: [DOMAIN],
    default_role: 'member',
  });
}, 60_000);
afterAll(() => stage?.stop());
// Every request comes from 127.0.0.1: each test starts after the sign-in throttle's window of those before it.
beforeEach(() => clock.advance(16 * MINUTE));

const member = (label: string) => addPerson(stage.server.url, tenant.owner.api, tenant.id, 'member', label);
const exists = async (id: string) => !!(await stage.server.base.db.user.findUnique({ where: { id } }));

function expectProofRequired(reply: { status: number; body: any }) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body.error).toBe('invalid_request');
  expect(reply.body.details).toEqual([expect.objectContaining({ path: 'password' })]);
}

describe('DELETE /api/v1/users/me', () => {
  it('refuses the session alone (400) and a wrong password (401); deletes with the password', async () => {
    const person = await member('leaver');
    expectProofRequired(await person.api.delete('/api/v1/users/me'));
    expect(await exists(person.id)).toBe(true);
    const wrong = await person.api.delete('/api/v1/users/me', { password: 'not the password at all' });
    expect(wrong.status, JSON.stringify(wrong.body)).toBe(401);
    expect(await exists(person.id)).toBe(true);
    expect((await person.api.delete('/api/v1/users/me', { password: PASSWORD })).status).toBe(204);
    expect(await exists(person.id)).toBe(false);
  });

  it('takes a code of the authenticator app instead of the password', async () => {
    const person = await member('leaver-totp');
    const { secret } = await enrolTotp(person.api, clock);
    toMidStep(clock);
    expect((await person.api.delete('/api/v1/users/me', { code: codeAt(clock, secret) })).status).toBe(204);
    expect(await exists(person.id)).toBe(false);
  });

  it('counts wrong passwords against the sign-in throttle: the sixth is refused with 429', async () => {
    const person = await member('guesser');
    for (let i = 0; i < 5; i++)
      expect((await person.api.delete('/api/v1/users/me', { password: `wrong guess ${i}` })).status).toBe(401);
    expect((await person.api.delete('/api/v1/users/me', { password: PASSWORD })).status).toBe(429);
    expect(await exists(person.id)).toBe(true);
  });

  it('the GraphQL mutation asks the same', async () => {
    const person = await member('leaver-graphql');
    const alone = await person.api.post('/graphql', {
      query: 'mutation { deleteMe { __typename ... on UserError { code } } }',
    });
    expect(JSON.stringify(alone.body)).toContain('invalid_request');
    expect(await exists(person.id)).toBe(true);
    const proven = await person.api.post('/graphql', {
      query: 'mutation($p: String) { deleteMe(input: { password: $p }) { __typename } }',
      variables: { p: PASSWORD },
    });
    expect(proven.body.errors, JSON.stringify(proven.body)).toBeUndefined();
    expect(await exists(person.id)).toBe(false);
  });
});

describe('setting up a first second factor', () => {
  it('an authenticator app: refused for a session alone (a stolen one gets no acr mfa), set up with the password', async () => {
    const person = await member('enrol-totp');
    expectProofRequired(await person.api.post('/api/v1/users/me/mfa/totp'));
    expect(await stage.server.base.db.totpFactor.count({ where: { userId: person.id } })).toBe(0);
    expect((await person.api.post('/api/v1/users/me/mfa/totp', { password: 'not the password at all' })).status).toBe(
      401,
    );
    const started = await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    toMidStep(clock);
    expect(
      (await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(clock, started.body.secret) })).status,
    ).toBe(200);
  });

  it('a first passkey: refused for a session alone; a second one needs no password', async () => {
    const person = await member('enrol-key');
    expectProofRequired(await person.api.post('/api/v1/users/me/passkeys/options'));
    const options = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    expect(options.status, JSON.stringify(options.body)).toBe(200);
    const key = new SoftPasskey({ origin: stage.server.origin });
    expect(
      (await person.api.post('/api/v1/users/me/passkeys', { name: 'First', response: key.register(options.body) }))
        .status,
    ).toBe(201);
    const second = await person.api.post('/api/v1/users/me/passkeys/options');
    expect(second.status, JSON.stringify(second.body)).toBe(200);
  });

  it('an account that signs in through its identity provider: within five minutes of that sign-in, then no more', async () => {
    const [upstream] = stage.upstreams;
    upstream!.addAccount({ sub: 'sso-only-1', email: `sso-only@${DOMAIN}`, email_verified: true, name: 'Only SSO' });
    upstream!.signInAs('sso-only-1');
    const result = await ssoSignInThroughOidc(stage.server.origin, connectionId, stage.ca);
    expect(result.session, result.location).toMatch(/^tss_/);
    const api = client(stage.server.url, { token: result.session! });
    expect((await api.post('/api/v1/users/me/mfa/totp')).status).toBe(201);
    clock.advance(6 * MINUTE);
    expectProofRequired(await api.post('/api/v1/users/me/mfa/totp'));
    expectProofRequired(await api.delete('/api/v1/users/me'));
  });

  it('a person with a linked provider who signed in with the password a moment ago: the session alone is no proof', async () => {
    // given a person of the domain with a password of their own, whose provider identity is linked
    const person = await addPerson(stage.server.url, tenant.owner.api, tenant.id, 'member', 'both-ways', DOMAIN);
    const [upstream] = stage.upstreams;
    upstream!.addAccount({ sub: 'both-ways-1', email: person.email, email_verified: true, name: 'Both ways' });
    upstream!.signInAs('both-ways-1');
    const linked = await ssoSignInThroughOidc(stage.server.origin, connectionId, stage.ca);
    expect((await client(stage.server.url, { token: linked.session! }).get('/api/v1/users/me')).body.id).toBe(
      person.id,
    );
    // when a fresh session is made with the password (stolen, say), it sets up no factor and deletes nothing alone
    const login = await client(stage.server.url).post('/api/v1/auth/login', {
      email: person.email,
      password: PASSWORD,
    });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    const api = client(stage.server.url, { token: login.body.token });
    expectProofRequired(await api.post('/api/v1/users/me/mfa/totp'));
    expectProofRequired(await api.delete('/api/v1/users/me'));
    expect(await exists(person.id)).toBe(true);
  });
});
