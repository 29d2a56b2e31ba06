// Passkeys (docs/architecture.md#second-factors): a person registers several (POST /api/v1/users/me/passkeys/options,
// then POST /api/v1/users/me/passkeys), lists, renames and removes them (with the password), and signs in with one
// and no password (POST /api/v1/auth/passkeys/options, then /verify). The answers come from a software authenticator
// (test/helpers/webauthn.ts), so every check of the real library runs. BASE_URL is http://localhost:<port>: the RP id
// must be a domain name.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { decodeJwt } from 'jose';
import { accessTokenOf, authorize, codeFrom, exchangeCode, registerClient } from '../helpers/oauth.ts';
import { SoftPasskey, startPasskeyServer, type AuthenticatorOptions } from '../helpers/webauthn.ts';
import { SIGN_IN_OPTIONS_PER_ADDRESS } from '../../schema/modules/passkeys/passkeys.service.ts';
import { welcomeLines } from '../../server/welcome.ts';

const clock = movableClock();
let server: TestServer;
let origin: string;
let tenant: Tenant;
let anon: Client;

beforeAll(async () => {
  server = await startPasskeyServer({ clock });
  origin = server.base.settings.issuer();
  anon = client(server.url);
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
});
afterAll(() => server?.stop());

const newPerson = (): Promise<Person> => addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'passkeys');

/** Registers a new passkey on a software authenticator for `person`, through both REST steps. */
async function register(person: Person, name: string, options: Partial<AuthenticatorOptions> = {}) {
  const key = new SoftPasskey({ origin, ...options });
  const creation = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
  expect(creation.status, JSON.stringify(creation.body)).toBe(200);
  const reply = await person.api.post('/api/v1/users/me/passkeys', { name, response: key.register(creation.body) });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return {
    key,
    passkey: reply.body as {
      id: string;
      name: string;
      device_type: string;
      backed_up: boolean;
      created_at: string;
      last_used_at: string | null;
    },
  };
}

const signInOptions = async () => {
  const reply = await anon.post('/api/v1/auth/passkeys/options');
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as { challenge: string; rpId: string; allowCredentials?: unknown[]; userVerification: string };
};

const verify = (response: unknown, headers?: Record<string, string>) =>
  anon.post('/api/v1/auth/passkeys/verify', { response }, headers);

const events = (kind: string, userId: string) =>
  server.base.db.event.count({ where: { kind, body: { contains: userId } } });
const sessionsOf = (userId: string) =>
  server.base.db.session.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } });
const listOf = async (person: Person) => {
  const reply = await person.api.get('/api/v1/users/me/passkeys');
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.passkeys as {
    id: string;
    name: string;
    created_at: string;
    last_used_at: string | null;
    device_type: string;
    backed_up: boolean;
    transports: string[];
  }[];
};

