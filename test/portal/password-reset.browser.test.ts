import { mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage as freshPageOf, launchChromium, signedInPage, signInOnPage } from '../helpers/browser.ts';
import { addPerson, PASSWORD, signIn, type Person } from '../helpers/fixtures.ts';
import { client } from '../helpers/http.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { waitFor } from '../helpers/wait.ts';

// /forgot-password and /reset-password: a person who forgot their password asks for a link, gets it by mail from a
// real SMTP server, chooses a new password and signs in with it; the sessions signed in with the old one end.

const screenshots = new URL('../.tmp/', import.meta.url);
const NEW_PASSWORD = 'a brand new long password';

let server: TestServer;
let smtp: TestSmtp;
let browser: Browser;
let organizationId: string;

beforeAll(async () => {
  smtp = await startTestSmtp();
  // The worker runs in the same process (role all), so the mail goes out over SMTP.
  server = await startTestServer({ role: 'all', env: { SMTP_URL: smtp.url } });
  try {
    browser = await launchChromium();
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const org = await platformAdmin.post('/v1/organizations', { name: 'Hooli' });
    expect(org.status).toBe(201);
    organizationId = org.body.id;
  } catch (error) {
    await browser?.close();
    await server.stop();
    await smtp.close();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await smtp?.close();
});

const freshPage = () => freshPageOf(browser, server.url);

/** A new member of the organization, with an account made from an invitation. */
async function newPerson(label: string): Promise<Person> {
  const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
  return addPerson(server.url, platformAdmin, organizationId, 'member', `${label}-${randomBytes(2).toString('hex')}`);
}

/** Submits the page's form with the button `name` and waits for the POST's answer. */
async function submit(page: Page, name: string): Promise<void> {
  const path = new URL(page.url()).pathname;
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    page.getByRole('button', { name }).click(),
  ]);
  if (response.status() === 403) expect.fail(`POST ${path} answered 403: ${await response.text()}`);
}

