import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer } from '../helpers/server.ts';
import { freshPage as freshPageOf, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, signIn, type Tenant } from '../helpers/fixtures.ts';

// /invitations/accept explains the invitation before anything is typed (invitationPreview), in headless Chromium:
// who invited which address to which organization, a clear page with no form for a link that can no longer be
// used, and each field's problem beside that field.

let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser;
let initech: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  browser = await launchChromium();
  const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
  initech = await createTenant(server.url, platformAdmin, 'Initech');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const freshPage = () => freshPageOf(browser, server.url);
const newEmail = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.test`;

/** An invitation to Initech by its admin (named "admin" by the fixtures): its id and the accept link's path. */
async function invite(email: string, role: 'admin' | 'member'): Promise<{ id: string; link: string }> {
  const reply = await initech.admin.api.post(`/v1/organizations/${initech.id}/invitations`, { email, role });
  expect(reply.status).toBe(201);
  const link = new URL(reply.body.accept_url);
  return { id: reply.body.id, link: link.pathname + link.search };
}

const main = (page: Page) => page.locator('main').innerText();
const formsOf = (page: Page) => page.locator('main form').count();

describe('what an invitation link says before anything is typed', () => {
  test('a pending invitation names the inviter, the address, the organization, the role and the expiry', async () => {
    // given an invitation to Initech as admin for a new address
    const email = newEmail('preview');
    const { link } = await invite(email, 'admin');

    // when the invitee opens the link signed out
    const page = await freshPage();
    await page.goto(link);

    // then the page says who invited which address to which organization, as what, and until when
    await expect(page.getByTestId('invitation-summary').innerText()).resolves.toBe(
      `admin invited ${email} to join Initech as an admin.`,
    );
    await expect(main(page)).resolves.toMatch(/The invitation is valid until \d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC\./);
    // and, the address having no account, asks for a name and a new password
    await expect(page.getByLabel('Name').count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Create account and join' }).count()).resolves.toBe(1);
    await page.context().close();
  });

  test('for an address with an account, it asks for no password but to sign in, and joining follows the sign-in', async () => {
    // given an invitation to Initech for a person who has an account elsewhere
    const other = await createTenant(
      server.url,
      (await signIn(server.url, ADMIN.email, ADMIN.password)).api,
      'Elsewhere',
    );
    const { link } = await invite(other.member.email, 'member');

    // when they open the link signed out
    const page = await freshPage();
    await page.goto(link);

    // then the page asks for neither a name nor a password, but to sign in to that account
    await expect(main(page)).resolves.toContain(`${other.member.email} has a Tessera account already`);
    await expect(page.getByLabel('Name').count()).resolves.toBe(0);
    await expect(page.getByLabel('Password').count()).resolves.toBe(0);

    // when they sign in from there, as /login asks (the address filled in)
    await page.getByTestId('sign-in-to-accept').click();
    await page.waitForURL(
      (url) => url.pathname === '/login' && url.searchParams.get('login_hint') === other.member.email,
    );
    await signInOnPage(page, other.member.email, PASSWORD);

    // then they are back on the invitation, signed in, and join with one click
    await page.waitForURL((url) => url.pathname === '/invitations/accept');
    await page.getByRole('button', { name: 'Join the organization' }).click();
    await page.waitForURL((url) => url.pathname !== '/invitations/accept');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(other.member.email);
    await expect(page.locator('main').textContent()).resolves.toContain('Initech');
    await page.context().close();
  });

  test('a revoked invitation shows a page that says so, with no form', async () => {
    // given an invitation that its admin then revoked
    const { id, link } = await invite(newEmail('revoked'), 'member');
    expect((await initech.admin.api.delete(`/v1/organizations/${initech.id}/invitations/${id}`)).status).toBe(204);

    // when the invitee opens the link
    const page = await freshPage();
    await page.goto(link);

    // then the page says it can no longer be used and whom to ask, and offers nothing to fill in
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'This invitation can no longer be used',
    );
    await expect(page.getByTestId('invitation-unusable').textContent()).resolves.toBe('It was withdrawn.');
    await expect(main(page)).resolves.toContain('Ask the person who invited you for a new one.');
    await expect(formsOf(page)).resolves.toBe(0);
    await expect(page.getByLabel('Password').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('an expired invitation shows a page that says so and for how long one lasts, with no form', async () => {
    // given an invitation whose seven days are over
    const { id, link } = await invite(newEmail('expired'), 'member');
    const db = new pg.Client({ connectionString: server.databaseUrl });
    await db.connect();
    try {
      const { rowCount } = await db.query(
        "update invitations set expires_at = now() - interval '1 minute' where id = $1",
        [id],
      );
      expect(rowCount).toBe(1);
    } finally {
      await db.end();
    }

    // when the invitee opens the link
    const page = await freshPage();
    await page.goto(link);

    // then the page says it has expired, and offers nothing to fill in
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'This invitation can no longer be used',
    );
    await expect(page.getByTestId('invitation-unusable').textContent()).resolves.toBe(
      'It has expired: an invitation is valid for 7 days.',
    );
    await expect(formsOf(page)).resolves.toBe(0);
    await expect(page.getByLabel('Password').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('an invitation revoked while its page is open: submitting shows the same page, and no account is made', async () => {
    // given the page of an invitation for a new address, open, and the invitation revoked meanwhile
    const email = newEmail('late');
    const { id, link } = await invite(email, 'member');
    const page = await freshPage();
    await page.goto(link);
    expect((await initech.admin.api.delete(`/v1/organizations/${initech.id}/invitations/${id}`)).status).toBe(204);

    // when the invitee fills the form and submits it
    await page.getByLabel('Name').fill('Lara Late');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account and join' }).click();

    // then the page says the invitation can no longer be used, with no form left
    await page.getByRole('heading', { name: 'This invitation can no longer be used' }).waitFor();
    await expect(page.getByTestId('invitation-unusable').textContent()).resolves.toContain(
      'This invitation is not valid',
    );
    await expect(formsOf(page)).resolves.toBe(0);
    await expect(signIn(server.url, email, PASSWORD)).rejects.toThrow();
    await page.context().close();
  });

  test('a link that is no invitation at all shows the same page, saying nothing of any invitation', async () => {
    const page = await freshPage();
    await page.goto('/invitations/accept?token=tsi_not-a-real-token');

    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'This invitation can no longer be used',
    );
    await expect(page.getByTestId('invitation-unusable').textContent()).resolves.toContain('not a valid invitation');
    await expect(main(page)).resolves.not.toContain('Initech');
    await expect(formsOf(page)).resolves.toBe(0);
    await page.context().close();
  });

  test('a name with a too-short password marks the password field only', async () => {
    // given an invitation for a new address, open in a signed-out browser
    const { link } = await invite(newEmail('short'), 'member');
    const page = await freshPage();
    await page.goto(link);

    // when the invitee fills a name and an 11-character password
    await page.getByLabel('Name').fill('Sam Short');
    await page.getByLabel('Password').fill('elevenchars');
    await Promise.all([
      page.waitForResponse(
        (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/invitations/accept',
      ),
      page.getByRole('button', { name: 'Create account and join' }).click(),
    ]);

    // then the message names only the password, beside the password field; the name field is not marked
    await expect(page.locator('#password-error').textContent()).resolves.toBe('Password must be 12 to 256 characters');
    await expect.poll(() => page.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');
    await expect(page.getByRole('alert').textContent()).resolves.toBe('The password must be 12 to 256 characters');
    await expect(page.locator('#name-error').count()).resolves.toBe(0);
    await expect(page.getByLabel('Name').getAttribute('aria-invalid')).resolves.toBeNull();
    await expect(page.getByLabel('Name').inputValue()).resolves.toBe('Sam Short');
    await expect(main(page)).resolves.not.toContain('needs a name');
    await page.context().close();
  });

  test('signed in as another account, the page says whom the invitation is for and offers to sign out', async () => {
    // given an invitation for a new address, and Initech's member signed in
    const email = newEmail('someone');
    const { link } = await invite(email, 'member');
    const page = await freshPage();
    await page.goto('/login');
    await signInOnPage(page, initech.member.email, PASSWORD);
    await page.waitForURL((url) => url.pathname !== '/login');

    // when they open the link
    await page.goto(link);

    // then, before any click, the page says the invitation is for another address, with only a way to sign out
    await expect(main(page)).resolves.toContain(
      `This invitation is for ${email}: sign out, then accept it as that person.`,
    );
    await expect(page.getByRole('button', { name: 'Join the organization' }).count()).resolves.toBe(0);
    await expect(page.getByRole('main').getByRole('button', { name: 'Sign out' }).count()).resolves.toBe(1);
    await page.context().close();
  });
});