describe('registering, listing, renaming', () => {
  it('registers two passkeys, lists them oldest first, renames one; the first emits 2fa.enabled and each is mailed and audited', async () => {
    const person = await newPerson();
    const options = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    expect(options.status).toBe(200);
    expect(options.body).toMatchObject({
      rp: { id: 'localhost', name: 'Tessera' },
      user: { name: person.email },
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      excludeCredentials: [],
    });

    const laptop = await register(person, '  Laptop  ');
    expect(laptop.passkey).toMatchObject({
      name: 'Laptop',
      device_type: 'singleDevice',
      backed_up: false,
      last_used_at: null,
    });
    const phone = await register(person, 'Phone', { synced: true });
    expect(phone.passkey).toMatchObject({ name: 'Phone', device_type: 'multiDevice', backed_up: true });

    // The next options exclude both, so an authenticator does not register twice.
    const again = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    expect(again.body.excludeCredentials.map((c: { id: string }) => c.id).sort()).toEqual(
      [laptop.key.id, phone.key.id].sort(),
    );

    expect((await listOf(person)).map((p) => [p.id, p.name, p.transports])).toEqual([
      [laptop.passkey.id, 'Laptop', ['internal']],
      [phone.passkey.id, 'Phone', ['internal']],
    ]);

    const renamed = await person.api.patch(`/api/v1/users/me/passkeys/${laptop.passkey.id}`, { name: 'Work laptop' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(renamed.body).toMatchObject({ id: laptop.passkey.id, name: 'Work laptop' });
    expect((await listOf(person))[0]!.name).toBe('Work laptop');

    expect(await events('2fa.enabled', person.id)).toBe(1);
    const mails = await server.base.db.mail.findMany({
      where: { toAddress: person.email, kind: 'second_factor_changed' },
    });
    expect(mails).toHaveLength(2);
    expect(mails.map((m) => m.textBody).join('\n')).toContain('"Laptop"');
    const audits = await server.base.db.auditLog.findMany({
      where: { action: { in: ['passkey.register', 'passkey.rename'] }, actorId: person.id },
    });
    expect(audits.map((a) => a.action).sort()).toEqual(['passkey.register', 'passkey.register', 'passkey.rename']);
  });

  it('refuses bad names, a stored credential registered again, and answers to another purpose or person', async () => {
    const person = await newPerson();
    const other = await newPerson();
    for (const name of ['', '   ', 'x'.repeat(101), 'tab\there', 'bell\u0007']) {
      const key = new SoftPasskey({ origin });
      const options = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
      const reply = await person.api.post('/api/v1/users/me/passkeys', { name, response: key.register(options.body) });
      expect(reply.status, JSON.stringify(name)).toBe(400);
      expect(reply.body.details?.[0]?.path).toBe('name');
    }
    const { key } = await register(person, 'Once');
    const options = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    const twice = await person.api.post('/api/v1/users/me/passkeys', {
      name: 'Twice',
      response: key.register(options.body),
    });
    expect(twice.status).toBe(409);

    // Another person's registration challenge, and a sign-in challenge, do not register.
    const theirs = await other.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    const stolen = await person.api.post('/api/v1/users/me/passkeys', {
      name: 'Theirs',
      response: new SoftPasskey({ origin }).register(theirs.body),
    });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_challenge');
    const signInChallenge = await signInOptions();
    const wrongPurpose = await person.api.post('/api/v1/users/me/passkeys', {
      name: 'Wrong',
      response: new SoftPasskey({ origin }).register({ challenge: signInChallenge.challenge, user: { id: 'x' } }),
    });
    expect(wrongPurpose.status).toBe(400);
    expect(wrongPurpose.body.error).toBe('invalid_challenge');
    expect((await listOf(person)).map((p) => p.name)).toEqual(['Once']);
  });

  it('refuses an API key and an OAuth access token (403), and no credentials (401)', async () => {
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'passkeys probe' });
    expect(created.status).toBe(201);
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    const app = await registerClient(tenant.owner.api, {
      name: 'passkeys app',
      redirect_uris: ['https://app.example.test/cb'],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    const token = client(server.url, {
      token: await accessTokenOf(server.url, tenant.owner, app, 'https://app.example.test/cb', 'openid api'),
    });
    const someone = await newPerson();
    const { passkey } = await register(someone, 'Target');
    for (const [who, as] of [
      ['API key', key],
      ['access token', token],
    ] as const) {
      expect((await as.post('/api/v1/users/me/passkeys/options', { password: PASSWORD })).status, who).toBe(403);
      expect((await as.post('/api/v1/users/me/passkeys', { name: 'x', response: {} })).status, who).toBe(403);
      expect((await as.get('/api/v1/users/me/passkeys')).status, who).toBe(403);
      expect((await as.patch(`/api/v1/users/me/passkeys/${passkey.id}`, { name: 'x' })).status, who).toBe(403);
      expect((await as.delete(`/api/v1/users/me/passkeys/${passkey.id}`, { password: PASSWORD })).status, who).toBe(
        403,
      );
    }
    expect((await anon.post('/api/v1/users/me/passkeys/options', { password: PASSWORD })).status).toBe(401);
    expect((await anon.get('/api/v1/users/me/passkeys')).status).toBe(401);
    expect((await listOf(someone)).map((p) => p.name)).toEqual(['Target']);
  });
});

describe('removing', () => {
  it("needs the right password, keeps another person's passkey (404), and the last one emits 2fa.disabled", async () => {
    const person = await newPerson();
    const other = await newPerson();
    const first = await register(person, 'First');
    const second = await register(person, 'Second');
    const theirs = await register(other, 'Theirs');

    const wrong = await person.api.delete(`/api/v1/users/me/passkeys/${first.passkey.id}`, {
      password: 'not the password at all',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_credentials');
    expect((await person.api.delete(`/api/v1/users/me/passkeys/${first.passkey.id}`)).status).toBe(400);
    expect(await listOf(person)).toHaveLength(2);

    for (const reply of [
      await person.api.delete(`/api/v1/users/me/passkeys/${theirs.passkey.id}`, { password: PASSWORD }),
      await person.api.patch(`/api/v1/users/me/passkeys/${theirs.passkey.id}`, { name: 'Mine now' }),
      await person.api.delete('/api/v1/users/me/passkeys/no-such-passkey', { password: PASSWORD }),
    ]) {
      expect(reply.status).toBe(404);
    }
    expect((await listOf(other)).map((p) => p.name)).toEqual(['Theirs']);

    expect(
      (await person.api.delete(`/api/v1/users/me/passkeys/${first.passkey.id}`, { password: PASSWORD })).status,
    ).toBe(204);
    expect(await events('2fa.disabled', person.id)).toBe(0);
    expect(
      (await person.api.delete(`/api/v1/users/me/passkeys/${second.passkey.id}`, { password: PASSWORD })).status,
    ).toBe(204);
    expect(await events('2fa.disabled', person.id)).toBe(1);
    expect(await listOf(person)).toEqual([]);
    // A removed passkey no longer signs in.
    const reply = await verify(second.key.authenticate(await signInOptions()));
    expect(reply.status).toBe(401);
    const audits = await server.base.db.auditLog.findMany({
      where: { action: 'passkey.remove', actorId: person.id },
      orderBy: { createdAt: 'asc' },
    });
    expect(audits.map((a) => a.outcome)).toEqual(['failure', 'success', 'success']);
  });
});

describe('signing in with a passkey', () => {
  it('signs in without a password: the login payload, the session cookie, and amr hwk/swk with user and mfa when verified', async () => {
    const person = await newPerson();
    const device = await register(person, 'Device');
    const synced = await register(person, 'Synced', { synced: true });
    const unverified = await register(person, 'Tapped', { userVerified: false });

    const options = await signInOptions();
    expect(options).toMatchObject({ rpId: 'localhost', userVerification: 'preferred' });
    expect(options.allowCredentials ?? []).toEqual([]);

    const before = (await sessionsOf(person.id)).length;
    const reply = await verify(device.key.authenticate(options), { 'user-agent': 'Passkey/1.0' });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      token_type: 'Bearer',
      user: { id: person.id, email: person.email },
      organization: { id: tenant.id, role: 'member' },
    });
    expect(reply.headers.get('set-cookie')).toContain(reply.body.token);
    const me = await client(server.url, { token: reply.body.token }).get('/api/v1/users/me');
    expect(me.body.id).toBe(person.id);

    expect((await verify(synced.key.authenticate(await signInOptions()))).status).toBe(200);
    expect((await verify(unverified.key.authenticate(await signInOptions()))).status).toBe(200);
    const sessions = (await sessionsOf(person.id)).slice(before);
    expect(sessions.map((s) => s.amr)).toEqual([['hwk', 'user', 'mfa'], ['swk', 'user', 'mfa'], ['hwk']]);
    const logins = await server.base.db.auditLog.findMany({
      where: { action: 'auth.login', actorId: person.id },
      orderBy: { createdAt: 'asc' },
    });
    expect(logins.slice(-3).map((l) => (l.details as { amr: string[] }).amr)).toEqual([
      ['hwk', 'user', 'mfa'],
      ['swk', 'user', 'mfa'],
      ['hwk'],
    ]);

    // The list says when each was last used.
    const listed = await listOf(person);
    expect(listed.every((p) => p.last_used_at !== null)).toBe(true);
  });

  it('completes a password sign-in that asked for a second factor: the mfa_token may come along, and is not needed', async () => {
    const person = await newPerson();
    const { key } = await register(person, 'Second step');
    const password = await anon.post('/api/v1/auth/login', { email: person.email, password: PASSWORD });
    expect(password.status, JSON.stringify(password.body)).toBe(200);
    expect(password.body).toMatchObject({ mfa_required: true, methods: expect.arrayContaining(['passkey']) });
    expect(password.body.token).toBeUndefined();
    const completed = await anon.post('/api/v1/auth/passkeys/verify', {
      response: key.authenticate(await signInOptions()),
      mfa_token: password.body.mfa_token,
    });
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
    expect(completed.body.user.id).toBe(person.id);
    const alone = await verify(key.authenticate(await signInOptions()));
    expect(alone.status).toBe(200);
  });

  it('an ID token after a passkey sign-in says so: amr hwk, user and mfa, acr mfa (RFC 8176, OIDC Core 2)', async () => {
    const person = await newPerson();
    const { key } = await register(person, 'For the app');
    const app = await registerClient(tenant.owner.api, {
      name: 'amr app',
      redirect_uris: ['https://app.example.test/cb'],
      allowed_scopes: ['openid'],
      consent_required: false,
    });
    const signedIn = await verify(key.authenticate(await signInOptions()));
    expect(signedIn.status).toBe(200);
    const back = await authorize(server.url, signedIn.body.token, {
      client_id: app.client_id,
      redirect_uri: 'https://app.example.test/cb',
      response_type: 'code',
      scope: 'openid',
      nonce: 'n',
      state: 's',
    });
    const tokens = await exchangeCode(server.url, app, codeFrom(back), 'https://app.example.test/cb');
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const claims = decodeJwt(tokens.body.id_token);
    expect(claims).toMatchObject({ sub: person.id, amr: ['hwk', 'user', 'mfa'], acr: 'urn:tessera:acr:mfa' });
  });

  it('GraphQL: passkeysAvailable, passkeySignInOptions and passkeySignIn answer the login payload', async () => {
    const person = await newPerson();
    const { key } = await register(person, 'Graph');
    const gql = (query: string, variables?: unknown) => anon.post('/graphql', { query, variables });
    const opts = await gql('mutation { passkeySignInOptions }');
    expect(opts.status).toBe(200);
    expect((await gql('{ passkeysAvailable }')).body.data.passkeysAvailable).toBe(true);
    const signedIn = await gql(
      'mutation($input: PasskeySignInInput!) { passkeySignIn(input: $input) { __typename ... on LoginPayload { token user { id } } ... on UserError { code } } }',
      { input: { response: key.authenticate(opts.body.data.passkeySignInOptions) } },
    );
    expect(signedIn.body.data.passkeySignIn).toMatchObject({ __typename: 'LoginPayload', user: { id: person.id } });
  });

  it('refuses a replayed answer and a second answer to one challenge (400), and an unknown credential (401)', async () => {
    const person = await newPerson();
    for (const counterless of [false, true]) {
      const { key } = await register(person, counterless ? 'Replay without counter' : 'Replay', { counterless });
      const options = await signInOptions();
      const answer = key.authenticate(options);
      expect((await verify(answer)).status).toBe(200);
      const replay = await verify(answer);
      expect(replay.status, `counterless: ${counterless}`).toBe(400);
      expect(replay.body.error).toBe('invalid_challenge');
      // A fresh answer (a new signature) to the same challenge: the challenge is spent.
      const second = await verify(key.authenticate(options));
      expect(second.status).toBe(400);
      expect(second.body.error).toBe('invalid_challenge');
      // A new challenge signs in again, with or without a counter.
      expect((await verify(key.authenticate(await signInOptions()))).status).toBe(200);
    }

    const stranger = new SoftPasskey({ origin });
    const unknown = await verify(stranger.authenticate(await signInOptions()));
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_credentials');
  });

  it('refuses a registration challenge, an expired challenge, another origin and a bad signature', async () => {
    const person = await newPerson();
    const { key } = await register(person, 'Checks');
    const registration = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    const wrongPurpose = await verify(key.authenticate(registration.body));
    expect(wrongPurpose.status).toBe(400);
    expect(wrongPurpose.body.error).toBe('invalid_challenge');

    const options = await signInOptions();
    clock.advance(5 * MINUTE + 1);
    try {
      const expired = await verify(key.authenticate(options));
      expect(expired.status).toBe(400);
      expect(expired.body.error).toBe('invalid_challenge');
    } finally {
      clock.advance(-(5 * MINUTE + 1));
    }

    const elsewhere = await verify(key.authenticate(await signInOptions(), { origin: 'https://evil.example' }));
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.details[0].path).toBe('response');

    const forged = key.authenticate(await signInOptions());
    forged.response.signature = new SoftPasskey({ origin }).authenticate({ challenge: 'x' }).response.signature;
    const bad = await verify(forged);
    expect(bad.status).toBe(400);
    // The right answer still works afterwards.
    expect((await verify(key.authenticate(await signInOptions()))).status).toBe(200);
  });

  it('twenty concurrent copies of one answer make exactly one session', async () => {
    const person = await newPerson();
    // Without a signature counter (always 0, as synced passkeys answer) only the challenge stops the copies.
    const { key } = await register(person, 'Race', { counterless: true });
    const answer = key.authenticate(await signInOptions());
    const before = (await sessionsOf(person.id)).length;
    const replies = await Promise.all(Array.from({ length: 20 }, () => verify(answer)));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
    expect((await sessionsOf(person.id)).length - before).toBe(1);
  });

  it('refuses a signature counter that goes backwards (a cloned key), audited', async () => {
    const person = await newPerson();
    const { key, passkey } = await register(person, 'Counted');
    expect((await verify(key.authenticate(await signInOptions()))).status).toBe(200);
    expect((await verify(key.authenticate(await signInOptions()))).status).toBe(200);
    const stored = await server.base.db.passkey.findUniqueOrThrow({ where: { id: passkey.id } });
    expect(stored.counter).toBe(2n);
    key.counter = 0; // the next answer carries 1
    const cloned = await verify(key.authenticate(await signInOptions()));
    expect(cloned.status).toBe(400);
    expect(cloned.body.error).toBe('passkey_counter_mismatch');
    const audit = await server.base.db.auditLog.findFirst({
      where: { action: 'auth.passkey', outcome: 'failure', targetId: person.id },
    });
    expect(audit?.details).toMatchObject({ reason: 'counter_mismatch', passkeyId: passkey.id });
    expect((await server.base.db.passkey.findUniqueOrThrow({ where: { id: passkey.id } })).counter).toBe(2n);
  });

  it('answers malformed answers with 4xx, never 500', async () => {
    const person = await newPerson();
    const { key } = await register(person, 'Fuzzed');
    const good = () => key.authenticate({ challenge: 'not-a-stored-challenge' });
    const cases: unknown[] = [
      undefined,
      null,
      'text',
      42,
      [],
      {},
      { ...good(), response: 'nope' },
      { ...good(), type: 'password' },
      { ...good(), response: { ...good().response, clientDataJSON: '!!!' } },
      { ...good(), response: { ...good().response, clientDataJSON: Buffer.from('not json').toString('base64url') } },
      {
        ...good(),
        response: { ...good().response, clientDataJSON: Buffer.from('{"challenge":5}').toString('base64url') },
      },
      { ...good(), response: { ...good().response, authenticatorData: 'x'.repeat(70_000) } },
      { ...good(), id: 'a\u0000b' },
      { ...good(), response: { ...good().response, signature: 'AA\u0000' } },
      { ...good(), id: 'A'.repeat(5000) },
    ];
    for (const response of cases) {
      const reply = await anon.post('/api/v1/auth/passkeys/verify', response === undefined ? {} : { response });
      expect(reply.status, JSON.stringify(response)?.slice(0, 120)).toBeGreaterThanOrEqual(400);
      expect(reply.status, JSON.stringify(response)?.slice(0, 120)).toBeLessThan(500);
    }
    // A well-formed answer whose data is garbage, to a live challenge.
    const options = await signInOptions();
    const garbage = key.authenticate(options);
    garbage.response.authenticatorData = Buffer.from('short').toString('base64url');
    expect((await verify(garbage)).status).toBe(400);
    // Registration too.
    for (const response of [
      null,
      {},
      { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: 'e30', attestationObject: 'oA' } },
    ]) {
      const reply = await person.api.post('/api/v1/users/me/passkeys', { name: 'Bad', response });
      expect(reply.status).toBe(400);
    }
    const live = await person.api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
    const broken = new SoftPasskey({ origin }).register(live.body);
    broken.response.attestationObject = Buffer.from('not cbor').toString('base64url');
    expect((await person.api.post('/api/v1/users/me/passkeys', { name: 'Broken', response: broken })).status).toBe(400);
    const notJson = await anon.post('/api/v1/auth/passkeys/verify', '{"response": ', {
      'content-type': 'application/json',
    });
    expect(notJson.status).toBe(400);
  });

  // Last: it locks this address's sign-ins for a while, then moves the clock past the lock.
  it('counts failed passkey sign-ins against the address: past 100, 429 even for a right passkey, unless the browser signed in to its account before', async () => {
    const person = await newPerson();
    const { key } = await register(person, 'Throttled');
    // The device cookies of earlier sign-ins: this person's (with the passkey), and another account's
    const deviceOf = (reply: { headers: Headers }) =>
      /^tessera_device=([^;]+)/.exec(
        reply.headers.getSetCookie().find((c) => c.startsWith('tessera_device=')) ?? '',
      )?.[1];
    const own = deviceOf(await verify(key.authenticate(await signInOptions())));
    const another = deviceOf(await anon.post('/api/v1/auth/login', { email: ADMIN.email, password: ADMIN.password }));
    expect(own && another).toBeTruthy();
    // The failures of the tests before are out of the window.
    clock.advance(61 * MINUTE);
    const stranger = new SoftPasskey({ origin });
    // One challenge serves every failure: a sign-in that fails uses none.
    const options = await signInOptions();
    const statuses: number[] = [];
    for (let i = 0; i < 101; i++) statuses.push((await verify(stranger.authenticate(options))).status);
    expect(statuses.slice(0, 100)).toEqual(Array(100).fill(401));
    expect(statuses.at(-1)).toBe(429);
    const locked = await verify(key.authenticate(await signInOptions()));
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBeTruthy();
    expect(
      (await verify(key.authenticate(await signInOptions()), { cookie: `tessera_device=${another}` })).status,
    ).toBe(429);
    expect(
      (await verify(stranger.authenticate(await signInOptions()), { cookie: `tessera_device=${own}` })).status,
    ).toBe(429);
    // A browser that signed in with the passkey before still does
    expect((await verify(key.authenticate(await signInOptions()), { cookie: `tessera_device=${own}` })).status).toBe(
      200,
    );
    clock.advance(61 * MINUTE);
    expect((await verify(key.authenticate(await signInOptions()))).status).toBe(200);
  });
});

