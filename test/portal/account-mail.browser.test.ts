import { mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, PASSWORD, signIn, type Person } from '../helpers/fixtures.ts';
import { client, type Client } from '../helpers/http.ts';
import { waitFor } from '../helpers/wait.ts';
import { queueMail } from '../../schema/modules/mail/outbox.ts';

// The development mailbox (no SMTP_URL: mails stay readable by platform admins at /admin/settings/mail), the
// members page's invitation mail and resend, and the security page's address and password changes, in headless
// Chromium. The worker runs in the same process (role all) and files each mail in the mailbox.

const screenshots = new URL('../.tmp/', import.meta.url);
const HOSTILE_NAME = '<img src=x onerror=alert(1)>';

interface MailItem {
  id: string;
  kind: string;
  to: string;
  subject: string;
  text: string | null;
  html: string | null;
  status: string;
}

let server: TestServer;
let browser: Browser;
let platformAdmin: Client;
let organizationId: string;

beforeAll(async () => {
  server = await startTestServer({ role: 'all' });
  try {
    browser = await launchChromium();
    ({ api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password));
    const org = await platformAdmin.post('/v1/organizations', { name: 'Pied Piper' });
    expect(org.status).toBe(201);
    organizationId = org.body.id;
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

/** The mails to `to`, newest first, once `count` of them are in the mailbox (the worker has filed them). */
const mailboxOf = (to: string, count = 1): Promise<MailItem[]> =>
  waitFor(async () => {
    const reply = await platformAdmin.get(`/api/v1/mails?to=${encodeURIComponent(to)}`);
    expect(reply.status).toBe(200);
    const mails: MailItem[] = reply.body.mails;
    return mails.filter((m) => m.status === 'mailbox').length >= count ? mails : undefined;
  });

/** The link of path `path` in a mail's text body, as a path and query on the service. */
function linkIn(mail: MailItem, path: string): string {
  const link = mail.text
    ?.match(/https?:\/\/\S+/g)
    ?.map((u) => new URL(u))
    .find((u) => u.pathname === path);
  if (!link) throw new Error(`no ${path} link in the mail "${mail.subject}":\n${mail.text}`);
  expect(link.origin).toBe(new URL(server.url).origin);
  return link.pathname + link.search;
}

/**
 * Submits the form whose button is `button` and waits until the page shows the action's answer: its buttons are
 * disabled while a form is sent, and enabled again once the answer (and the reloaded data) is on the page.
 */
async function submit(page: Page, button: ReturnType<Page['getByRole']>): Promise<void> {
  const path = new URL(page.url()).pathname;
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    button.click(),
  ]);
  if (response.status() === 403) expect.fail(`POST ${path} answered 403: ${await response.text()}`);
  await page.waitForFunction(() => !document.querySelector('main button[disabled]'));
}

/** Whether the page fits the viewport's width (no sideways scrolling). */
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe('the development mailbox', () => {
  test('an invitation made on the members page is mailed, listed in the mailbox and readable there; a resend mails it again', async () => {
    // given the platform admin on the members page of the organization they act in
    const page = await signedInPage(browser, server.url, ADMIN);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto('/admin/settings/members');

    // when they invite a new address
    const email = newEmail('mailed');
    await page.getByLabel('Email', { exact: true }).fill(email);
    await submit(page, page.getByRole('button', { name: 'Create invitation' }));

    // then the page says it was mailed, and still shows the accept link
    await expect(page.getByRole('status').textContent()).resolves.toBe(`Invitation mailed to ${email}.`);
    const firstLink = await page.getByTestId('shown-accept-url').textContent();
    expect(firstLink).toContain('/invitations/accept?token=');

    // and the mail is filed in the mailbox, with a link of its own (the one shown proves no address)
    const [mail] = await mailboxOf(email);
    expect(mail).toMatchObject({ kind: 'invitation', subject: 'You are invited to Operator on Tessera' });
    const mailedLink = mail!.text!.match(/\S+\/invitations\/accept\?token=\S+/)![0];
    expect(mailedLink).not.toBe(firstLink);

    // when they open the mailbox from the settings navigation and filter it by the recipient
    const nav = page.getByRole('navigation', { name: 'Administration' });
    await nav.getByRole('list', { name: 'Settings' }).getByRole('link', { name: 'Mail' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/mail');
    await expect(page.title()).resolves.toBe('Mail · Tessera');
    await page.getByLabel('Recipient').fill(email);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('to') === email);

    // then the one mail to that address is listed with its kind and status
    const rows = page.getByTestId('mail-row');
    await expect(rows.count()).resolves.toBe(1);
    const row = (await rows.first().textContent())!;
    expect(row).toContain(email);
    expect(row).toContain('invitation');
    expect(row).toContain('mailbox');
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-mail.png', screenshots).pathname, fullPage: true });

    // when they open it
    await rows.first().getByRole('link', { name: 'You are invited to Operator on Tessera' }).click();
    await page.waitForURL((url) => url.pathname === `/admin/settings/mail/${mail!.id}`);

    // then the text body is shown as it is, and the HTML body in a sandboxed frame
    await expect(page.getByTestId('mail-to').textContent()).resolves.toBe(email);
    await expect(page.getByTestId('mail-text').textContent()).resolves.toContain(mailedLink);
    await expect(page.getByTestId('mail-html').getAttribute('sandbox')).resolves.toBe('');
    const frame = page.frameLocator('[data-testid="mail-html"]');
    await expect(frame.locator('body').textContent()).resolves.toContain('invited you to join Operator as a member');
    await expect(frame.getByRole('link', { name: 'Accept the invitation' }).getAttribute('href')).resolves.toBe(
      mailedLink,
    );
    await page.screenshot({ path: new URL('admin-mail-detail.png', screenshots).pathname, fullPage: true });

    // when they go back to the members page and resend the invitation
    await page.getByRole('link', { name: 'All mail' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/mail' && url.searchParams.get('to') === email);
    await page.goto('/admin/settings/members');
    await submit(page, page.getByRole('button', { name: `Resend the invitation for ${email}` }));

    // then the page says it was mailed again, with a new link shown, and another new one mailed
    await expect(page.getByRole('status').textContent()).resolves.toBe(`Invitation mailed again to ${email}.`);
    const secondLink = await page.getByTestId('shown-accept-url').textContent();
    expect(secondLink).not.toBe(firstLink);
    const [resent] = await mailboxOf(email, 2);
    expect(resent!.text).toContain('/invitations/accept?token=');
    expect(resent!.text).not.toContain(mailedLink);
    expect(resent!.text).not.toContain(secondLink);

    // and the first links, shown and mailed, no longer work
    for (const old of [firstLink!, mailedLink]) {
      const accepted = await client(server.url).post('/api/v1/invitations/accept', {
        token: new URL(old).searchParams.get('token'),
        name: 'Late',
        password: PASSWORD,
      });
      expect(accepted.status).toBe(400);
    }

    // when the invitation is revoked elsewhere, and this page, still showing it, resends it
    const invitationId = await page
      .getByTestId('invitation-row')
      .filter({ hasText: email })
      .getAttribute('data-invitation-id');
    const { body: orgs } = await platformAdmin.get('/api/v1/orgs');
    const operator = orgs.find((o: { name: string }) => o.name === 'Operator');
    const revoked = await platformAdmin.delete(`/v1/organizations/${operator.id}/invitations/${invitationId}`);
    expect(revoked.status).toBeLessThan(300);
    await submit(page, page.getByRole('button', { name: `Resend the invitation for ${email}` }));

    // then the page says why it was not sent, and nothing more was mailed
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Only a pending invitation can be resent');
    expect(await mailboxOf(email, 2)).toHaveLength(2);

    // when they mail themselves a password reset link from their row
    const me = await platformAdmin.get('/api/v1/users/me');
    await submit(page, page.getByRole('button', { name: `Send password reset link to ${me.body.name}` }));

    // then the page says so, and the mail is in the mailbox
    await expect(page.getByRole('status').textContent()).resolves.toBe(
      `A password reset link was mailed to ${ADMIN.email}.`,
    );
    await waitFor(async () =>
      (await mailboxOf(ADMIN.email)).some((m) => m.kind === 'password_reset') ? true : undefined,
    );
    expect(dialogs).toEqual([]);
    await page.context().close();
  });

  test('an organization named like markup arrives in the mail as text: nothing of it runs or loads', async () => {
    // given an organization with a hostile name, and an invitation to it, both made through the REST API
    const org = await platformAdmin.post('/v1/organizations', { name: HOSTILE_NAME });
    expect(org.status).toBe(201);
    const email = newEmail('hostile');
    const invited = await platformAdmin.post(`/v1/organizations/${org.body.id}/invitations`, { email, role: 'member' });
    expect(invited.status).toBe(201);
    const [mail] = await mailboxOf(email);
    expect(mail!.html).not.toContain(HOSTILE_NAME);

    // when the platform admin opens the mail in the mailbox, watching for any dialog
    const page = await signedInPage(browser, server.url, ADMIN);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`/admin/settings/mail?to=${encodeURIComponent(email)}`);
    await expect(page.getByTestId('mail-row').first().textContent()).resolves.toContain(
      `You are invited to ${HOSTILE_NAME} on Tessera`,
    );
    await page.getByTestId('mail-row').first().getByRole('link').click();
    await page.waitForURL((url) => url.pathname === `/admin/settings/mail/${mail!.id}`);

    // then the name is shown as text in the subject, the text body and the HTML body, and no element was made of it
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
      `You are invited to ${HOSTILE_NAME} on Tessera`,
    );
    await expect(page.getByTestId('mail-text').textContent()).resolves.toContain(HOSTILE_NAME);
    const frame = page.frameLocator('[data-testid="mail-html"]');
    await expect(frame.locator('body').textContent()).resolves.toContain(`join ${HOSTILE_NAME} as a member`);
    await expect(frame.locator('img').count()).resolves.toBe(0);
    await expect(page.locator('main img').count()).resolves.toBe(0);
    expect(dialogs).toEqual([]);
    await page.context().close();
  });

  test('the mail log pages 50 mails at a time, keeping the recipient filter', async () => {
    // given 51 mails to one address, queued through the outbox as the services queue them (an organization may
    // mail one address only 10 invitations an hour, and a person only 5 reset or verification links)
    const email = newEmail('paged');
    for (let i = 0; i < 51; i++) {
      await queueMail(
        server.base.db,
        'password_changed',
        email,
        { name: `Paged ${i}`, at: new Date(), forgotUrl: `${server.url}/forgot-password` },
        new Date(),
      );
    }
    await waitFor(async () => {
      const reply = await platformAdmin.get(`/api/v1/mails?to=${encodeURIComponent(email)}&limit=100`);
      return reply.body.mails.filter((m: MailItem) => m.status === 'mailbox').length === 51 ? true : undefined;
    }, 30_000);

    // when the platform admin lists the mail to that address
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/settings/mail?to=${encodeURIComponent(email)}`);

    // then the newest 50 are shown, with a link to the older ones that keeps the filter
    const rows = page.getByTestId('mail-row');
    await expect(rows.count()).resolves.toBe(50);
    const pager = page.getByRole('navigation', { name: 'Pages of the mail log' });
    await expect(pager.getByRole('link', { name: 'Newest mail' }).count()).resolves.toBe(0);
    await pager.getByRole('link', { name: 'Older mail' }).click();
    await page.waitForURL((url) => url.searchParams.has('cursor') && url.searchParams.get('to') === email);
    await expect(rows.count()).resolves.toBe(1);
    await expect(pager.getByRole('link', { name: 'Older mail' }).count()).resolves.toBe(0);

    // and the way back leads to the newest, still filtered
    await pager.getByRole('link', { name: 'Newest mail' }).click();
    await page.waitForURL((url) => !url.searchParams.has('cursor') && url.searchParams.get('to') === email);
    await expect(rows.count()).resolves.toBe(50);
    await expect(page.getByLabel('Recipient').inputValue()).resolves.toBe(email);
    await page.context().close();
  });

  test('members, and owners and admins who are not platform admins, cannot open the mailbox', async () => {
    // given an owner of an organization, who is no platform admin
    const owner = await addPerson(
      server.url,
      platformAdmin,
      organizationId,
      'owner',
      `owner-${randomBytes(2).toString('hex')}`,
    );
    const page = await signedInPage(browser, server.url, { email: owner.email, password: PASSWORD });

    // then the settings navigation has no Mail link, and the page itself is refused
    await page.goto('/admin/settings/members');
    const settings = page.getByRole('navigation', { name: 'Administration' }).getByRole('list', { name: 'Settings' });
    await expect(settings.getByRole('link', { name: 'Mail' }).count()).resolves.toBe(0);
    const response = await page.goto('/admin/settings/mail');
    expect(response?.status()).toBe(403);
    await expect(page.locator('main').textContent()).resolves.toContain(
      'Only platform administrators read the mail log.',
    );
    await page.context().close();
  });
});

describe('the security page', () => {
  /** A member of the organization, signed in on the security page. */
  async function onSecurityPage(label: string): Promise<{ person: Person; page: Page }> {
    const person = await addPerson(
      server.url,
      platformAdmin,
      organizationId,
      'member',
      `${label}-${randomBytes(2).toString('hex')}`,
    );
    const page = await signedInPage(browser, server.url, { email: person.email, password: PASSWORD });
    await page.getByRole('banner').getByRole('link', { name: 'Security' }).click();
    await page.waitForURL((url) => url.pathname === '/portal/security');
    await expect(page.title()).resolves.toBe('Security · Tessera');
    return { person, page };
  }

  test('a new address is mailed a link and takes effect once it is confirmed; an older link is refused', async () => {
    // given a member on the security page, whose address is verified (the account came from an invitation)
    const { person, page } = await onSecurityPage('mover');
    await expect(page.getByTestId('email').textContent()).resolves.toBe(person.email);
    await expect(page.getByTestId('email-status').textContent()).resolves.toBe('Verified');
    await expect(page.getByRole('button', { name: 'Send verification link' }).count()).resolves.toBe(0);
    const form = page.getByRole('region', { name: 'Change e-mail address' });
    const newAddress = newEmail('moved');

    // when they ask for a new address with a wrong current password
    await form.getByLabel('New e-mail address').fill(newAddress);
    await form.getByLabel('Current password').fill('not my password at all');
    await submit(page, form.getByRole('button', { name: 'Change e-mail address' }));

    // then the current password is marked, the address is kept, and nothing is pending
    await expect(page.locator('#email-current-password-error').textContent()).resolves.toBe(
      'Current password is wrong',
    );
    await expect(form.getByLabel('New e-mail address').inputValue()).resolves.toBe(newAddress);
    await expect(page.getByTestId('pending-email').count()).resolves.toBe(0);

    // when they give the right one
    await form.getByLabel('Current password').fill(PASSWORD);
    await submit(page, form.getByRole('button', { name: 'Change e-mail address' }));

    // then the page says a link was mailed there, and shows the address as waiting; the current one is unchanged
    await expect(page.getByRole('status').textContent()).resolves.toBe(
      `We mailed a link to ${newAddress}; your address changes once you use it.`,
    );
    await expect(page.getByTestId('pending-email').textContent()).resolves.toBe(newAddress);
    await expect(page.getByTestId('email').textContent()).resolves.toBe(person.email);
    await page.setViewportSize({ width: 375, height: 800 });
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('security-375.png', screenshots).pathname, fullPage: true });
    await expect(fitsWidth(page)).resolves.toBe(true);

    // when they ask for the link again
    await submit(page, page.getByRole('button', { name: 'Send verification link' }));
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      `We mailed a verification link to ${newAddress}.`,
    );

    // then two links were mailed to the new address; the older one no longer works
    const [newest, older] = await mailboxOf(newAddress, 2);
    expect(newest!.kind).toBe('email_change');
    const verify = await browser.newContext({ baseURL: server.url });
    const link = await verify.newPage();
    await link.goto(linkIn(older!, '/verify-email'));
    await submit(link, link.getByRole('button', { name: 'Confirm this address' }));
    await expect(link.getByRole('alert').textContent()).resolves.toContain('This verification link is not valid');

    // when the newest link is opened: nothing happens until the button is pressed
    await link.goto(linkIn(newest!, '/verify-email'));
    await expect(link.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Confirm your e-mail address');
    await page.reload();
    await expect(page.getByTestId('email').textContent()).resolves.toBe(person.email);
    await submit(link, link.getByRole('button', { name: 'Confirm this address' }));

    // then the page confirms the new address
    await expect(link.getByRole('status').textContent()).resolves.toBe(`Your address ${newAddress} is confirmed.`);
    await verify.close();

    // and the security page shows it as the account's address, verified, with nothing pending
    await page.reload();
    await expect(page.getByTestId('email').textContent()).resolves.toBe(newAddress);
    await expect(page.getByTestId('email-status').textContent()).resolves.toBe('Verified');
    await expect(page.getByTestId('pending-email').count()).resolves.toBe(0);

    // and the old address was told
    const [told] = await mailboxOf(person.email);
    expect(told!.kind).toBe('email_changed');
    await page.context().close();
  });

  test('a pending change can be withdrawn: the address stays, and the link mailed for it stops working', async () => {
    // given a member on the security page
    const { person, page } = await onSecurityPage('hesitant');
    const form = page.getByRole('region', { name: 'Change e-mail address' });

    // when they ask for an address another account uses, the field says so and nothing is pending
    await form.getByLabel('New e-mail address').fill(ADMIN.email);
    await form.getByLabel('Current password').fill(PASSWORD);
    await submit(page, form.getByRole('button', { name: 'Change e-mail address' }));
    await expect(page.locator('#new-email-error').textContent()).resolves.toBe('Email is used by another account');
    await expect(page.getByTestId('pending-email').count()).resolves.toBe(0);

    // when they ask for a new address
    const newAddress = newEmail('maybe');
    await form.getByLabel('New e-mail address').fill(newAddress);
    await form.getByLabel('Current password').fill(PASSWORD);
    await submit(page, form.getByRole('button', { name: 'Change e-mail address' }));
    await expect(page.getByTestId('pending-email').textContent()).resolves.toBe(newAddress);

    // when they keep their current address
    await submit(page, page.getByRole('button', { name: 'Keep my current address' }));

    // then the page says the change was withdrawn, and nothing is pending
    await expect(page.getByRole('status').textContent()).resolves.toBe(
      `The change to ${newAddress} was withdrawn: the link mailed there no longer works.`,
    );
    await expect(page.getByTestId('pending-email').count()).resolves.toBe(0);
    await expect(page.getByTestId('email').textContent()).resolves.toBe(person.email);

    // and the link mailed to the new address is refused
    const [mail] = await mailboxOf(newAddress);
    await page.goto(linkIn(mail!, '/verify-email'));
    await submit(page, page.getByRole('button', { name: 'Confirm this address' }));
    await expect(page.getByRole('alert').textContent()).resolves.toContain('This verification link is not valid');
    await page.context().close();
  });

  test('a new password keeps this browser signed in and ends the other sessions', async () => {
    // given a member on the security page, and another session of theirs
    const { person, page } = await onSecurityPage('rotator');
    const other = client(server.url, { token: person.token });
    await expect(other.get('/api/v1/users/me').then((r) => r.status)).resolves.toBe(200);
    const cookieBefore = (await page.context().cookies()).find((c) => c.name === 'tessera_session')?.value;
    const form = page.getByRole('region', { name: 'Change password' });
    const newPassword = 'another long enough password';

    // when the repeat does not match
    await form.getByLabel('Current password').fill(PASSWORD);
    await form.getByLabel('New password', { exact: true }).fill(newPassword);
    await form.getByLabel('Repeat new password').fill('something else entirely');
    await submit(page, form.getByRole('button', { name: 'Change password' }));

    // then nothing changed, and the page says why
    await expect(page.locator('#new-password-repeat-error').textContent()).resolves.toBe(
      'The repeated password does not match the new password',
    );
    await expect(other.get('/api/v1/users/me').then((r) => r.status)).resolves.toBe(200);

    // when they type it right
    await form.getByLabel('Current password').fill(PASSWORD);
    await form.getByLabel('New password', { exact: true }).fill(newPassword);
    await form.getByLabel('Repeat new password').fill(newPassword);
    await submit(page, form.getByRole('button', { name: 'Change password' }));

    // then the page says so, and this browser carries on with a new session
    await expect(page.getByRole('status').textContent()).resolves.toContain('Your password was changed.');
    const cookieAfter = (await page.context().cookies()).find((c) => c.name === 'tessera_session')?.value;
    expect(cookieAfter).toBeDefined();
    expect(cookieAfter).not.toBe(cookieBefore);
    await page.goto('/portal/dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(person.email);

    // and the other session has ended, the old password no longer signs in and the new one does
    await expect(other.get('/api/v1/users/me').then((r) => r.status)).resolves.toBe(401);
    await expect(signIn(server.url, person.email, PASSWORD)).rejects.toThrow(/401/);
    await signIn(server.url, person.email, newPassword);
    await page.context().close();
  });
});
