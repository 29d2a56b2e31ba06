// The hourly cleanup task: credentials that can never be used again (sessions, authorization codes, refresh
// tokens, device authorizations, answered consent requests, sign-in throttles, WebAuthn challenges, single sign-on requests and SAML assertion ids) are deleted once a week past their end, through the real
// job queue and on the service's clock; anything still live stays.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client, type Client } from '../helpers/http.ts';
import { DAY, movableClock } from '../helpers/clock.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  exchangeCode,
  registerClient,
  sessionOf,
  startWithSignedInMember,
} from '../helpers/oauth.ts';
import { runTaskNow } from '../helpers/worker.ts';
import { waitFor } from '../helpers/wait.ts';

const REDIRECT = 'https://app.example.test/callback';
const clock = movableClock();
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember({ clock, role: 'all' }));
});
afterAll(() => server?.stop());

/** How many rows of each kind the cleanup looks after. */
async function counts() {
  const db = server.base.db;
  const [
    sessions,
    codes,
    deviceCodes,
    refreshTokens,
    consentAnswers,
    throttles,
    challenges,
    ssoRequests,
    samlAssertions,
  ] = await Promise.all([
    db.session.count(),
    db.authorizationCode.count(),
    db.deviceAuthorization.count(),
    db.refreshToken.count(),
    db.consentAnswer.count(),
    db.loginThrottle.count(),
    db.webauthnChallenge.count(),
    db.ssoRequest.count(),
    db.samlAssertion.count(),
  ]);
  return {
    sessions,
    codes,
    deviceCodes,
    refreshTokens,
    consentAnswers,
    throttles,
    challenges,
    ssoRequests,
    samlAssertions,
  };
}

/** Runs the cleanup through the job queue, waits for the job to finish, and counts what is left. */
async function cleanupAndSettle(): Promise<Awaited<ReturnType<typeof counts>>> {
  const jobsBefore = await server.base.db.$queryRaw<
    { n: bigint }[]
  >`select count(*) as n from graphile_worker.jobs where task_identifier = 'cleanup'`;
  await runTaskNow(server.databaseUrl, 'cleanup');
  // The job row is deleted once the task has succeeded.
  await waitFor(async () => {
    const [row] = await server.base.db.$queryRaw<
      { n: bigint }[]
    >`select count(*) as n from graphile_worker.jobs where task_identifier = 'cleanup'`;
    return row!.n <= jobsBefore[0]!.n ? true : undefined;
  });
  return counts();
}

describe('the cleanup task', () => {
  it('deletes credentials a week after they ended and keeps live ones', async () => {
    const app = await registerClient(admin, {
      name: 'Cleanup app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      consent_required: true,
      organization_id: tenant.id,
    });
    const params = {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      nonce: 'n',
    };
    // An answered consent request, a used code with its refresh token, and an unused code.
    const consent = await authorize(server.url, session, params);
    const code = codeFrom(await decideConsent(server.url, session, consent));
    expect((await exchangeCode(server.url, app, code, REDIRECT)).status).toBe(200);
    codeFrom(await authorize(server.url, session, params));
    // A device authorization never answered (RFC 8628).
    const tv = await registerClient(admin, {
      name: 'Cleanup TV',
      token_endpoint_auth_method: 'none',
      redirect_uris: [],
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
      allowed_scopes: ['openid'],
      organization_id: tenant.id,
    });
    const device = await client(server.url).post(
      '/oauth/device_authorization',
      new URLSearchParams({ client_id: tv.client_id, scope: 'openid' }).toString(),
      { 'content-type': 'application/x-www-form-urlencoded' },
    );
    expect(device.status).toBe(200);
    // A failed sign-in leaves a throttle row.
    expect(
      (
        await client(server.url).post('/api/v1/auth/login', {
          email: tenant.member.email,
          password: 'not the password',
        })
      ).status,
    ).toBe(401);
    // A passkey challenge never answered (this server's BASE_URL is an IP address, where no passkey ceremony starts:
    // the row is written as the options route writes it).
    const now = clock.now();
    await server.base.db.webauthnChallenge.create({
      data: {
        id: crypto.randomUUID(),
        challenge: crypto.randomUUID(),
        purpose: 'authentication',
        expiresAt: new Date(now.getTime() + 300_000),
        createdAt: now,
      },
    });
    // A sign-in that never came back from its identity provider, and the id of an assertion used (as the sign-in
    // through a connection writes them).
    const connection = await server.base.db.ssoConnection.create({
      data: {
        id: crypto.randomUUID(),
        organizationId: tenant.id,
        type: 'saml',
        name: 'Cleanup IdP',
        createdAt: now,
        updatedAt: now,
      },
    });
    await server.base.db.ssoRequest.create({
      data: {
        id: crypto.randomUUID(),
        connectionId: connection.id,
        expiresAt: new Date(now.getTime() + 600_000),
        createdAt: now,
      },
    });
    await server.base.db.samlAssertion.create({
      data: { connectionId: connection.id, assertionId: '_assertion', expiresAt: new Date(now.getTime() + 300_000) },
    });

    const before = await counts();
    expect(before).toMatchObject({
      codes: 2,
      deviceCodes: 1,
      refreshTokens: 1,
      consentAnswers: 1,
      challenges: 1,
      ssoRequests: 1,
      samlAssertions: 1,
    });
    expect(before.sessions).toBeGreaterThan(0);
    expect(before.throttles).toBeGreaterThan(0);

    // Codes and the consent request ended minutes ago: within the week's grace, nothing goes.
    clock.advance(DAY);
    expect(await cleanupAndSettle()).toEqual(before);

    // Past the refresh token's 30 days and the sessions' 7, plus the week: all of it goes but a session signed in now.
    clock.advance(40 * DAY);
    const fresh = await sessionOf(server.url, tenant.member);
    const after = await cleanupAndSettle();
    expect(after).toEqual({
      sessions: 1,
      codes: 0,
      deviceCodes: 0,
      refreshTokens: 0,
      consentAnswers: 0,
      throttles: 0,
      challenges: 0,
      ssoRequests: 0,
      samlAssertions: 0,
    });
    expect(await server.base.db.session.count({ where: { expiresAt: { gt: clock.now() } } })).toBe(1);
    expect((await client(server.url, { token: fresh }).get('/api/v1/auth/session')).status).toBe(200);
  });

  it("keeps each organization's last 1,000 directory requests", async () => {
    const now = clock.now();
    const rows = Array.from({ length: 1005 }, (_, i) => ({
      id: `0${String(i).padStart(6, '0')}`,
      organizationId: tenant.id,
      method: 'GET',
      path: '/scim/v2/Users',
      status: 200,
      createdAt: now,
    }));
    await server.base.db.scimRequest.createMany({ data: rows });
    await cleanupAndSettle();
    const left = await server.base.db.scimRequest.findMany({
      where: { organizationId: tenant.id },
      orderBy: { id: 'asc' },
      select: { id: true },
    });
    expect(left).toHaveLength(1000);
    expect(left[0]!.id).toBe('0000005');
  });
});
