// Tessera's own command-line client (docs/architecture.md#apps-without-secrets), through HTTP: made at start in the
// operator organization, public, platform-wide. A customer's member, no member of the operator organization,
// approves its device code; the token then acts in each of the person's organizations and nowhere else, holds back
// where an organization requires a second factor its sign-in did not use, and creates an organization; no admin
// changes or deletes the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableClock } from '../helpers/clock.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { client, type Client } from '../helpers/http.ts';
import { sessionOf, startWithSignedInMember, tokenRequest, type SignedInMember } from '../helpers/oauth.ts';
import { enrolTotp } from '../helpers/totp.ts';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const CLI = 'tessera-cli';
const clock = movableClock();

let setup: SignedInMember;
let other: Tenant;

beforeAll(async () => {
  setup = await startWithSignedInMember({ clock });
  other = await createTenant(setup.server.url, setup.admin);
});
afterAll(() => setup?.server.stop());

const form = (path: string, fields: Record<string, string>) =>
  fetch(`${setup.server.url}${path}`, { method: 'POST', body: new URLSearchParams(fields) });

/** The device flow of the CLI's client, approved by the session `session`: the token endpoint's answer. */
async function signInCli(session: string): Promise<Record<string, any>> {
  const started = await (
    await form('/oauth/device_authorization', { client_id: CLI, scope: 'openid email offline_access api' })
  ).json();
  expect(started.user_code, JSON.stringify(started)).toMatch(/^[B-Z]{4}-[B-Z]{4}$/);
  const decided = await client(setup.server.url, { token: session }).post('/graphql', {
    query: `mutation($c: String!) { decideDeviceRequest(userCode: $c, approve: true) {
      __typename ... on DeviceDecision { approved } ... on UserError { code message } } }`,
    variables: { c: started.user_code },
  });
  expect(decided.body.data.decideDeviceRequest).toEqual({ __typename: 'DeviceDecision', approved: true });
  clock.advance(5);
  const tokens = await tokenRequest(setup.server.url, {
    grant_type: DEVICE_GRANT,
    device_code: started.device_code,
    client_id: CLI,
  });
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body;
}

describe("Tessera's command-line client", () => {
  it('is made at start, public, in the operator organization, and no admin changes or deletes it', async () => {
    const listed = await setup.admin.get('/api/v1/oauth-clients?limit=100');
    const cli = listed.body.oauth_clients.find((c: { client_id: string }) => c.client_id === CLI);
    expect(cli).toMatchObject({ name: 'Tessera command line', token_endpoint_auth_method: 'none' });
    expect(cli.allowed_scopes).toContain('api');
    const changed = await setup.admin.patch(`/api/v1/oauth-clients/${cli.id}`, {
      redirect_uris: ['https://evil.test/cb'],
    });
    expect(changed.status).toBe(403);
    expect((await setup.admin.delete(`/api/v1/oauth-clients/${cli.id}`)).status).toBe(403);
    // it may be turned off, which ends its device flow, and on again
    expect((await setup.admin.patch(`/api/v1/oauth-clients/${cli.id}`, { enabled: false })).status).toBe(200);
    const off = await form('/oauth/device_authorization', { client_id: CLI, scope: 'openid' });
    expect((await off.json()).error).toBe('invalid_client');
    expect((await setup.admin.patch(`/api/v1/oauth-clients/${cli.id}`, { enabled: true })).status).toBe(200);
  });

  it("acts as the approving person in each of their organizations, and in no one else's", async () => {
    const tokens = await signInCli(setup.session);
    expect(tokens.refresh_token).toMatch(/^tsr_/);
    const cli: Client = client(setup.server.url, { token: tokens.access_token });
    expect((await cli.get('/api/v1/users/me')).body.email).toBe(setup.tenant.member.email);
    const mine = await cli.get(`/v1/organizations/${setup.tenant.id}`);
    expect(mine.status).toBe(200);
    expect(mine.body.role).toBe('member');
    // another organization's id is not there, and a member's role does not grow
    expect((await cli.get(`/v1/organizations/${other.id}`)).status).toBe(404);
    expect((await cli.patch(`/v1/organizations/${setup.tenant.id}`, { name: 'Renamed' })).status).toBe(403);
    // a person's own: an organization created with it is theirs, and the token acts there at once
    const made = await cli.post('/v1/organizations', { name: 'From the CLI' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((await cli.get(`/v1/organizations/${made.body.id}`)).body.role).toBe('owner');
    // but it mints no credential: what outlives the token stays first-party
    const key = await cli.post('/api/v1/api-keys', { name: 'k', role: 'admin', organization_id: made.body.id });
    expect(key.status).toBe(403);
    expect(key.body.error_description).toContain('An access token cannot do this');
    // and the refresh rotates as any public client's: the spent one replayed ends the grant
    const refreshed = await tokenRequest(setup.server.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: CLI,
    });
    expect(refreshed.status).toBe(200);
    const replay = await tokenRequest(setup.server.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: CLI,
    });
    expect(replay.body.error).toBe('invalid_grant');
    expect((await cli.get('/api/v1/users/me')).status).toBe(401);
  });

  it('is held back where an organization requires a second factor its sign-in did not use', async () => {
    const owner = other.owner;
    await enrolTotp(owner.api, clock);
    const required = await owner.api.patch(`/v1/organizations/${other.id}`, { require_mfa: true });
    expect(required.status, JSON.stringify(required.body)).toBe(200);
    // a member of that organization with no factor, signed in with a password
    const tokens = await signInCli(await sessionOf(setup.server.url, other.member));
    const cli = client(setup.server.url, { token: tokens.access_token });
    const held = await cli.get(`/v1/organizations/${other.id}/members`);
    expect(held.status).toBe(403);
    expect(held.body.error).toBe('mfa_enrollment_required');
    // elsewhere the token acts as before
    const made = await cli.post('/v1/organizations', { name: 'No factor needed here' });
    expect(made.status).toBe(201);
    expect((await cli.get(`/v1/organizations/${made.body.id}/members`)).status).toBe(200);
  });

  it('is refused by another public client: the scope api and the platform-wide reach are the CLI client alone', async () => {
    const registered = await setup.tenant.admin.api.post('/api/v1/oauth-clients', {
      name: 'Looks like a CLI',
      token_endpoint_auth_method: 'none',
      redirect_uris: [],
      grant_types: [DEVICE_GRANT, 'refresh_token'],
      allowed_scopes: ['openid', 'api'],
    });
    expect(registered.status).toBe(400);
  });
});
