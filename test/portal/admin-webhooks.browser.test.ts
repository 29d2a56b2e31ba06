import { createHmac } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { BROWSER_WAIT_MS, continueWithEmail, launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { MINUTE, movableClock } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { sweepDueDeliveries } from '../../schema/modules/webhooks/delivery.service.ts';

// /admin/settings/webhooks and /admin/settings/webhooks/{id}: an organization's admins manage webhooks and read their
// delivery history in headless Chromium. The service runs its worker and delivers to a real HTTPS receiver (a CA
// made here, trusted through WEBHOOK_CA_FILE); the REST API and the receiver confirm what the pages did.

const screenshots = new URL('../.tmp/', import.meta.url);
const clock = movableClock();

let ca: TestCa;
let receiver: HttpsReceiver;
let server: TestServer;
let browser: Browser;
/** The platform admin's REST client: ADMIN owns the operator organization, its current one. */
let admin: Client;
let tenant: Tenant;

beforeAll(async () => {
  ca = makeTestCa();
  // Paths under /fail answer 500 with a long body; the rest 200.
  receiver = await startHttpsReceiver(ca, (req, res) => {
    const failing = req.path.startsWith('/fail');
    res
      .writeHead(failing ? 500 : 200, { 'content-type': 'text/plain', 'x-receiver': 'test' })
      .end(failing ? 'down '.repeat(2000) : 'thanks');
  });
  server = await startTestServer({
    role: 'all',
    clock,
    env: { WEBHOOK_CA_FILE: ca.caFile },
    // receiver.test (a name of the receiver's certificate) is the receiver.
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  try {
    browser = await launchChromium();
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    tenant = await createTenant(server.url, admin);
  } catch (error) {
    await browser?.close();
    await server.stop();
    await receiver.close();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await receiver?.close();
  ca?.remove();
});

/**
 * Submits with `button` and waits until the page shows the action's answer: its buttons are disabled while a form
 * is sent, and enabled again once the answer (and the reloaded data) is on the page.
 */
async function submit(page: Page, button: Locator): Promise<void> {
  const path = new URL(page.url()).pathname;
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    button.click(),
  ]);
  await page.waitForFunction(() => !document.querySelector('main button[disabled]'));
}

const row = (page: Page, id: string) => page.locator(`[data-testid="webhook-row"][data-webhook-id="${id}"]`);
const delivery = (page: Page, id: string) => page.locator(`[data-testid="delivery"][data-delivery-id="${id}"]`);
const picker = (page: Page, form: string) => page.locator(`section[aria-labelledby="${form}-heading"] fieldset.picker`);

/** A webhook made through REST, to the receiver at `path`. */
async function hook(as: Client, path: string, events = ['user.created']) {
  const created = await as.post('/api/v1/webhooks', {
    url: receiver.url('receiver.test', path),
    events,
    description: `hook ${path}`,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as { id: string; url: string; secret: string };
}

const restHook = async (id: string) => (await admin.get(`/api/v1/webhooks/${id}`)).body;
/** The secret the service signs with, as its owner (the platform admin) reveals it over REST. */
const secretOf = async (id: string, as: Client = admin) => {
  const reply = await as.post(`/api/v1/webhooks/${id}/reveal-secret`);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.secret as string;
};

describe('admin: webhooks', () => {
  test('creating a webhook with events picked from the catalog shows its secret once, and it signs deliveries', async () => {
    // given the operator organization's owner, who opens Webhooks from the navigation
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/dashboard');
    const nav = page.getByRole('navigation', { name: 'Administration' });
    await nav.getByRole('list', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/webhooks');
    await expect(page.title()).resolves.toBe('Webhooks · Tessera');
    await expect(nav.getByRole('link', { name: 'Webhooks' }).getAttribute('aria-current')).resolves.toBe('page');

    // then the picker offers every kind of the catalog, under the catalog's groups, named for what they are about
    const catalog: { kind: string; group: string; lists: string[] }[] = (await admin.get('/api/v1/event-types')).body
      .event_types;
    expect(catalog.length).toBeGreaterThan(30);
    const create = picker(page, 'create');
    const groups = [...new Set(catalog.map((t) => t.group))];
    const grouped = groups.flatMap((group) => catalog.filter((t) => t.group === group).map((t) => t.kind));
    const boxes = create.getByRole('checkbox');
    await expect(boxes.evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value))).resolves.toEqual(grouped);
    await expect(create.locator('fieldset.group > legend').allTextContents()).resolves.toEqual(groups);
    expect(groups).toEqual([
      'Users',
      'Sessions',
      'Organizations',
      'Members & invitations',
      'OAuth clients & tokens',
      'Two-factor',
      'API keys',
      'Subscriptions',
    ]);
    const memberGroup = create.getByRole('group', { name: 'Members & invitations' });
    // (an operation sent under two names says so, in words rather than the interface's list letters)
    await expect(
      memberGroup.getByText('organization.member.added', { exact: true }).locator('..').textContent(),
    ).resolves.toContain('Also sent as member.added, with camelCase data.');
    await expect(create.textContent()).resolves.not.toMatch(/List [AB]/);

    // when they create a webhook for two kinds
    const url = receiver.url('receiver.test', '/created');
    await page.getByLabel('URL', { exact: true }).fill(url);
    await page.getByLabel('Description (optional)').fill('CRM sync');
    await memberGroup.getByRole('checkbox', { name: /^member\.added/ }).check();
    await memberGroup.getByRole('checkbox', { name: /^organization\.member\.added/ }).check();
    await submit(page, page.getByRole('button', { name: 'Create webhook' }));

    // then the signing secret is shown once, with a copy button and the warning, and the focus is on it
    const box = page.getByTestId('webhook-secret-box');
    await box.waitFor();
    await expect(box.textContent()).resolves.toContain(
      'Save the signing secret now: this page will not show it again. Later, only an owner can reveal it, and the reveal is recorded in the audit log.',
    );
    const secret = (await box.getByTestId('shown-webhook-secret').textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await expect(box.getByRole('button', { name: 'Copy signing secret' }).count()).resolves.toBe(1);
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('secret-heading');
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-webhooks.png', screenshots).pathname, fullPage: true });

    // and the service has the webhook as it was entered, with that secret
    const listed = (await admin.get('/api/v1/webhooks')).body.webhooks.find((w: { url: string }) => w.url === url);
    expect(listed).toMatchObject({ description: 'CRM sync', isActive: true, failing: false });
    expect([...listed.events].sort()).toEqual(['member.added', 'organization.member.added']);
    expect((await restHook(listed.id)).secret).toBeUndefined();
    expect(await secretOf(listed.id)).toBe(secret);

    // and the list shows it, while a reload shows the secret no more
    await page.reload();
    await expect(page.getByTestId('webhook-secret-box').count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(secret);
    const listedRow = row(page, listed.id);
    await expect(listedRow.getByTestId('webhook-url').textContent()).resolves.toBe(url);
    await expect(listedRow.getByTestId('webhook-description').textContent()).resolves.toBe('CRM sync');
    await expect(listedRow.getByTestId('webhook-events').locator('li').allTextContents()).resolves.toEqual(
      listed.events,
    );
    await expect(listedRow.getByTestId('webhook-status').textContent()).resolves.toContain('Active');

    // and an event of the organization reaches the receiver signed with the secret shown
    await addPerson(server.url, admin, listed.organizationId, 'member', 'newcomer');
    const got = await waitFor(() => receiver.received.find((r) => r.path === '/created'));
    expect(got.headers['x-service-signature']).toBe(
      `sha256=${createHmac('sha256', secret).update(got.body).digest('hex')}`,
    );
    await page.context().close();
  });

  test('a plain-http URL and no events are refused under their fields, and what was typed stays', async () => {
    // given the page
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/webhooks');
    const before = (await admin.get('/api/v1/webhooks')).body.webhooks.length;

    // when an http URL without events is submitted
    await page.getByLabel('URL', { exact: true }).fill('http://receiver.test/plain');
    await page.getByLabel('Description (optional)').fill('kept');
    await submit(page, page.getByRole('button', { name: 'Create webhook' }));

    // then the form says what is wrong, field by field, and keeps the values
    await expect(page.getByRole('alert').first().textContent()).resolves.toContain('The webhook was not created');
    const problems = await page.locator('.field-error').allTextContents();
    expect(problems.join(' ')).toMatch(/Events/);
    await expect(page.getByLabel('Description (optional)').inputValue()).resolves.toBe('kept');
    await expect(page.getByLabel('URL', { exact: true }).inputValue()).resolves.toBe('http://receiver.test/plain');

    // when events are picked but the URL is still http
    await picker(page, 'create')
      .getByRole('checkbox', { name: /^user\.created/ })
      .check();
    await submit(page, page.getByRole('button', { name: 'Create webhook' }));

    // then the URL is refused, tied to its field, and the pick stays
    await expect.poll(() => page.getByLabel('URL', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await expect(page.locator('#create-url-error').textContent()).resolves.toMatch(/^URL .*https/i);
    await expect(
      picker(page, 'create')
        .getByRole('checkbox', { name: /^user\.created/ })
        .isChecked(),
    ).resolves.toBe(true);
    expect((await admin.get('/api/v1/webhooks')).body.webhooks.length).toBe(before);
    await page.context().close();
  });

  test('edit changes the URL, the events and the description', async () => {
    // given a webhook
    const { id } = await hook(admin, '/before', ['user.created', 'user.updated']);
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/webhooks');

    // when Edit is chosen in its row, the form shows what is stored
    await row(page, id).getByRole('link', { name: /^Edit/ }).click();
    await page.getByRole('heading', { name: 'Edit webhook' }).waitFor();
    const edit = picker(page, 'edit');
    await expect(page.locator('#edit-url').inputValue()).resolves.toBe(receiver.url('receiver.test', '/before'));
    await expect(
      edit.getByRole('checkbox', { checked: true }).evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value)),
    ).resolves.toEqual(['user.created', 'user.updated']);

    // and the changes are saved
    await page.locator('#edit-url').fill(receiver.url('receiver.test', '/after'));
    await page.locator('#edit-description').fill('edited');
    await edit.getByRole('checkbox', { name: /^user\.updated/ }).uncheck();
    await edit.getByRole('checkbox', { name: /^subscription\.created/ }).check();
    await submit(page, page.getByRole('button', { name: 'Save changes' }));

    // then the page says so and closes the form, and the service has the changes
    await expect(page.getByRole('status').textContent()).resolves.toContain('saved');
    await expect(page.getByRole('heading', { name: 'Edit webhook' }).count()).resolves.toBe(0);
    expect(await restHook(id)).toMatchObject({
      url: receiver.url('receiver.test', '/after'),
      description: 'edited',
      events: ['user.created', 'subscription.created'],
    });
    await expect(row(page, id).getByTestId('webhook-events').locator('li').allTextContents()).resolves.toEqual([
      'user.created',
      'subscription.created',
    ]);

    // when every event is unticked, the change is refused and the form stays open with the message
    await page.goto(`/admin/settings/webhooks?edit=${id}`);
    const ticked = picker(page, 'edit').getByRole('checkbox', { checked: true });
    while ((await ticked.count()) > 0) await ticked.first().uncheck();
    await submit(page, page.getByRole('button', { name: 'Save changes' }));
    await expect(page.locator('#edit-events-error').textContent()).resolves.toContain('at least one');
    expect((await restHook(id)).events).toEqual(['user.created', 'subscription.created']);
    await page.context().close();
  });

  test('deactivate stops deliveries and activate resumes them', async () => {
    // given an active webhook for api_key.created
    const { id } = await hook(admin, '/toggle', ['api_key.created']);
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/webhooks');

    // when it is deactivated
    await submit(page, row(page, id).getByRole('button', { name: /^Deactivate/ }));

    // then it is listed as inactive, and the service has it so
    await expect(page.getByRole('status').textContent()).resolves.toContain('is inactive');
    await expect(row(page, id).getByTestId('webhook-status').textContent()).resolves.toContain('Inactive');
    expect((await restHook(id)).isActive).toBe(false);

    // when it is activated again, then it is active, and the next event reaches the receiver
    await submit(page, row(page, id).getByRole('button', { name: /^Activate/ }));
    await expect(page.getByRole('status').textContent()).resolves.toContain('is active again');
    await expect(row(page, id).getByTestId('webhook-status').textContent()).resolves.toMatch(/^\s*Active\s*$/);
    expect((await restHook(id)).isActive).toBe(true);
    expect((await admin.post('/api/v1/api-keys', { name: 'toggled', role: 'member' })).status).toBe(201);
    await waitFor(() => receiver.received.find((r) => r.path === '/toggle' && r.body.includes('"toggled"')));
    await page.context().close();
  });

  test('rotating the secret asks first, shows the new secret once, and the new one signs from then on', async () => {
    // given a webhook and its secret
    const { id, secret: old } = await hook(admin, '/rotated');
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/webhooks');

    // when Rotate secret is chosen, then cancelled, nothing changes
    await row(page, id)
      .getByRole('link', { name: /^Rotate secret/ })
      .click();
    const question = page.getByRole('heading', { name: 'Rotate the signing secret?' });
    await question.waitFor();
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('rotate-heading');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL((u) => u.search === '');
    expect(await secretOf(id)).toBe(old);

    // and the action insists on the confirmation
    const unconfirmed = await page.request.post('/admin/settings/webhooks?/rotate', {
      form: { id },
      headers: { origin: server.url, accept: 'application/json' },
    });
    expect(JSON.parse(await unconfirmed.text())).toMatchObject({ type: 'failure', status: 400 });
    expect(await secretOf(id)).toBe(old);

    // when it is confirmed
    await row(page, id)
      .getByRole('link', { name: /^Rotate secret/ })
      .click();
    await question.waitFor();
    await submit(page, page.getByRole('button', { name: 'Rotate secret' }));

    // then the new secret is shown once, and it is the one the service signs with
    const shown = (await page.getByTestId('webhook-secret-box').getByTestId('shown-webhook-secret').textContent())!;
    expect(shown).toMatch(/^whsec_/);
    expect(shown).not.toBe(old);
    await expect(question.count()).resolves.toBe(0);
    expect(await secretOf(id)).toBe(shown);
    await page.reload();
    expect(await page.content()).not.toContain(shown);
    await page.context().close();
  });

  test('a test event of the chosen kind appears in the history with its status once the worker delivered it', async () => {
    // given a webhook and its secret
    const { id, secret } = await hook(admin, '/tested', ['user.created']);
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/webhooks');

    // when a test subscription.created event is sent from its row
    await row(page, id)
      .getByRole('link', { name: /^Send test/ })
      .click();
    await page.getByRole('heading', { name: 'Send a test event' }).waitFor();
    await expect(page.getByLabel('Event', { exact: true }).inputValue()).resolves.toBe('user.created');
    await page.getByLabel('Event', { exact: true }).selectOption('subscription.created');
    await submit(page, page.getByRole('button', { name: 'Send test event' }));
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      'A test subscription.created event is on its way',
    );

    // then the receiver gets it, signed
    const got = await waitFor(() => receiver.received.find((r) => r.path === '/tested'));
    expect(got.headers['x-service-event']).toBe('subscription.created');
    expect(got.headers['x-service-signature']).toBe(
      `sha256=${createHmac('sha256', secret).update(got.body).digest('hex')}`,
    );

    // and the history shows the delivery as delivered, with status code, duration and attempts
    await page.getByRole('link', { name: 'See its delivery' }).click();
    await page.waitForURL((u) => u.pathname === `/admin/settings/webhooks/${id}`);
    await expect(page.title()).resolves.toBe('Deliveries · Webhooks · Tessera');
    const entry = page.locator('[data-testid="delivery"]').first();
    await expect
      .poll(
        async () => {
          await page.reload();
          return entry.getAttribute('data-status');
        },
        { timeout: 15_000 },
      )
      .toBe('delivered');
    await expect(page.locator('[data-testid="delivery"]').count()).resolves.toBe(1);
    await expect(entry.getByTestId('delivery-event').textContent()).resolves.toBe('subscription.created');
    await expect(entry.getByTestId('delivery-status').textContent()).resolves.toContain('Delivered');
    await expect(entry.getByTestId('delivery-code').textContent()).resolves.toBe('200');
    await expect(entry.getByTestId('delivery-duration').textContent()).resolves.toMatch(/^\d+ ms$/);
    await expect(entry.getByTestId('delivery-attempts').textContent()).resolves.toBe('1');
    await expect(entry.getByRole('button', { name: 'Retry now' }).count()).resolves.toBe(0);

    // and its request and response can be opened: the exact body sent, the signed headers, the receiver's answer
    const details = entry.getByTestId('delivery-details');
    await expect(details.getByTestId('request-body').isVisible()).resolves.toBe(false);
    await details.locator('summary').click();
    await expect(details.getByTestId('request-body').textContent()).resolves.toBe(got.body);
    expect(JSON.parse(got.body).data.test).toBe(true);
    const headers = (await details.getByTestId('request-headers').textContent())!;
    expect(headers).toContain(`x-service-signature: ${String(got.headers['x-service-signature'])}`);
    expect(headers).toContain('x-service-event: subscription.created');
    await expect(details.getByTestId('response-headers').textContent()).resolves.toContain('x-receiver: test');
    await expect(details.getByTestId('response-body').textContent()).resolves.toBe('thanks');
    await page.screenshot({ path: new URL('admin-webhook-deliveries.png', screenshots).pathname, fullPage: true });
    await page.context().close();
  });

  test('a failed delivery can be retried from the history, and the retry shows there', async () => {
    // given a webhook whose receiver fails, and a test event whose five scheduled attempts all fail
    const { id } = await hook(admin, '/fail/retry', ['user.created']);
    const sent = await admin.post(`/api/v1/webhooks/${id}/test`, { event: 'user.created' });
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    const deliveryOf = async () => (await admin.get(`/api/v1/webhooks/${id}/deliveries`)).body.deliveries[0];
    const attempts = (n: number) =>
      waitFor(async () => {
        const d = await deliveryOf();
        return d && d.attemptCount >= n ? d : undefined;
      });
    await attempts(1);
    for (const [n, minutes] of [
      [2, 1],
      [3, 4],
      [4, 10],
      [5, 45],
    ] as const) {
      clock.advance(minutes * MINUTE);
      await sweepDueDeliveries({ db: server.base.db, clock });
      await attempts(n);
    }
    await waitFor(async () => ((await deliveryOf()).status === 'failed' ? true : undefined));

    // when the history is opened
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/settings/webhooks/${id}`);

    // then the delivery is failed after five attempts with the receiver's 500, and the webhook is failing
    const entry = page.locator('[data-testid="delivery"]').first();
    await expect(entry.getAttribute('data-status')).resolves.toBe('failed');
    await expect(entry.getByTestId('delivery-code').textContent()).resolves.toBe('500');
    await expect(entry.getByTestId('delivery-attempts').textContent()).resolves.toBe('5');
    await expect(page.getByTestId('webhook-status').textContent()).resolves.toContain('Failing');
    await entry.getByTestId('delivery-details').locator('summary').click();
    await expect(entry.getByTestId('attempt').count()).resolves.toBe(5);
    // the answer is kept truncated
    await expect(entry.getByTestId('response-body').first().textContent()).resolves.toHaveLength(4096);

    // when the receiver is fixed (moved to an answering path) and Retry now is pressed
    expect(
      (await admin.patch(`/api/v1/webhooks/${id}`, { url: receiver.url('receiver.test', '/retry-fixed') })).status,
    ).toBe(200);
    await submit(page, entry.getByRole('button', { name: 'Retry now' }));
    await expect(page.getByRole('status').textContent()).resolves.toContain('is being sent again');

    // then one more attempt reaches the receiver, with the same body, and the history shows it delivered, failing cleared
    const fixed = await waitFor(() => receiver.received.find((r) => r.path === '/retry-fixed'));
    expect(fixed.body).toBe(receiver.received.find((r) => r.path === '/fail/retry')!.body);
    await expect
      .poll(
        async () => {
          await page.reload();
          return entry.getAttribute('data-status');
        },
        { timeout: 15_000 },
      )
      .toBe('delivered');
    await expect(entry.getByTestId('delivery-attempts').textContent()).resolves.toBe('6');
    await expect(entry.getByTestId('delivery-code').textContent()).resolves.toBe('200');
    await expect(entry.getByRole('button', { name: 'Retry now' }).count()).resolves.toBe(0);
    await expect(page.getByTestId('webhook-status').textContent()).resolves.not.toContain('Failing');
    await page.context().close();
  });

  test('Retry now sends a delivery whose first attempt failed at once, while its next attempts are still scheduled', async () => {
    // given a webhook whose receiver fails, and a test event whose first attempt failed, the next one scheduled
    const { id } = await hook(admin, '/fail/now', ['user.created']);
    const sent = await admin.post(`/api/v1/webhooks/${id}/test`, { event: 'user.created' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const first = await waitFor(async () => {
      const [d] = (await admin.get(`/api/v1/webhooks/${id}/deliveries`)).body.deliveries;
      return d?.attemptCount === 1 ? d : undefined;
    });
    expect(first).toMatchObject({ status: 'pending', nextAttemptAt: expect.any(String) });

    // when the history is opened
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/settings/webhooks/${id}`);

    // then the pending delivery shows its next attempt and offers Retry now
    const entry = delivery(page, sent.body.id);
    await expect(entry.getAttribute('data-status')).resolves.toBe('pending');
    await expect(entry.getByTestId('delivery-status').textContent()).resolves.toContain('next');
    await expect(entry.getByTestId('delivery-attempts').textContent()).resolves.toBe('1');

    // when the receiver is fixed and Retry now is pressed
    expect(
      (await admin.patch(`/api/v1/webhooks/${id}`, { url: receiver.url('receiver.test', '/now-fixed') })).status,
    ).toBe(200);
    await submit(page, entry.getByRole('button', { name: 'Retry now' }));
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      'The user.created delivery is being sent again',
    );

    // then the receiver gets it at once (not a minute later), and the history shows it delivered by a manual attempt
    const fixed = await waitFor(() => receiver.received.find((r) => r.path === '/now-fixed'));
    expect(fixed.headers['x-service-delivery']).toBe(sent.body.id);
    await expect
      .poll(
        async () => {
          await page.reload();
          return entry.getAttribute('data-status');
        },
        { timeout: 15_000 },
      )
      .toBe('delivered');
    await expect(entry.getByTestId('delivery-attempts').textContent()).resolves.toBe('2');
    await expect(entry.getByTestId('delivery-code').textContent()).resolves.toBe('200');
    await expect(entry.getByRole('button', { name: 'Retry now' }).count()).resolves.toBe(0);
    await entry.getByTestId('delivery-details').locator('summary').click();
    const headings = (await entry.locator('[data-testid="attempt"] h3').allTextContents()).map((t) =>
      t.replace(/\s+/g, ' ').trim(),
    );
    expect(headings).toEqual([
      expect.stringMatching(/^Attempt 1 · .+ · 500 · \d+ ms$/),
      expect.stringMatching(/^Attempt 2 \(Retry now\) · .+ · 200 · \d+ ms$/),
    ]);
    expect(receiver.received.filter((r) => r.path === '/fail/now')).toHaveLength(1);
    await page.context().close();
  });

  test('delete asks first, then the webhook is gone', async () => {
    // given a webhook
    const { id } = await hook(admin, '/deleted');
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/webhooks');

    // when Delete is chosen and confirmed
    await row(page, id)
      .getByRole('link', { name: /^Delete/ })
      .click();
    await page.getByRole('heading', { name: 'Delete this webhook?' }).waitFor();
    await submit(page, page.getByRole('button', { name: 'Delete webhook' }));

    // then the page says so, the row is gone, and the service no longer has it
    await expect(page.getByRole('status').textContent()).resolves.toContain('was deleted');
    await expect(row(page, id).count()).resolves.toBe(0);
    await expect(page.getByRole('heading', { name: 'Delete this webhook?' }).count()).resolves.toBe(0);
    expect((await admin.get(`/api/v1/webhooks/${id}`)).status).toBe(404);

    // and its history is not found
    expect((await page.goto(`/admin/settings/webhooks/${id}`))?.status()).toBe(404);
    await page.context().close();
  });

  test('without JavaScript, create, deactivate and delete still work as plain form posts', async () => {
    // given the page in a browser that runs no script
    const context = await browser.newContext({ baseURL: server.url, javaScriptEnabled: false });
    context.setDefaultTimeout(BROWSER_WAIT_MS);
    const page = await context.newPage();
    await page.goto('/login');
    await continueWithEmail(page, ADMIN.email);
    await page.getByLabel('Password').fill(ADMIN.password);
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/admin/dashboard'),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    await page.goto('/admin/settings/webhooks');

    // when a webhook is created
    const url = receiver.url('receiver.test', '/noscript');
    await page.getByLabel('URL', { exact: true }).fill(url);
    await picker(page, 'create')
      .getByRole('checkbox', { name: /^user\.deleted/ })
      .check();
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Create webhook' }).click()]);

    // then its secret is shown (no copy button without script) and is the service's
    const secret = (await page.getByTestId('shown-webhook-secret').textContent())!;
    await expect(page.getByTestId('webhook-secret-box').getByRole('button').count()).resolves.toBe(0);
    const { id } = (await admin.get('/api/v1/webhooks')).body.webhooks.find((w: { url: string }) => w.url === url);
    expect(await secretOf(id)).toBe(secret);

    // when its owner reveals the secret, then it is shown again, as a plain form post
    await page.goto('/admin/settings/webhooks');
    await Promise.all([
      page.waitForLoadState('load'),
      row(page, id)
        .getByRole('button', { name: /^Reveal secret/ })
        .click(),
    ]);
    await expect(page.getByTestId('shown-webhook-secret').textContent()).resolves.toBe(secret);

    // when it is deactivated, then it is inactive
    await page.goto('/admin/settings/webhooks');
    await Promise.all([
      page.waitForLoadState('load'),
      row(page, id)
        .getByRole('button', { name: /^Deactivate/ })
        .click(),
    ]);
    await expect(page.getByRole('status').textContent()).resolves.toContain('is inactive');
    expect((await restHook(id)).isActive).toBe(false);

    // when an edit is refused, the form comes back with the message
    await page.goto(`/admin/settings/webhooks?edit=${id}`);
    await page.locator('#edit-url').fill('http://receiver.test/plain');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Save changes' }).click()]);
    await expect(page.locator('#edit-url').inputValue()).resolves.toBe('http://receiver.test/plain');
    await expect.poll(() => page.locator('#edit-url').getAttribute('aria-invalid')).toBe('true');

    // when it is deleted through the confirmation
    await page.goto(`/admin/settings/webhooks?delete=${id}`);
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Delete webhook' }).click()]);
    await expect(page.getByRole('status').textContent()).resolves.toContain('was deleted');
    expect((await admin.get(`/api/v1/webhooks/${id}`)).status).toBe(404);
    await context.close();
  });

  test("another organization's webhook is neither shown nor changed here, even by a platform admin", async () => {
    // given a webhook of the tenant
    const theirs = await hook(tenant.admin.api, '/tenant');

    // when the platform admin, acting in the operator organization, opens its history and posts to it
    const page = await signedInPage(browser, server.url, ADMIN);
    expect((await page.goto(`/admin/settings/webhooks/${theirs.id}`))?.status()).toBe(404);
    await page.goto(`/admin/settings/webhooks?delete=${theirs.id}`);
    await expect(page.getByRole('heading', { name: 'Delete this webhook?' }).count()).resolves.toBe(0);
    await expect(row(page, theirs.id).count()).resolves.toBe(0);
    const headers = { origin: server.url };
    for (const [action, form] of [
      ['delete', { id: theirs.id, confirm: 'yes' }],
      ['rotate', { id: theirs.id, confirm: 'yes' }],
      ['setActive', { id: theirs.id, active: 'false' }],
      ['update', { id: theirs.id, url: receiver.url('receiver.test', '/stolen'), events: 'user.created' }],
      ['test', { id: theirs.id, event: 'user.created' }],
      ['reveal', { id: theirs.id }],
    ] as const) {
      const posted = await page.request.post(`/admin/settings/webhooks?/${action}`, { form, headers });
      expect(posted.status(), action).toBe(404);
    }
    // nor is a delivery of theirs retried, through their history or through one of ours
    const sent = await tenant.admin.api.post(`/api/v1/webhooks/${theirs.id}/test`, { event: 'user.created' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const ours = await hook(admin, '/ours');
    for (const webhookId of [theirs.id, ours.id]) {
      const posted = await page.request.post(`/admin/settings/webhooks/${webhookId}?/retry`, {
        form: { id: sent.body.id },
        headers,
      });
      expect(posted.status(), webhookId).toBe(404);
    }

    // then it is unchanged
    const after = (await tenant.admin.api.get(`/api/v1/webhooks/${theirs.id}`)).body;
    expect(after).toMatchObject({ url: theirs.url, isActive: true });
    expect(await secretOf(theirs.id, tenant.owner.api)).toBe(theirs.secret);
    await page.context().close();

    // while the tenant's admin sees it and its history
    const own = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await own.goto('/admin/settings/webhooks');
    await expect(own.getByTestId('webhook-row').count()).resolves.toBe(1);
    expect((await own.goto(`/admin/settings/webhooks/${theirs.id}`))?.status()).toBe(200);
    await own.context().close();
  });

  test('a member of the organization cannot reach the pages or their actions', async () => {
    // given the tenant's webhook and its member, signed in
    const theirs = await hook(tenant.admin.api, '/member');
    const page = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });

    // when they open the pages, then access is denied
    for (const path of ['/admin/settings/webhooks', `/admin/settings/webhooks/${theirs.id}`]) {
      const response = await page.goto(path);
      expect(response?.status(), path).toBe(403);
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');
    }

    // and posting the forms directly does nothing
    const headers = { origin: server.url };
    const created = await page.request.post('/admin/settings/webhooks?/create', {
      form: { url: receiver.url('receiver.test', '/sneaky'), events: 'user.created' },
      headers,
    });
    expect(created.status()).toBe(403);
    const deleted = await page.request.post('/admin/settings/webhooks?/delete', {
      form: { id: theirs.id, confirm: 'yes' },
      headers,
    });
    expect(deleted.status()).toBe(403);
    const hooks = (await tenant.admin.api.get('/api/v1/webhooks')).body.webhooks.map((w: { url: string }) => w.url);
    expect(hooks).toContain(theirs.url);
    expect(hooks).not.toContain(receiver.url('receiver.test', '/sneaky'));
    await page.context().close();
  });

  test('an owner reveals the secret from its row, each reveal audited; an admin is offered none and is refused', async () => {
    // given a webhook of the tenant, and its owner on the page
    const { id, secret } = await hook(tenant.admin.api, '/revealed');
    const audited = async () =>
      (
        await tenant.owner.api.get(
          `/api/v1/audit-logs?${new URLSearchParams({ action: 'webhook.secret.reveal', target_id: id })}`,
        )
      ).body.audit_logs;
    const page = await signedInPage(browser, server.url, { email: tenant.owner.email, password: PASSWORD });
    await page.goto('/admin/settings/webhooks');
    expect((await page.getByRole('main').textContent())!.replace(/\s+/g, ' ')).toContain(
      'only an owner of the organization can reveal it again',
    );

    // when Reveal secret is pressed in its row
    await submit(page, row(page, id).getByRole('button', { name: /^Reveal secret/ }));

    // then the secret is shown, with a copy button and the audit warning, and the focus is on it
    const box = page.getByTestId('webhook-secret-box');
    await expect(box.getByTestId('shown-webhook-secret').textContent()).resolves.toBe(secret);
    await expect(box.textContent()).resolves.toContain(
      'Keep this secret private: this reveal is recorded in the audit log.',
    );
    await expect(box.getByRole('button', { name: 'Copy signing secret' }).count()).resolves.toBe(1);
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('secret-heading');

    // and the audit log has the reveal, by the owner, without the secret
    const entries = await audited();
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'webhook.secret.reveal',
        target_type: 'webhook',
        target_id: id,
        actor: expect.objectContaining({ id: tenant.owner.id }),
      }),
    ]);
    expect(JSON.stringify(entries)).not.toContain(secret);

    // and a reload shows it no more
    await page.reload();
    expect(await page.content()).not.toContain(secret);
    await page.context().close();

    // when the tenant's admin opens the page, then no row offers a reveal, and posting the form is refused
    const adminPage = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await adminPage.goto('/admin/settings/webhooks');
    await expect(row(adminPage, id).count()).resolves.toBe(1);
    await expect(adminPage.getByRole('button', { name: /^Reveal secret/ }).count()).resolves.toBe(0);
    const posted = await adminPage.request.post('/admin/settings/webhooks?/reveal', {
      form: { id },
      headers: { origin: server.url },
    });
    expect(posted.status()).toBe(403);
    expect(await posted.text()).not.toContain(secret);
    expect(await audited()).toHaveLength(1);
    await adminPage.context().close();
  });
});
