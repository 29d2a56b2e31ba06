// An install whose process dies halfway leaves nothing that works and, once swept, nothing at all: the real service
// runs as a child process, is killed (SIGKILL) while the app holds the credential push, and the pending client is
// then shown to authorize nothing until the sweep removes it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { signIn } from '../helpers/http.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startSampleApp, type SampleApp } from '../helpers/sample-app.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { browserGet } from '../helpers/oauth.ts';
import { movableClock } from '../helpers/clock.ts';
import { runTaskNow } from '../helpers/worker.ts';
import { waitFor } from '../helpers/wait.ts';
import { cleanEnv, freePort, NODE, ROOT } from './process.ts';

const TIMEOUT_MS = 20_000;
const SECRET_KEY = randomBytes(32).toString('hex');
let database: TestDatabase;
let dataDir: string;
let ca: TestCa;
let sample: SampleApp;
let child: ChildProcess | undefined;
let after: TestServer | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-crash-'));
  ca = makeTestCa(['localhost']);
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await after?.stop();
  await sample?.close();
  ca?.remove();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('an install interrupted by a crash', () => {
  it('never authorizes and is swept once the push time-out has passed', async () => {
    // given the service running as its own process, and an app that holds the push without answering
    const port = await freePort();
    const env = {
      ...cleanEnv(),
      DATABASE_URL: database.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      SECRET_KEY,
      ROLE: 'api',
      LOG_LEVEL: 'silent',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    };
    child = spawn(NODE, ['server/main.ts'], { cwd: ROOT, env, stdio: 'ignore' });
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      () =>
        fetch(`${url}/readyz`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      60_000,
    );
    sample = await startSampleApp(ca, url, 'localhost');
    sample.mode('hang');
    const admin = (await signIn(url, ADMIN.email, ADMIN.password)).api;
    const registered = await admin.post('/api/v1/apps', {
      name: 'Crashy',
      webhook_url: sample.url('/hooks'),
      redirect_uris: [sample.url('/callback')],
      scopes: ['openid', 'email'],
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const organizationId = (await admin.get('/api/v1/auth/session')).body.organization.id;

    // when the process dies while the app holds the push
    const install = admin.post(`/api/v1/apps/${registered.body.id}/install`).catch((error: Error) => error);
    const push = await waitFor(() => sample.notices.find((n) => n.status === 0));
    child.kill('SIGKILL');
    expect(await install).toBeInstanceOf(Error);
    const credentials = JSON.parse(push.body) as { clientId: string; clientSecret: string };

    // then what the install wrote is pending, with its client disabled
    const clock = movableClock();
    after = await startTestServer({
      databaseUrl: database.url,
      role: 'all',
      clock,
      env: { SECRET_KEY, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_CA_FILE: ca.caFile },
    });
    const db = after.base.db;
    expect(await db.installation.findMany({ where: { organizationId } })).toEqual([
      expect.objectContaining({ status: 'pending' }),
    ]);
    expect(await db.oAuthClient.findUniqueOrThrow({ where: { clientId: credentials.clientId } })).toMatchObject({
      enabled: false,
    });

    // and the pushed credentials authorize nothing: not at the authorization endpoint, not at the token endpoint
    const { api, login } = await signIn(after.url, ADMIN.email, ADMIN.password);
    const session = login.token as string;
    const authorize = await browserGet(
      new URL(
        `/oauth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: credentials.clientId,
          redirect_uri: sample.url('/callback'),
          scope: 'openid email',
          state: organizationId,
        })}`,
        after.url,
      ),
      session,
    );
    expect(authorize.status).toBe(400);
    expect(await authorize.text()).toContain('Client not found');
    const token = await fetch(new URL('/oauth/token', after.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: credentials.clientId,
        client_secret: credentials.clientSecret,
      }),
    });
    expect(token.status).toBe(401);
    // Members see no installation.
    expect((await api.get('/api/v1/installations')).body.installations).toEqual([]);

    // The sweep leaves a pending install alone while its push could still be running...
    await runTaskNow(database.url, 'app_sweep');
    expect(await db.installation.count({ where: { organizationId } })).toBe(1);
    // ...and removes it, with its client, once the time-out (and a grace period) has passed.
    clock.advance(TIMEOUT_MS / 1000 + 31);
    await runTaskNow(database.url, 'app_sweep');
    expect(await db.installation.count({ where: { organizationId } })).toBe(0);
    expect(await db.oAuthClient.count({ where: { clientId: credentials.clientId } })).toBe(0);

    // Installing again then works, with new credentials.
    sample.mode('normal');
    sample.setSigningSecret(registered.body.signing_secret);
    const again = await api.post(`/api/v1/apps/${registered.body.id}/install`);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.client_id).not.toBe(credentials.clientId);
  });
});
