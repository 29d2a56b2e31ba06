// A mail committed just before the process dies is sent after the restart, once: the real service runs as its own
// process with ROLE=api (no worker, so the mail cannot go out before the kill), answers an invitation (whose mail is
// committed with it) and a password reset request (whose job, committed with the answer, writes the link and its
// mail), and is killed with SIGKILL; a new service with a worker on the same database then sends both mails to a real
// SMTP server, once each, and the reset link still works.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { client, signIn } from '../helpers/http.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { waitForSettledMail } from '../helpers/mail.ts';
import { waitFor } from '../helpers/wait.ts';
import { cleanEnv, freePort, NODE, ROOT } from './process.ts';

const SECRET_KEY = randomBytes(32).toString('hex');
let database: TestDatabase;
let dataDir: string;
let smtp: TestSmtp;
let child: ChildProcess | undefined;
let after: TestServer | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-mail-crash-'));
  smtp = await startTestSmtp();
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await after?.stop();
  await smtp?.close();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** The mail rows to `to` and how many send jobs each still has queued, read straight from the database. */
async function outbox(to: string): Promise<{ status: string; jobs: number }[]> {
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ status: string; jobs: number }>(
      `select m.status, (select count(*)::int from graphile_worker.jobs j where j.key = 'mail:' || m.id) as jobs from mails m where m.to_address = $1`,
      [to],
    );
    return rows;
  } finally {
    await db.end();
  }
}

/** Password reset requests still queued (password_reset_mail jobs), read straight from the database. */
async function resetJobs(): Promise<number> {
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from graphile_worker.jobs where task_identifier = 'password_reset_mail'`,
    );
    return rows[0]!.n;
  } finally {
    await db.end();
  }
}

describe('a mail committed just before a crash', () => {
  it('is sent once after the restart', async () => {
    // given the service running as an API process, with no worker, pointed at the SMTP server
    const port = await freePort();
    let output = '';
    child = spawn(NODE, ['server/main.ts'], {
      cwd: ROOT,
      env: {
        ...cleanEnv(),
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        SECRET_KEY,
        ROLE: 'api',
        LOG_LEVEL: 'warn',
        SMTP_URL: smtp.url,
        BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
        BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      () =>
        fetch(`${url}/readyz`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      60_000,
    ).catch(() => {
      throw new Error(`the service did not become ready:\n${output}`);
    });

    // when someone is invited, and a password reset is asked for, and the process is killed as soon as it has answered
    const { api: admin } = await signIn(url, ADMIN.email, ADMIN.password);
    const organizationId = (await admin.get('/api/v1/auth/session')).body.organization.id;
    const invitee = `invitee-${randomBytes(3).toString('hex')}@example.test`;
    const invited = await admin.post(`/v1/organizations/${organizationId}/invitations`, {
      email: invitee,
      role: 'member',
    });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    const asked = await client(url).post('/api/v1/auth/password-reset', { email: ADMIN.email });
    expect(asked.status, JSON.stringify(asked.body)).toBe(202);
    child.kill('SIGKILL');
    await exited;

    // then nothing was sent; the invitation's mail and its job are committed, waiting, and so is the reset's job
    expect(smtp.received).toEqual([]);
    expect(await outbox(invitee)).toEqual([{ status: 'queued', jobs: 1 }]);
    expect(await resetJobs()).toBe(1);

    // when the service starts again on the same database, with a worker
    after = await startTestServer({ databaseUrl: database.url, role: 'all', env: { SECRET_KEY, SMTP_URL: smtp.url } });

    // then the invitation and the reset mail arrive, once each, and their jobs are done
    await smtp.waitForMail(invitee, /You are invited/);
    const [mail] = await smtp.waitForMail(ADMIN.email, /Reset your Tessera password/);
    expect((await waitForSettledMail(after.base.db, invitee, 'sent')).attempts).toBe(1);
    expect((await waitForSettledMail(after.base.db, ADMIN.email, 'sent')).attempts).toBe(1);
    expect(await resetJobs()).toBe(0);
    expect(smtp.received.map((m) => m.to).sort()).toEqual([ADMIN.email, invitee].sort());

    // and the link it carries, made by the killed process, sets a new password on the new one
    const token = smtp.linkIn(mail!, '/reset-password').searchParams.get('token')!;
    const confirmed = await client(after.url).post('/api/v1/auth/password-reset/confirm', {
      token,
      password: 'a password set after the crash',
    });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);
    expect(
      (
        await client(after.url).post('/api/v1/auth/login', {
          email: ADMIN.email,
          password: 'a password set after the crash',
        })
      ).status,
    ).toBe(200);
  });
});
