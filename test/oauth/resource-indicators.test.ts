// Resource indicators (RFC 8707, docs/architecture.md#apps-without-secrets): `resource` at the authorization and token
// endpoints makes the access token's `aud` that resource, so that a token for one API cannot be replayed at another.
// A client asks only for the resources registered for it (invalid_target otherwise); a token request narrows the
// grant's resources and never widens them, and a refusal spends nothing. Without `resource` nothing changes. A token
// for another resource is that resource's alone: Tessera's own API and userinfo refuse it; introspection names it.
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http.ts';
import {
  authorize,
  codeFrom,
  registerClient,
  startWithSignedInMember,
  type RegisteredClient,
  type SignedInMember,
} from '../helpers/oauth.ts';

const MCP = 'https://mcp.example.test/mcp';
const REPORTS = 'https://reports.example.test/';
const OTHER = 'https://other.example.test/api';
const REDIRECT = 'https://app.example.test/cb';

let setup: SignedInMember;
let app: RegisteredClient;

beforeAll(async () => {
  setup = await startWithSignedInMember();
  app = await registerClient(setup.tenant.admin.api, {
    name: 'Agent host',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'offline_access', 'api'],
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    consent_required: false,
    resources: [MCP, REPORTS],
  });
});
afterAll(async () => {
  await setup?.server.stop();
});

const base = () => setup.server.url;

/** The authorization request's query, with each of `resources` as its own `resource` parameter. */
function authorizeQuery(resources: string[], extra: Record<string, string> = {}) {
  const query = new URLSearchParams({
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid offline_access api',
    state: 's',
    ...extra,
  });
  for (const resource of resources) query.append('resource', resource);
  return query;
}

/** POST /oauth/token as `app`, a form whose `resource` repeats once for each of `resources`. */
function token(params: Record<string, string>, resources: string[] = []) {
  const form = new URLSearchParams({ client_id: app.client_id, client_secret: app.client_secret, ...params });
  for (const resource of resources) form.append('resource', resource);
  return client(base()).post('/oauth/token', form.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
}

async function codeFor(resources: string[]) {
  return codeFrom(await authorize(base(), setup.session, authorizeQuery(resources)));
}

const redeem = (code: string, resources: string[] = []) =>
  token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT }, resources);

describe('registration', () => {
  it('keeps a client`s resources, shown over REST and GraphQL, and changes them with PATCH', async () => {
    const read = await setup.tenant.admin.api.get(`/api/v1/oauth-clients/${app.id}`);
    expect(read.body.resources).toEqual([MCP, REPORTS]);
    const viaGraphql = await setup.tenant.admin.api.post('/graphql', {
      query: 'query($id: ID!) { oauthClient(id: $id) { resources } }',
      variables: { id: app.id },
    });
    expect(viaGraphql.body.data.oauthClient.resources).toEqual([MCP, REPORTS]);
    const other = await registerClient(setup.tenant.admin.api, {
      name: 'Changing',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
    });
    expect(other).toMatchObject({ resources: [] });
    const patched = await setup.tenant.admin.api.patch(`/api/v1/oauth-clients/${other.id}`, {
      resources: ['http://127.0.0.1:8080/mcp', OTHER, OTHER],
    });
    expect(patched.status).toBe(200);
    expect(patched.body.resources).toEqual(['http://127.0.0.1:8080/mcp', OTHER]);
  });

  it.each([
    ['an http URL on a public host', 'http://mcp.example.test/mcp'],
    ['a fragment', 'https://mcp.example.test/mcp#x'],
    ['a relative reference', '/mcp'],
    ['a spelling the URL parser changes', 'https://MCP.example.test/mcp'],
    ['a space', 'https://mcp.example.test/m cp'],
    ['a URN', 'urn:example:mcp'],
  ])('refuses %s with 400 and details at resources.0', async (_, resource) => {
    const reply = await setup.tenant.admin.api.post('/api/v1/oauth-clients', {
      name: 'Bad resource',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      resources: [resource],
    });
    expect(reply.status).toBe(400);
    expect(reply.body.details).toEqual([expect.objectContaining({ path: 'resources.0' })]);
  });
});