describe('sign-in options', () => {
  it(`are refused past ${SIGN_IN_OPTIONS_PER_ADDRESS} from one address in 5 minutes (each stores a challenge), and given again after`, async () => {
    clock.advance(6 * MINUTE);
    const statuses: number[] = [];
    for (let i = 0; i < SIGN_IN_OPTIONS_PER_ADDRESS; i += 20) {
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, async () => (await anon.post('/api/v1/auth/passkeys/options')).status),
        )),
      );
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const over = await anon.post('/api/v1/auth/passkeys/options');
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBeTruthy();
    // Five minutes later the window is over, and the new challenges clear the expired ones (100 each).
    clock.advance(6 * MINUTE);
    const expired = () => server.base.db.webauthnChallenge.count({ where: { expiresAt: { lt: clock.now() } } });
    expect(await expired()).toBeGreaterThan(SIGN_IN_OPTIONS_PER_ADDRESS - 1);
    for (let i = 0; i < 5; i++) expect((await anon.post('/api/v1/auth/passkeys/options')).status).toBe(200);
    expect(await expired()).toBe(0);
  });
});

describe('BASE_URL with an IP address', () => {
  it('offers passkeys nowhere: 400 passkeys_unavailable, passkeysAvailable false, and the start-up log says why once', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const ip = await startTestServer({ logger });
    try {
      const api = client(ip.url);
      const options = await api.post('/api/v1/auth/passkeys/options');
      expect(options.status).toBe(400);
      expect(options.body.error).toBe('passkeys_unavailable');
      const { api: admin } = await signIn(ip.url, ADMIN.email, ADMIN.password);
      expect((await admin.post('/api/v1/users/me/passkeys/options', { password: PASSWORD })).body.error).toBe(
        'passkeys_unavailable',
      );
      expect((await api.post('/graphql', { query: '{ passkeysAvailable }' })).body.data.passkeysAvailable).toBe(false);
      expect(lines.filter((l) => l.includes('passkeys are off'))).toHaveLength(1);
      // And the lines `npm start` prints for the person at the terminal.
      const mail = { smtpUrl: undefined, from: 'tessera@localhost' };
      expect(welcomeLines(ip.base.settings.issuer(), { mail, role: 'all' })).toContainEqual(
        expect.stringMatching(/^ {2}Passkeys: +off: BASE_URL has an IP address/),
      );
      expect(welcomeLines(origin, { mail, role: 'all' })).toContainEqual(
        expect.stringMatching(/^ {2}Passkeys: +for localhost$/),
      );
    } finally {
      await ip.stop();
    }
  });
});
