// A committed change is delivered even when the process that made it is killed with SIGKILL right after the
// commit: the real service (node server/main.ts) as an API process commits an organization change and is killed
// at once; a new process on the same database delivers the event, signed, to a real HTTPS receiver.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { signIn } from '../helpers/http.ts';
import { waitFor } from '../helpers/wait.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { cleanEnv, freePort, NODE, ROOT } from '../e2e/process.ts';

const OWNER = { email: 'owner@sigkill.test', password: 'a strong first password' };
let ca: TestCa;
let receiver: HttpsReceiver;
let database: TestDatabase;
let dataDir: string;
const secretKey = randomBytes(32).toString('hex');
const children: ChildProcess[] = [];

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startHttpsReceiver(ca, 204);
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-sigkill-'));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await receiver?.close();
  await database?.drop();
  ca?.remove();
  await rm(dataDir, { recursive: true, force: true });
});

/** The service as an operator runs it, on the shared database; trusts the test CA through NODE_EXTRA_CA_CERTS. */
async function startService(role: 'api' | 'all'): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  let output = '';
  const child = spawn(NODE, ['server/main.ts'], {
    cwd: ROOT,
    env: {
      ...cleanEnv(),
      DATABASE_URL: database.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      SECRET_KEY: secretKey,
      ROLE: role,
      LOG_LEVEL: 'warn',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      NODE_EXTRA_CA_CERTS: ca.caFile,
      BOOTSTRAP_ADMIN_EMAIL: OWNER.email,
      BOOTSTRAP_ADMIN_PASSWORD: OWNER.password,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () =>
      (await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )) || undefined,
    60_000,
  ).catch(() => {
    throw new Error(`the service did not become ready:\n${output}`);
  });
  return { child, url };
}

it('delivers an event committed just before a SIGKILL once the service runs again on the same data', async () => {
  const api = await startService('api');
  const { api: owner } = await signIn(api.url, OWNER.email, OWNER.password);
  const org = (await owner.get('/api/v1/orgs')).body[0];
  const hook = await owner.post('/api/v1/webhooks', {
    url: receiver.url('127.0.0.1', '/after-kill'),
    events: ['organization.updated'],
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);

  const renamed = await owner.patch(`/v1/organizations/${org.id}`, { name: 'Renamed before the crash' });
  expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
  api.child.kill('SIGKILL');
  await new Promise((resolve) => api.child.once('exit', resolve));
  // An API process runs no jobs: nothing could have been sent before the kill.
  expect(receiver.received).toEqual([]);

  const again = await startService('all');
  const [request] = await waitFor(() => (receiver.received.length ? receiver.received : undefined), 30_000);
  expect(request!.headers['x-service-event']).toBe('organization.updated');
  const body = new StandardWebhook(hook.body.secret).verify(
    request!.body,
    request!.headers as Record<string, string>,
  ) as any;
  expect(body).toMatchObject({
    event: 'organization.updated',
    organization: { id: org.id, name: 'Renamed before the crash' },
  });
  const history = await (
    await signIn(again.url, OWNER.email, OWNER.password)
  ).api.get(`/api/v1/webhooks/${hook.body.id}/deliveries`);
  expect(history.body.deliveries[0]).toMatchObject({ status: 'delivered', attemptCount: 1, statusCode: 204 });
  again.child.kill('SIGTERM');
  await new Promise((resolve) => again.child.once('exit', resolve));
}, 120_000);