describe('the authorization code grant', () => {
  it('without resource: aud is the client id, as before', async () => {
    const reply = await redeem(await codeFor([]));
    expect(reply.status).toBe(200);
    expect(decodeJwt(reply.body.access_token).aud).toBe(app.client_id);
  });

  it('one resource: aud is that resource; the ID token stays the client`s', async () => {
    const reply = await redeem(await codeFor([MCP]));
    expect(reply.status).toBe(200);
    expect(decodeJwt(reply.body.access_token).aud).toBe(MCP);
    expect(decodeJwt(reply.body.id_token).aud).toBe(app.client_id);
  });

  it('two resources: aud lists both, and the token request may narrow them to one', async () => {
    const both = await redeem(await codeFor([MCP, REPORTS]));
    expect(decodeJwt(both.body.access_token).aud).toEqual([MCP, REPORTS]);
    const narrowed = await redeem(await codeFor([MCP, REPORTS]), [REPORTS]);
    expect(narrowed.status).toBe(200);
    expect(decodeJwt(narrowed.body.access_token).aud).toBe(REPORTS);
  });

  it('a resource the authorization request did not name: invalid_target, and the code is not spent', async () => {
    const code = await codeFor([MCP]);
    const widened = await redeem(code, [REPORTS]);
    expect(widened.status).toBe(400);
    expect(widened.body.error).toBe('invalid_target');
    const after = await redeem(code, [MCP]);
    expect(after.status).toBe(200);
    expect(decodeJwt(after.body.access_token).aud).toBe(MCP);
  });

  it('20 concurrent exchanges of one code naming its resource: one set of tokens', async () => {
    const code = await codeFor([MCP]);
    const replies = await Promise.all(Array.from({ length: 20 }, () => redeem(code, [MCP])));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19);
  });
});

describe('the authorization endpoint', () => {
  it.each([
    ['a resource not registered for the client', [OTHER]],
    ['one registered and one not', [MCP, OTHER]],
    ['a relative reference', ['/mcp']],
    ['a fragment', [`${MCP}#x`]],
    ['more than 10 resources', Array.from({ length: 11 }, (_, i) => `${MCP}/${i}`)],
  ])('refuses %s with invalid_target back at the client, with state and iss', async (_, resources) => {
    const back = await authorize(base(), setup.session, authorizeQuery(resources));
    expect(back.origin + back.pathname).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_target');
    expect(back.searchParams.get('state')).toBe('s');
    expect(back.searchParams.get('iss')).toBe(setup.server.url);
    expect(back.searchParams.has('code')).toBe(false);
  });

  it('keeps every resource across the sign-in it sends a signed-out browser to', async () => {
    const login = await authorize(base(), null, authorizeQuery([MCP, REPORTS]));
    expect(login.pathname).toBe('/login');
    const back = new URL(login.searchParams.get('return_to')!, base());
    expect(back.searchParams.getAll('resource')).toEqual([MCP, REPORTS]);
    const code = codeFrom(await authorize(base(), setup.session, back.searchParams));
    const reply = await redeem(code);
    expect(decodeJwt(reply.body.access_token).aud).toEqual([MCP, REPORTS]);
  });

  it('refuses a NUL in a resource as invalid_request, on our page', async () => {
    const res = await fetch(`${base()}/oauth/authorize?${authorizeQuery([])}&resource=https%3A%2F%2Fa%00b`, {
      redirect: 'manual',
      headers: { cookie: `tessera_session=${setup.session}` },
    });
    expect(res.status).toBe(400);
  });
});

