// Mail delivery through the real job queue (mail_send) to a real SMTP server (smtp-server, parsed by mailparser): a
// 451 retried with back-off until accepted and received once, a 550 given up at once, the headers and both parts,
// a name a user chose arriving as text, the development mailbox without SMTP_URL, readiness while the relay is down,
// and nothing mailed for a rolled-back change.
import { randomBytes } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, mailedInvitationToken } from '../helpers/fixtures.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { mailJobs, waitForMailRow, waitForSettledMail } from '../helpers/mail.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort } from '../e2e/process.ts';
import { queueMail } from '../../schema/modules/mail/outbox.ts';

const MAIL_FROM = 'Tessera Mail Test <mail@tessera.test>';
const NO_SMTP = 'no SMTP_URL';

/** A fresh address, lower case as the SMTP helper keeps recipients. */
const address = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.test`;

/** A logger that keeps the service's lines, parsed, for a test that checks what was logged. */
function keptLog(): { logger: Logger; lines: { msg?: string }[] } {
  const lines: { msg?: string }[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

/** Invites `email` into the organization as a member: the invitation mail is queued with the invitation. */
async function invite(admin: Client, organizationId: string, email: string) {
  const invited = await admin.post(`/v1/organizations/${organizationId}/invitations`, { email, role: 'member' });
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  return invited.body as { id: string; token: string; accept_url: string };
}

describe('mail over SMTP', () => {
  let smtp: TestSmtp;
  let server: TestServer;
  let admin: Client;
  let organizationId: string;
  const log = keptLog();
  const received = (to: string) => smtp.received.filter((m) => m.to === to);

  beforeAll(async () => {
    smtp = await startTestSmtp();
    server = await startTestServer({ role: 'all', logger: log.logger, env: { SMTP_URL: smtp.url, MAIL_FROM } });
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    const org = await admin.post('/v1/organizations', { name: 'Mail Senders' });
    expect(org.status, JSON.stringify(org.body)).toBe(201);
    organizationId = org.body.id;
  });
  afterAll(async () => {
    await server?.stop();
    await smtp?.close();
  });

  it('retries a 451 with back-off and, once accepted, has sent the mail exactly once', async () => {
    // given a relay that answers the next two messages with 451
    const refusedBefore = smtp.refused;
    smtp.refuse(2, 451);

    // when a mail is queued
    const to = address('retried');
    await invite(admin, organizationId, to);

    // then the first refusal is recorded and the job waits for its next attempt
    const retrying = await waitFor(async () => {
      const mail = await waitForMailRow(server.base.db, to);
      return mail.status === 'retrying' ? mail : undefined;
    });
    expect(retrying.lastError).toContain('451');
    expect(retrying.textBody).not.toBeNull();
    expect(await mailJobs(server.base.db, retrying.id)).toBe(1);

    // and the third attempt is accepted; the job is done, and the relay got the mail once
    const mail = await waitForSettledMail(server.base.db, to, 'sent', 45_000);
    expect(smtp.refused - refusedBefore).toBe(2);
    expect(received(to)).toHaveLength(1);
    expect(mail).toMatchObject({
      status: 'sent',
      attempts: 3,
      lastError: null,
      textBody: null,
      htmlBody: null,
      sentAt: expect.any(Date),
    });
    // graphile-worker's back-off: exp(1) ≈ 2.7 s after the first attempt, exp(2) ≈ 7.4 s after the second.
    expect(mail.sentAt!.getTime() - mail.createdAt.getTime()).toBeGreaterThanOrEqual(10_000);
    const shown = await admin.get(`/api/v1/mails/${mail.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      id: mail.id,
      kind: 'invitation',
      to,
      status: 'sent',
      attempts: 3,
      last_error: null,
      text: null,
      html: null,
    });
  });

  it('gives up at once on a 550: failed after one attempt, the job finished, nothing received', async () => {
    // given a relay that refuses the next message for good
    const refusedBefore = smtp.refused;
    smtp.refuse(1, 550);

    // when a mail is queued
    const to = address('refused');
    await invite(admin, organizationId, to);

    // then it is failed after one attempt and its job is gone rather than waiting to retry
    const mail = await waitForSettledMail(server.base.db, to, 'failed');
    expect(mail).toMatchObject({ attempts: 1, sentAt: null });
    expect(mail.lastError).toContain('550');
    expect(smtp.refused - refusedBefore).toBe(1);
    expect(received(to)).toEqual([]);
  });

  it('sends From (MAIL_FROM), To, Subject and a text and an HTML part, with an absolute link from the issuer', async () => {
    // given the platform admin's address (a known account)
    // when a password reset is asked for it
    const asked = await client(server.url).post('/api/v1/auth/password-reset', { email: ADMIN.email });
    expect(asked.status).toBe(202);

    // then the mail arrives with the configured sender and both alternatives
    const [mail] = await smtp.waitForMail(ADMIN.email, /Reset your Tessera password/);
    const { parsed } = mail!;
    expect(parsed.from?.value).toEqual([{ address: 'mail@tessera.test', name: 'Tessera Mail Test' }]);
    expect(Array.isArray(parsed.to) ? parsed.to : [parsed.to]).toMatchObject([{ value: [{ address: ADMIN.email }] }]);
    expect(mail!.subject).toBe('Reset your Tessera password');
    expect((parsed.headers.get('content-type') as { value: string }).value).toBe('multipart/alternative');
    expect(mail!.text).toContain('Choose a new password:');
    expect(mail!.html).toMatch(/^<!doctype html>/);

    // and the link is absolute, from the issuer, the same in both parts
    const link = smtp.linkIn(mail!, '/reset-password');
    expect(link.origin).toBe(server.base.settings.issuer());
    expect(link.searchParams.get('token')).toMatch(/.{20,}/);
    const raw = mail!.text.match(/https?:\/\/\S+\/reset-password\S*/)![0];
    expect(mail!.html).toContain(`href="${raw}"`);
    await waitForSettledMail(server.base.db, ADMIN.email, 'sent');
  });

  it('escapes a name a user chose in the HTML part and keeps it literal in the text part', async () => {
    // given an organization whose name is markup
    const name = '<img src=x onerror=alert(1)>';
    const org = await admin.post('/v1/organizations', { name });
    expect(org.status, JSON.stringify(org.body)).toBe(201);

    // when someone is invited into it
    const to = address('escaped');
    await invite(admin, org.body.id, to);

    // then the HTML shows the name as text, and the text part says it as it is
    const [mail] = await smtp.waitForMail(to, /You are invited/);
    expect(mail!.subject).toBe(`You are invited to ${name} on Tessera`);
    expect(mail!.html).toContain('&#60;img src=x onerror=alert(1)&#62;');
    expect(mail!.html).not.toContain('<img src=x');
    expect(mail!.text).toContain(`invited you to join ${name} as a member`);
  });

  it('queues a mail in the caller transaction: a rollback mails nothing, a commit mails once', async () => {
    const db = server.base.db;
    const to = address('outbox');
    const facts = () => ({
      name: 'Outbox Person',
      at: new Date(),
      forgotUrl: `${server.base.settings.issuer()}/forgot-password`,
    });

    // given a change that queues a mail and then fails
    let seen: { mailId: string; jobs: number } | undefined;
    await expect(
      db.$transaction(async (tx) => {
        await queueMail(tx, 'password_changed', to, facts(), new Date());
        const mail = await tx.mail.findFirstOrThrow({ where: { toAddress: to } });
        const [jobs] = await tx.$queryRaw<
          { n: number }[]
        >`select count(*)::int as n from graphile_worker.jobs where key = ${`mail:${mail.id}`}`;
        seen = { mailId: mail.id, jobs: jobs!.n };
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');

    // then neither the row nor its job outlived the transaction
    expect(seen).toEqual({ mailId: expect.any(String), jobs: 1 });
    expect(await db.mail.count({ where: { toAddress: to } })).toBe(0);
    expect(await mailJobs(db, seen!.mailId)).toBe(0);

    // when the same call commits
    await db.$transaction(async (tx) => {
      await queueMail(tx, 'password_changed', to, facts(), new Date());
    });

    // then that one mail, and only it, arrives
    const mail = await waitForSettledMail(db, to, 'sent');
    expect(mail.id).not.toBe(seen!.mailId);
    expect(received(to)).toEqual([expect.objectContaining({ subject: 'Your Tessera password was changed' })]);
    expect(received(to)[0]!.text).toContain('Hello Outbox Person,');
    expect(await db.mail.count({ where: { toAddress: to } })).toBe(1);
  });

  it('does not speak of the development mailbox when SMTP_URL is set', () => {
    expect(log.lines.filter((l) => l.msg?.startsWith(NO_SMTP))).toEqual([]);
  });
});

describe('mail without SMTP_URL', () => {
  let server: TestServer;
  let admin: Client;
  let organizationId: string;
  const log = keptLog();

  beforeAll(async () => {
    server = await startTestServer({ role: 'all', logger: log.logger });
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    organizationId = (await admin.get('/api/v1/auth/session')).body.organization.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('keeps the mail, bodies and all, in the development mailbox that platform admins read', async () => {
    // given no SMTP relay
    // when a mail is queued
    const to = address('mailbox');
    const invited = await invite(admin, organizationId, to);

    // then its job ends with the mail kept, not sent
    const mail = await waitForSettledMail(server.base.db, to, 'mailbox');
    expect(mail).toMatchObject({ attempts: 1, sentAt: null, lastError: null });

    // and the platform admin reads it, with the link mailed (not the one the inviter was shown), through the REST interface
    const listed = await admin.get(`/api/v1/mails?to=${encodeURIComponent(to)}`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const link = new URL(invited.accept_url);
    link.searchParams.set('token', (await mailedInvitationToken(server.url, to))!);
    expect(link.href).not.toBe(invited.accept_url);
    expect(listed.body.mails).toEqual([
      {
        id: mail.id,
        kind: 'invitation',
        to,
        subject: expect.stringContaining('You are invited to'),
        text: expect.stringContaining(link.href),
        html: expect.stringContaining(`href="${link.href}"`),
        status: 'mailbox',
        attempts: 1,
        last_error: null,
        sent_at: null,
        created_at: expect.any(String),
      },
    ]);
    const one = await admin.get(`/api/v1/mails/${mail.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(listed.body.mails[0]);
  });

  it('refuses the mailbox to anyone but a platform admin', async () => {
    // given an organization's owner
    const tenant = await createTenant(server.url, admin);
    const mail = await waitForMailRow(server.base.db, tenant.member.email);

    // when the owner asks for the mail log, or one mail
    // then both are forbidden
    expect((await tenant.owner.api.get('/api/v1/mails')).status).toBe(403);
    expect((await tenant.owner.api.get(`/api/v1/mails?to=${encodeURIComponent(tenant.member.email)}`)).status).toBe(
      403,
    );
    expect((await tenant.owner.api.get(`/api/v1/mails/${mail.id}`)).status).toBe(403);
  });

  it('says once, at start, that mail is kept and not sent', () => {
    const said = log.lines.filter((l) => l.msg?.startsWith(NO_SMTP));
    expect(said).toHaveLength(1);
    expect(said[0]!.msg).toContain(`${server.base.settings.issuer()}/admin/settings/mail`);
  });
});

describe('mail while the SMTP relay is down', () => {
  let server: TestServer;
  let admin: Client;

  beforeAll(async () => {
    // A port nothing listens on: every connection is refused.
    const closed = await freePort();
    server = await startTestServer({ role: 'all', env: { SMTP_URL: `smtp://127.0.0.1:${closed}` } });
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('stays ready, and keeps the mail for another attempt with the network error recorded', async () => {
    // given a relay that cannot be reached
    // when a mail is queued
    const to = address('unreachable');
    const organizationId = (await admin.get('/api/v1/auth/session')).body.organization.id;
    await invite(admin, organizationId, to);

    // then the attempt is recorded as temporary, and the job waits to try again
    const mail = await waitFor(async () => {
      const row = await waitForMailRow(server.base.db, to);
      return row.status === 'retrying' ? row : undefined;
    });
    expect(mail.attempts).toBeGreaterThanOrEqual(1);
    expect(mail.lastError).toMatch(/ECONNREFUSED/);
    expect(mail.textBody).not.toBeNull();
    expect(await mailJobs(server.base.db, mail.id)).toBe(1);

    // and the service answers ready all the same: mail is not what readiness is about
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });
});