describe('password reset by mail', () => {
  test('a mailed link sets a new password, signs in with it, and ends the sessions of the old one', async () => {
    // given a person signed in in one browser with the old password
    const person = await newPerson('forgetful');
    const old = await signedInPage(browser, server.url, { email: person.email, password: PASSWORD });

    // when, in another browser, they follow "Forgot password?" from the sign-in page and give their address
    const page = await freshPage();
    await page.goto('/login');
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await page.waitForURL((url) => url.pathname === '/forgot-password');
    await expect(page.title()).resolves.toBe('Forgot password · Tessera');
    await page.getByLabel('Email').fill(person.email);
    await submit(page, 'Send reset link');

    // then the page answers as it would for any address
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      'If an account uses this address, a link to choose a new password is on its way.',
    );

    // and the link arrives by mail
    const [mail] = await smtp.waitForMail(person.email, /Reset your/);
    const link = smtp.linkIn(mail!, '/reset-password');
    expect(link.origin).toBe(new URL(server.url).origin);

    // when they open it: the page only asks for the new password (opening it spends nothing)
    await page.goto(link.pathname + link.search);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Choose a new password');
    await page.reload();

    // and a repeat that does not match is refused by the form, with nothing changed
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat new password', { exact: true }).fill(`${NEW_PASSWORD}!`);
    await submit(page, 'Save new password');
    await expect(page.locator('#password-repeat-error').textContent()).resolves.toBe(
      'The repeated password does not match the new password',
    );
    await expect
      .poll(() => page.getByLabel('Repeat new password', { exact: true }).getAttribute('aria-invalid'))
      .toBe('true');
    expect(new URL(page.url()).pathname).toBe('/reset-password');

    // when they type it twice alike
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat new password', { exact: true }).fill(NEW_PASSWORD);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('reset-password.png', screenshots).pathname, fullPage: true });
    await submit(page, 'Save new password');

    // then they are on the sign-in page, which says the password was changed
    await page.waitForURL((url) => url.pathname === '/login' && url.searchParams.get('reset') === '1');
    await expect(page.getByRole('status').textContent()).resolves.toBe(
      'Your password was changed. Sign in with the new one.',
    );

    // and the old password no longer signs in, the new one does and lands on their dashboard
    await expect(signIn(server.url, person.email, PASSWORD)).rejects.toThrow(/401/);
    await signInOnPage(page, person.email, NEW_PASSWORD);
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(person.email);

    // and the browser signed in with the old password is signed out
    await old.goto('/portal/dashboard');
    await old.waitForURL((url) => url.pathname === '/login');

    // and the link, used once, now says so, with a way to ask for another
    const again = await freshPage();
    await again.goto(link.pathname + link.search);
    await again.getByLabel('New password', { exact: true }).fill('yet another long password');
    await again.getByLabel('Repeat new password', { exact: true }).fill('yet another long password');
    await submit(again, 'Save new password');
    await expect(again.getByRole('alert').textContent()).resolves.toContain('This password reset link is not valid');
    await expect(again.getByRole('link', { name: 'Ask for a new link' }).getAttribute('href')).resolves.toBe(
      '/forgot-password',
    );
    await again.context().close();
    await page.context().close();
    await old.context().close();
  });

  test('an unknown address gets the same answer and no mail', async () => {
    // given the forgot-password page
    const page = await freshPage();
    await page.goto('/forgot-password');

    // when an address no account uses is given
    const nobody = `nobody-${randomBytes(4).toString('hex')}@example.test`;
    await page.getByLabel('Email').fill(nobody);
    await submit(page, 'Send reset link');

    // then the answer is the same as for a known address, and nothing is mailed there
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      'If an account uses this address, a link to choose a new password is on its way.',
    );
    // (once the job the request queued, which writes a link and its mail only for an account, has run)
    await waitFor(async () => {
      const [row] = await server.base.db.$queryRaw<
        { n: number }[]
      >`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'password_reset_mail'`;
      return row!.n === 0 || undefined;
    });
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const mails = await platformAdmin.get(`/api/v1/mails?to=${encodeURIComponent(nobody)}`);
    expect(mails.status).toBe(200);
    expect(mails.body.mails).toEqual([]);
    await page.context().close();
  });

  test('a malformed address is marked on its field; too many requests for one address are told to wait', async () => {
    // given the forgot-password page
    const page = await freshPage();
    await page.goto('/forgot-password');

    // when an address the browser lets through but the service does not is given
    await page.getByLabel('Email').fill('someone@localhost');
    await submit(page, 'Send reset link');

    // then the field says why, and keeps what was typed
    const field = page.getByLabel('Email');
    await expect(page.locator('#email-error').textContent()).resolves.toBe('Email must be an e-mail address');
    await expect.poll(() => field.getAttribute('aria-invalid')).toBe('true');
    await expect(field.inputValue()).resolves.toBe('someone@localhost');
    await expect(page.getByRole('status').count()).resolves.toBe(0);

    // when an address has already been asked for as often as an hour allows
    const busy = `busy-${randomBytes(4).toString('hex')}@example.test`;
    for (let i = 0; i < 5; i++) {
      const asked = await client(server.url).post('/api/v1/auth/password-reset', { email: busy });
      expect(asked.status).toBe(202);
    }
    await field.fill(busy);
    await submit(page, 'Send reset link');

    // then the page says to wait, and not that a link is on its way (the first answer's alert stays until the
    // page has applied the second)
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('Too many reset requests for this address. Please wait a while and try again.');
    await expect(page.getByRole('status').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('the mail log shows a mail sent over SMTP by its envelope only: its bodies were erased', async () => {
    // given a reset link mailed over SMTP
    const person = await newPerson('logged');
    const asked = await client(server.url).post('/api/v1/auth/password-reset', { email: person.email });
    expect(asked.status).toBe(202);
    await smtp.waitForMail(person.email, /Reset your/);
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const sent = await waitFor(async () => {
      const reply = await platformAdmin.get(`/api/v1/mails?to=${encodeURIComponent(person.email)}`);
      return reply.body.mails.find(
        (m: { kind: string; status: string }) => m.kind === 'password_reset' && m.status === 'sent',
      );
    });

    // when the platform admin opens it in the mail log
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/settings/mail/${sent.id}`);

    // then its envelope is shown, and a note says why there is no body
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Reset your Tessera password');
    await expect(page.getByTestId('mail-to').textContent()).resolves.toBe(person.email);
    await expect(page.getByTestId('mail-status').textContent()).resolves.toBe('sent');
    await expect(page.getByTestId('bodies-erased').textContent()).resolves.toContain(
      'The bodies were erased once the mail was sent over SMTP',
    );
    await expect(page.getByTestId('mail-html').count()).resolves.toBe(0);
    await expect(page.getByTestId('mail-text').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('a link with an unknown or missing token says it is not valid, with a way to ask again, and no error page', async () => {
    const page = await freshPage();

    // when a made-up token is opened and a password submitted
    const response = await page.goto('/reset-password?token=not-a-real-token');
    expect(response?.status()).toBe(200);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat new password', { exact: true }).fill(NEW_PASSWORD);
    await submit(page, 'Save new password');

    // then the page says why, and links to asking for a new one
    await expect(page.getByRole('alert').textContent()).resolves.toContain(
      'This password reset link is not valid: it may have expired or been used. Ask for a new one.',
    );
    await expect(page.getByLabel('New password', { exact: true }).count()).resolves.toBe(0);
    await page.getByRole('link', { name: 'Ask for a new link' }).click();
    await page.waitForURL((url) => url.pathname === '/forgot-password');

    // and a link without its token says it is incomplete
    await page.goto('/reset-password');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('This link is incomplete');
    await page.context().close();
  });
});