describe('the refresh token grant', () => {
  it('narrows the resources of one response, never widens them, and the next refresh token keeps them all', async () => {
    const first = await redeem(await codeFor([MCP, REPORTS]));
    const narrowed = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, [MCP]);
    expect(narrowed.status).toBe(200);
    expect(decodeJwt(narrowed.body.access_token).aud).toBe(MCP);
    const whole = await token({ grant_type: 'refresh_token', refresh_token: narrowed.body.refresh_token });
    expect(decodeJwt(whole.body.access_token).aud).toEqual([MCP, REPORTS]);

    const widened = await token({ grant_type: 'refresh_token', refresh_token: whole.body.refresh_token }, [OTHER]);
    expect(widened.status).toBe(400);
    expect(widened.body.error).toBe('invalid_target');
    // Refused before anything was spent: the same refresh token still works, and its grant stands.
    const again = await token({ grant_type: 'refresh_token', refresh_token: whole.body.refresh_token }, [REPORTS]);
    expect(again.status).toBe(200);
    expect(decodeJwt(again.body.access_token).aud).toBe(REPORTS);
  });

  it('a grant made without resources cannot gain one at refresh', async () => {
    const first = await redeem(await codeFor([]));
    const widened = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, [MCP]);
    expect(widened.status).toBe(400);
    expect(widened.body.error).toBe('invalid_target');
  });

  it('reads resource given as a JSON array', async () => {
    const first = await redeem(await codeFor([MCP, REPORTS]));
    const reply = await client(base()).post('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: first.body.refresh_token,
      client_id: app.client_id,
      client_secret: app.client_secret,
      resource: [REPORTS, MCP],
    });
    expect(reply.status).toBe(200);
    expect(decodeJwt(reply.body.access_token).aud).toEqual([REPORTS, MCP]);
  });

  it('refuses a resource that is no absolute URI with invalid_target, and any other repeated parameter', async () => {
    const first = await redeem(await codeFor([MCP]));
    const relative = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, ['mcp']);
    expect(relative.body.error).toBe('invalid_target');
    const form = `grant_type=refresh_token&refresh_token=${first.body.refresh_token}&refresh_token=x&client_id=${app.client_id}&client_secret=${app.client_secret}`;
    const repeated = await client(base()).post('/oauth/token', form, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(repeated.status).toBe(400);
    expect(repeated.body.error).toBe('invalid_request');
  });
});

describe('client credentials', () => {
  it('gets a token for one of its resources, and invalid_target for another', async () => {
    const reply = await token({ grant_type: 'client_credentials', scope: 'api' }, [REPORTS]);
    expect(reply.status).toBe(200);
    expect(decodeJwt(reply.body.access_token).aud).toBe(REPORTS);
    const refused = await token({ grant_type: 'client_credentials' }, [OTHER]);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_target');
  });
});

describe('a token for another resource', () => {
  it('is refused by userinfo and by Tessera`s API, and introspection names its audience', async () => {
    const forMcp = (await redeem(await codeFor([MCP]))).body.access_token;
    const forUs = (await redeem(await codeFor([]))).body.access_token;
    const userinfo = (t: string) => fetch(`${base()}/oauth/userinfo`, { headers: { authorization: `Bearer ${t}` } });
    expect((await userinfo(forUs)).status).toBe(200);
    const refused = await userinfo(forMcp);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    const api = (t: string) => client(base(), { token: t }).get('/api/v1/users/me');
    expect((await api(forUs)).status).toBe(200);
    expect((await api(forMcp)).status).toBe(401);

    const introspected = await tokenIntrospection(forMcp);
    expect(introspected).toMatchObject({ active: true, aud: MCP, client_id: app.client_id });
  });
});

async function tokenIntrospection(t: string) {
  const reply = await client(base()).post(
    '/oauth/introspect',
    new URLSearchParams({ token: t, client_id: app.client_id, client_secret: app.client_secret }).toString(),
    { 'content-type': 'application/x-www-form-urlencoded' },
  );
  return reply.body;
}

describe('the device flow', () => {
  it('carries the resources of the device authorization request into the tokens', async () => {
    const device = await registerClient(setup.tenant.admin.api, {
      name: 'TV app',
      token_endpoint_auth_method: 'none',
      allowed_scopes: ['openid'],
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
      resources: [MCP],
    });
    const start = (resources: string[]) => {
      const form = new URLSearchParams({ client_id: device.client_id, scope: 'openid' });
      for (const r of resources) form.append('resource', r);
      return client(base()).post('/oauth/device_authorization', form.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
    };
    const refused = await start([REPORTS]);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_target');
    const started = await start([MCP]);
    expect(started.status).toBe(200);
    const decided = await client(base(), { token: setup.session }).post('/graphql', {
      query: `mutation($c: String!) { decideDeviceRequest(userCode: $c, approve: true) { __typename } }`,
      variables: { c: started.body.user_code },
    });
    expect(decided.body.data.decideDeviceRequest.__typename).toBe('DeviceDecision');
    const poll = (resources: string[]) => {
      const form = new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: started.body.device_code,
        client_id: device.client_id,
      });
      for (const r of resources) form.append('resource', r);
      return client(base()).post('/oauth/token', form.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
    };
    const widened = await poll([REPORTS]);
    expect(widened.body.error).toBe('invalid_target');
    const tokens = await poll([]);
    expect(tokens.status).toBe(200);
    expect(decodeJwt(tokens.body.access_token).aud).toBe(MCP);
  });
});
