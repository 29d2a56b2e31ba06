// Password reset by a mailed link: POST /api/v1/auth/password-reset and /confirm, through a real SMTP server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signIn } from '../helpers/http.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let smtp: TestSmtp;
let tenant: Tenant;

beforeAll(async () => {
  smtp = await startTestSmtp();
  server = await startTestServer({ role: 'all', env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tessera Test <id@tessera.test>' } });
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
});
afterAll(async () => {
  await server?.stop();
  await smtp?.close();
});

describe('password reset', () => {
  it('mails a link that sets a new password once and ends every session', async () => {
    const anonymous = client(server.url);
    const person = tenant.member;
    const asked = await anonymous.post('/api/v1/auth/password-reset', { email: person.email });
    expect(asked.status).toBe(202);
    const [mail] = await smtp.waitForMail(person.email, /Reset your/);
    expect(mail!.from).toContain('id@tessera.test');
    const link = smtp.linkIn(mail!, '/reset-password');
    expect(link.origin).toBe(server.base.settings.issuer());
    const token = link.searchParams.get('token')!;

    const confirmed = await anonymous.post('/api/v1/auth/password-reset/confirm', { token, password: 'a brand new password' });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);
    expect((await person.api.get('/api/v1/users/me')).status).toBe(401);
    expect((await anonymous.post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status).toBe(401);
    expect((await anonymous.post('/api/v1/auth/login', { email: person.email, password: 'a brand new password' })).status).toBe(200);
    const again = await anonymous.post('/api/v1/auth/password-reset/confirm', { token, password: 'yet another password' });
    expect(again.status).toBe(400);
    const [notice] = await smtp.waitForMail(person.email, /password was changed/);
    expect(notice!.text).toContain('Every session and token');
  });
});
