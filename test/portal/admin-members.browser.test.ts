import { mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn } from '../helpers/http.ts';

// /admin/settings/members: an organization's admins invite people, change roles, remove members and revoke
// invitations in headless Chromium; the REST API and the invitee's own browser confirm what the page did.

const screenshots = new URL('../.tmp/', import.meta.url);

let server: TestServer;
let browser: Browser;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    tenant = await createTenant(server.url, platformAdmin, 'Initech');
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const newEmail = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.test`;
const owner = () => ({ email: tenant.owner.email, password: PASSWORD });

/** The tenant's members as the REST API lists them, by e-mail. */
async function membersByEmail(): Promise<Map<string, { user_id: string; role: string }>> {
  const reply = await tenant.owner.api.get(`/v1/organizations/${tenant.id}/members?limit=100`);
  expect(reply.status).toBe(200);
  return new Map(
    reply.body.members.map((m: { user: { email: string }; user_id: string; role: string }) => [m.user.email, m]),
  );
}

/**
 * Submits the form whose button is `button` and waits until the page shows the action's answer: its buttons are
 * disabled while a form is sent, and enabled again once the answer (and the reloaded data) is on the page.
 */
async function submit(page: Page, button: ReturnType<Page['getByRole']>): Promise<void> {
  const path = new URL(page.url()).pathname;
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    button.click(),
  ]);
  await page.waitForFunction(() => !document.querySelector('main button[disabled]'));
}

const memberRow = (page: Page, userId: string) => page.locator(`[data-testid="member-row"][data-user-id="${userId}"]`);

describe('admin: members', () => {
  test('an invitation shows its accept link once; the link works in another browser, and the new member is listed', async () => {
    // given the tenant's owner, who opens Members from the navigation
    const page = await signedInPage(browser, server.url, owner());
    await page.goto('/admin/dashboard');
    const nav = page.getByRole('navigation', { name: 'Administration' });
    await nav.getByRole('list', { name: 'Settings' }).getByRole('link', { name: 'Members' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/members');
    await expect(page.title()).resolves.toBe('Members · Tessera');
    await expect(nav.getByRole('link', { name: 'Members' }).getAttribute('aria-current')).resolves.toBe('page');

    // then the organization's people are listed with their roles, the owner marked as themselves
    await expect(memberRow(page, tenant.owner.id).getByRole('rowheader').textContent()).resolves.toBe('owner (you)');
    await expect(memberRow(page, tenant.owner.id).getByTestId('member-role').textContent()).resolves.toBe('owner');
    await expect(memberRow(page, tenant.admin.id).getByLabel('Role of admin').inputValue()).resolves.toBe('admin');
    await expect(memberRow(page, tenant.member.id).getByLabel('Role of member').inputValue()).resolves.toBe('member');
    await expect(memberRow(page, tenant.member.id).textContent()).resolves.toContain(tenant.member.email);

    // when they invite a new address as admin
    const email = newEmail('ines');
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await submit(page, page.getByRole('button', { name: 'Create invitation' }));

    // then the accept link is shown, with a copy button and the warning
    const box = page.getByTestId('invitation-box');
    await box.waitFor();
    await expect(box.textContent()).resolves.toContain('send this link now: it will not be shown again.');
    await expect(box.textContent()).resolves.toContain(
      'It does not confirm their address: the link mailed to them does.',
    );
    await expect(box.getByRole('button', { name: 'Copy accept link' }).count()).resolves.toBe(1);
    const acceptUrl = new URL((await box.getByTestId('shown-accept-url').textContent())!);
    expect(acceptUrl.origin).toBe(new URL(server.url).origin);
    expect(acceptUrl.pathname).toBe('/invitations/accept');
    const token = acceptUrl.searchParams.get('token')!;
    expect(token).toMatch(/^tsi_/);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-members.png', screenshots).pathname, fullPage: true });

    // and it is listed as pending, with its role and expiry
    const pending = page.getByTestId('invitation-row').filter({ hasText: email });
    const row = (await pending.textContent())!;
    expect(row).toContain('admin');
    expect(row).toContain('pending');
    expect(row).toMatch(/\d{4}, \d{2}:\d{2} UTC/);

    // and a reload does not show the link again
    await page.reload();
    await expect(page.getByTestId('invitation-box').count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(token);

    // when the invitee opens the link in their own browser and creates the account
    const invitee = await freshPage(browser, server.url);
    await invitee.goto(acceptUrl.pathname + acceptUrl.search);
    await invitee.getByLabel('Name').fill('Ines Invited');
    await invitee.getByLabel('Password').fill(PASSWORD);
    await invitee.getByRole('button', { name: 'Create account and join' }).click();

    // then they are in, with the invited role
    await invitee.waitForURL((url) => url.pathname === '/portal/dashboard');
    await expect(invitee.locator('main').textContent()).resolves.toMatch(/Your role\s*admin/);
    await invitee.context().close();

    // and the owner's page lists them as a member, and the invitation is no longer pending
    await page.reload();
    const joined = (await membersByEmail()).get(email);
    expect(joined?.role).toBe('admin');
    const listed = memberRow(page, joined!.user_id);
    await expect(listed.getByRole('rowheader').textContent()).resolves.toBe('Ines Invited');
    await expect(listed.textContent()).resolves.toContain(email);
    await expect(listed.getByLabel('Role of Ines Invited').inputValue()).resolves.toBe('admin');
    await expect(pending.count()).resolves.toBe(0);
    await page.context().close();
  });

  test('inviting someone who is already a member says so, and keeps what was typed', async () => {
    const page = await signedInPage(browser, server.url, owner());
    await page.goto('/admin/settings/members');

    await page.getByLabel('Email', { exact: true }).fill(tenant.member.email);
    await submit(page, page.getByRole('button', { name: 'Create invitation' }));

    await expect(page.getByRole('alert').textContent()).resolves.toContain('This person is already a member');
    await expect(page.getByLabel('Email', { exact: true }).inputValue()).resolves.toBe(tenant.member.email);
    await expect(page.getByTestId('invitation-box').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('what was typed before the page became interactive is kept (slow scripts)', async () => {
    const page = await signedInPage(browser, server.url, owner());
    // The page's scripts are held back until the email has been typed into the server-rendered form.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/_app/immutable/**/*.js', async (route) => {
      await held;
      await route.continue();
    });
    await page.goto('/admin/settings/members', { waitUntil: 'domcontentloaded' });
    await page.getByLabel('Email', { exact: true }).fill(tenant.member.email);
    release();
    await page.waitForLoadState('networkidle');

    // Hydration left the typed value in place, so the form can be sent as it is.
    await expect(page.getByLabel('Email', { exact: true }).inputValue()).resolves.toBe(tenant.member.email);
    await submit(page, page.getByRole('button', { name: 'Create invitation' }));
    await expect(page.getByRole('alert').textContent()).resolves.toContain('This person is already a member');
    await page.context().close();
  });

  test("Change role changes a member's role", async () => {
    // given a member
    const mia = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'mia');
    const page = await signedInPage(browser, server.url, owner());
    await page.goto('/admin/settings/members');

    // when the owner makes them an admin
    const row = memberRow(page, mia.id);
    await row.getByLabel('Role of mia').selectOption('admin');
    await submit(page, row.getByRole('button', { name: 'Change role' }));

    // then the page says so and shows the new role, and it is stored
    await expect(page.getByRole('status').textContent()).resolves.toBe('mia is now admin.');
    await expect(row.getByLabel('Role of mia').inputValue()).resolves.toBe('admin');
    expect((await membersByEmail()).get(mia.email)?.role).toBe('admin');
    // and it takes effect: mia can now open the admin pages
    const theirs = await signedInPage(browser, server.url, { email: mia.email, password: PASSWORD });
    expect((await theirs.goto('/admin/settings/members'))?.status()).toBe(200);
    await theirs.context().close();

    // when they are made a member again
    await row.getByLabel('Role of mia').selectOption('member');
    await submit(page, row.getByRole('button', { name: 'Change role' }));
    await expect(page.getByRole('status').textContent()).resolves.toBe('mia is now member.');
    expect((await membersByEmail()).get(mia.email)?.role).toBe('member');
    await page.context().close();
  });

  test('an admin cannot change the owner: no controls, and the action is refused with the reason', async () => {
    // given the tenant's admin on the page
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await page.goto('/admin/settings/members');

    // then the owner's row has no controls, and no role offered goes above admin
    const ownerRow = memberRow(page, tenant.owner.id);
    await expect(ownerRow.getByRole('combobox').count()).resolves.toBe(0);
    await expect(ownerRow.getByRole('link').count()).resolves.toBe(0);
    await expect(page.getByLabel('Role', { exact: true }).locator('option').allTextContents()).resolves.toEqual([
      'admin',
      'member',
    ]);

    // and posting the change directly is refused with the service's reason, on the page
    const posted = await page.request.post('/admin/settings/members?/changeRole', {
      form: { userId: tenant.owner.id, role: 'member' },
      headers: { origin: server.url },
    });
    expect(posted.status()).toBe(403);
    expect(await posted.text()).toContain('Only an owner can change an owner');
    expect((await membersByEmail()).get(tenant.owner.email)?.role).toBe('owner');
    await page.context().close();
  });

  test('Remove asks for confirmation, then removes the member and ends their access', async () => {
    // given a member with a session
    const rex = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'rex');
    const page = await signedInPage(browser, server.url, owner());
    await page.goto('/admin/settings/members');

    // when Remove is chosen in their row, then cancelled
    await memberRow(page, rex.id).getByRole('link', { name: 'Remove rex' }).click();
    const question = page.getByRole('heading', { name: 'Remove rex?' });
    await question.waitFor();
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('remove-heading');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL((url) => url.search === '');

    // then nothing happened
    await expect(question.count()).resolves.toBe(0);
    expect((await membersByEmail()).has(rex.email)).toBe(true);

    // and the action itself insists on the confirmation
    const unconfirmed = await page.request.post('/admin/settings/members?/remove', {
      form: { userId: rex.id },
      headers: { origin: server.url, accept: 'application/json' },
    });
    expect(JSON.parse(await unconfirmed.text())).toMatchObject({ type: 'failure', status: 400 });
    expect((await membersByEmail()).has(rex.email)).toBe(true);

    // when Remove is chosen again and confirmed
    await memberRow(page, rex.id).getByRole('link', { name: 'Remove rex' }).click();
    await question.waitFor();
    await submit(page, page.getByRole('button', { name: 'Remove member' }));

    // then the page says so, and rex is gone from the list and from the organization
    await expect(page.getByRole('status').textContent()).resolves.toBe('rex was removed from the organization.');
    await expect(memberRow(page, rex.id).count()).resolves.toBe(0);
    expect((await membersByEmail()).has(rex.email)).toBe(false);
    const theirOrgs = await rex.api.get('/api/v1/orgs');
    expect(theirOrgs.body.map((o: { id: string }) => o.id)).not.toContain(tenant.id);
    await page.context().close();
  });

  test('Revoke ends a pending invitation: it leaves the list and its link stops working', async () => {
    // given a pending invitation
    const email = newEmail('ivan');
    const invited = await tenant.owner.api.post(`/v1/organizations/${tenant.id}/invitations`, {
      email,
      role: 'member',
    });
    expect(invited.status).toBe(201);
    const page = await signedInPage(browser, server.url, owner());
    await page.goto('/admin/settings/members');

    // when it is revoked
    await submit(page, page.getByRole('button', { name: `Revoke the invitation for ${email}` }));

    // then the page says so, it is no longer listed, and its link no longer works
    await expect(page.getByRole('status').textContent()).resolves.toBe(`The invitation for ${email} was revoked.`);
    await expect(page.getByTestId('invitation-row').filter({ hasText: email }).count()).resolves.toBe(0);
    const accepted = await client(server.url).post('/api/v1/invitations/accept', {
      token: invited.body.token,
      name: 'Ivan',
      password: PASSWORD,
    });
    expect(accepted.status).toBe(400);
    await page.context().close();
  });

  test('a member-role user cannot reach the page or use its actions', async () => {
    // given the tenant's member, signed in
    const page = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });

    // when they open the page, then access is denied
    const response = await page.goto('/admin/settings/members');
    expect(response?.status()).toBe(403);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');
    await expect(page.getByRole('navigation', { name: 'Administration' }).count()).resolves.toBe(0);

    // and posting the forms directly invites nobody and changes nothing
    const email = newEmail('sneaky');
    const invite = await page.request.post('/admin/settings/members?/invite', {
      form: { email, role: 'owner' },
      headers: { origin: server.url },
    });
    expect(invite.status()).toBe(403);
    const promote = await page.request.post('/admin/settings/members?/changeRole', {
      form: { userId: tenant.member.id, role: 'owner' },
      headers: { origin: server.url },
    });
    expect(promote.status()).toBe(403);
    const invitations = await tenant.owner.api.get(`/v1/organizations/${tenant.id}/invitations?limit=100`);
    expect(invitations.body.invitations.map((i: { email: string }) => i.email)).not.toContain(email);
    expect((await membersByEmail()).get(tenant.member.email)?.role).toBe('member');
    await page.context().close();
  });

  test('a signed-out visitor is sent to sign in and back', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/admin/settings/members');
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/admin/settings/members');
    await page.context().close();
  });
});
