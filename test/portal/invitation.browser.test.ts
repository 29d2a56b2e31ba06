import { mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer } from '../helpers/server.ts';
import { freshPage as freshPageOf, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { addPerson, createTenant, mailedInvitationToken, PASSWORD, signIn, type Tenant } from '../helpers/fixtures.ts';
import type { Client } from '../helpers/http.ts';
import { movableClock } from '../helpers/clock.ts';
import { codeAt, enrolTotp, toMidStep } from '../helpers/totp.ts';

// /invitations/accept: the invitee follows the link mailed to them and joins, in headless Chromium. An address that
// has an account signs in first on /login (its second factor there), then joins in that session.

const screenshots = new URL('../.tmp/', import.meta.url);

const clock = movableClock();
let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  server = await startTestServer({ clock });
  browser = await launchChromium();
  const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
  acme = await createTenant(server.url, platformAdmin, 'Acme Corp');
  globex = await createTenant(server.url, platformAdmin, 'Globex');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const freshPage = () => freshPageOf(browser, server.url);
const newEmail = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.test`;

/** Invites `email` through the REST API and returns the mailed accept link's path and query, as the invitee has it. */
async function invite(
  inviter: Client,
  organizationId: string,
  email: string,
  role: 'admin' | 'member',
): Promise<string> {
  const reply = await inviter.post(`/v1/organizations/${organizationId}/invitations`, { email, role });
  expect(reply.status).toBe(201);
  const link = new URL(reply.body.accept_url);
  expect(link.origin).toBe(new URL(server.url).origin);
  expect(link.pathname).toBe('/invitations/accept');
  return `${link.pathname}?${new URLSearchParams({ token: (await mailedInvitationToken(server.url, email))! })}`;
}

async function submitForm(page: Page, name: string, password: string): Promise<void> {
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(password);
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/invitations/accept'),
    page.getByRole('button', { name: 'Create account and join' }).click(),
  ]);
  if (response.status() === 403) expect.fail(`POST /invitations/accept answered 403: ${await response.text()}`);
}

/** The organizations `person` belongs to, as the REST API lists them for their own session. */
async function organizationsOf(person: { api: Client }): Promise<{ id: string; name: string; role: string }[]> {
  const reply = await person.api.get('/api/v1/orgs');
  expect(reply.status).toBe(200);
  return reply.body;
}

describe('accepting an invitation in the portal', () => {
  test('a new person creates an account from the link, lands on the dashboard, and the link is then used up', async () => {
    // given an invitation to Acme as admin for a new address
    const email = newEmail('newcomer');
    const link = await invite(acme.owner.api, acme.id, email, 'admin');

    // when the invitee opens the link in a signed-out browser
    const page = await freshPage();
    await page.goto(link);

    // then the page invites them to create an account
    await expect(page.title()).resolves.toBe('Accept invitation · Tessera');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Accept invitation');
    await expect(page.getByTestId('invitation-summary').innerText()).resolves.toBe(
      `owner invited ${email} to join Acme Corp as an admin.`,
    );
    await page.getByLabel('Name').fill('Nadia Newcomer');
    await page.getByLabel('Password').fill(PASSWORD);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('invitation.png', screenshots).pathname, fullPage: true });

    // when they create the account
    await submitForm(page, 'Nadia Newcomer', PASSWORD);

    // then they are signed in on the dashboard, in Acme, with the invited role
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(email);
    const main = await page.locator('main').textContent();
    expect(main).toContain('Nadia Newcomer');
    expect(main).toContain('Acme Corp');
    expect(main).toMatch(/Your role\s*admin/);
    const session = (await page.context().cookies()).find((c) => c.name === 'tessera_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    await page.context().close();

    // when the same link is opened again
    const again = await freshPage();
    await again.goto(link);

    // then the page says the invitation was used, with nothing to submit
    await expect(again.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      'This invitation can no longer be used',
    );
    await expect(again.getByTestId('invitation-unusable').textContent()).resolves.toBe('It has been accepted already.');
    await expect(again.locator('main form').count()).resolves.toBe(0);
    await again.context().close();
  });

  test('a too-short password shows the field error and creates no account; a good one then succeeds', async () => {
    // given an invitation to Acme as member for a new address
    const email = newEmail('shortpw');
    const link = await invite(acme.owner.api, acme.id, email, 'member');
    const page = await freshPage();
    await page.goto(link);

    // when the invitee picks an 11-character password
    await submitForm(page, 'Sam Short', 'elevenchars');

    // then the password field says why, the name is kept, and nobody joined
    const password = page.getByLabel('Password');
    await expect(page.locator('#password-error').textContent()).resolves.toBe('Password must be 12 to 256 characters');
    await expect.poll(() => password.getAttribute('aria-invalid')).toBe('true');
    await expect(password.getAttribute('aria-describedby')).resolves.toContain('password-error');
    await expect(page.getByLabel('Name').inputValue()).resolves.toBe('Sam Short');
    expect(new URL(page.url()).pathname).toBe('/invitations/accept');
    const login = await signIn(server.url, email, 'elevenchars').catch((err: Error) => err);
    expect(login).toBeInstanceOf(Error);

    // when they try again with a long enough password on the same page
    await submitForm(page, 'Sam Short', PASSWORD);

    // then the invitation was still valid and no account was made before (its password would be asked for): they join
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(email);
    await expect(page.locator('main').textContent()).resolves.toContain('Acme Corp');
    const { api } = await signIn(server.url, email, PASSWORD);
    expect(await organizationsOf({ api })).toEqual([expect.objectContaining({ id: acme.id, role: 'member' })]);
    await page.context().close();
  });

  test('an existing account, signed in, joins a second organization with one click', async () => {
    // given Acme's member, signed in, invited by e-mail to Globex
    const person = acme.member;
    const link = await invite(globex.owner.api, globex.id, person.email, 'member');
    const page = await freshPage();
    await page.goto('/login');
    await signInOnPage(page, person.email, PASSWORD);
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');

    // when they open the link
    await page.goto(link);

    // then there is no form to fill, only a button to join as the signed-in account
    await expect(page.locator('main').textContent()).resolves.toContain(`You are signed in as ${person.email}`);
    await expect(page.getByLabel('Password').count()).resolves.toBe(0);

    // when they click it
    await page.getByRole('button', { name: 'Join the organization' }).click();

    // then they are on the dashboard, now in Globex, and a member of both organizations
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(person.email);
    await expect(page.locator('main').textContent()).resolves.toContain('Globex');
    expect(await organizationsOf(person)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: acme.id, name: 'Acme Corp', role: 'member' }),
        expect.objectContaining({ id: globex.id, name: 'Globex', role: 'member' }),
      ]),
    );
    await page.context().close();
  });

  test('signed in as another account, the page says so and signing out brings back the form', async () => {
    // given two invitations to Globex, for Acme's owner (who has an account) and for a new address
    const forOwner = await invite(globex.owner.api, globex.id, acme.owner.email, 'member');
    const newcomer = newEmail('elsewhere');
    const forNewcomer = await invite(globex.owner.api, globex.id, newcomer, 'member');
    // and Acme's admin, signed in
    const page = await freshPage();
    await page.goto('/login');
    await signInOnPage(page, acme.admin.email, PASSWORD);
    await page.waitForURL((url) => url.pathname === '/admin/dashboard');

    // when they open the invitation for Acme's owner
    await page.goto(forOwner);

    // then the page says whom it is for, with a way to sign out and none to join
    await expect(page.locator('main').textContent()).resolves.toContain(
      `This invitation is for ${acme.owner.email}: sign out, then accept it as that person.`,
    );
    await expect(page.getByRole('main').getByRole('button', { name: 'Sign out' }).count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Join the organization' }).count()).resolves.toBe(0);

    // when they open the invitation for the new address
    await page.goto(forNewcomer);

    // then the page says the same of it, and no account was made for that address from theirs
    await expect(page.locator('main').textContent()).resolves.toContain(`This invitation is for ${newcomer}:`);
    expect((await organizationsOf(acme.admin)).map((o) => o.id)).toEqual([acme.id]);

    // when they sign out from there
    await page.getByRole('main').getByRole('button', { name: 'Sign out' }).click();

    // then they are back on the same invitation, signed out, with the form
    const search = new URL(forNewcomer, server.url).search;
    await page.waitForURL((url) => url.pathname === '/invitations/accept' && url.search === search);
    await expect(page.getByRole('button', { name: 'Create account and join' }).count()).resolves.toBe(1);
    expect((await page.context().cookies()).find((c) => c.name === 'tessera_session')).toBeUndefined();
    await page.context().close();
  });

  test('an existing account with a second factor, signed out, signs in with it on /login first, then joins', async () => {
    // given a Globex admin with an authenticator app, invited by e-mail to Acme
    const person = await addPerson(server.url, globex.owner.api, globex.id, 'admin', 'guarded');
    const { secret } = await enrolTotp(person.api, clock);
    const link = await invite(acme.owner.api, acme.id, person.email, 'admin');

    // when they open the link in a signed-out browser
    const page = await freshPage();
    await page.goto(link);

    // then there is no password to give here, only the way to sign in
    await expect(page.getByLabel('Password').count()).resolves.toBe(0);
    await expect(page.locator('main').textContent()).resolves.toContain(
      `${person.email} has a Tessera account already: sign in to it, then join.`,
    );
    await page.getByTestId('sign-in-to-accept').click();

    // when they sign in there with the password and then a code
    await page.waitForURL((url) => url.pathname === '/login');
    await signInOnPage(page, person.email, PASSWORD);
    const step = page.getByTestId('second-factor');
    await step.waitFor();
    expect((await organizationsOf(person)).map((o) => o.id)).toEqual([globex.id]);
    toMidStep(clock);
    await step.getByLabel('Code from your authenticator app').fill(codeAt(clock, secret));
    await step.getByRole('button', { name: 'Verify' }).click();

    // then they are back on the invitation, signed in, and join with one click
    await page.waitForURL((url) => url.pathname === '/invitations/accept');
    await expect(page.locator('main').textContent()).resolves.toContain(`You are signed in as ${person.email}`);
    await page.getByRole('button', { name: 'Join the organization' }).click();
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await expect(page.locator('main').textContent()).resolves.toContain('Acme Corp');
    expect((await organizationsOf(person)).map((o) => o.id).sort()).toEqual([acme.id, globex.id].sort());
    await page.context().close();
  });

  test('a new member of an organization that requires a second factor is sent to set one up first', async () => {
    // given an organization that requires a second factor, and an invitation to it for a new address
    const strict = await createTenant(
      server.url,
      (await signIn(server.url, ADMIN.email, ADMIN.password)).api,
      'Strict',
    );
    await enrolTotp(strict.owner.api, clock);
    const on = await strict.owner.api.patch(`/v1/organizations/${strict.id}`, { require_mfa: true });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    const email = newEmail('strict');
    const link = await invite(strict.owner.api, strict.id, email, 'member');

    // when the invitee creates the account from the link
    const page = await freshPage();
    await page.goto(link);
    await submitForm(page, 'Nell New', PASSWORD);

    // then they land on setting up a second factor, not on a dashboard
    await page.waitForURL((url) => url.pathname === '/portal/security');
    expect(new URL(page.url()).searchParams.get('enrol')).toBe('1');
    await expect(page.getByTestId('enrol-required').count()).resolves.toBe(1);
    await page.context().close();
  });

  test('a link without its token is a 400 saying the link is incomplete', async () => {
    const page = await freshPage();
    const response = await page.goto('/invitations/accept');
    expect(response?.status()).toBe(400);
    await expect(page.locator('main').textContent()).resolves.toContain('This invitation link is incomplete');
    await page.context().close();
  });
});
