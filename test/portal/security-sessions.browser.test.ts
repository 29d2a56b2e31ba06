import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, PASSWORD, signIn, type Person } from '../helpers/fixtures.ts';

// /portal/security's "Where you are signed in", in headless Chromium: two browsers of one person, the first ends the
// second's session (which is sent to sign in on its next page), then every other session, then its own.

let server: TestServer;
let browser: Browser;
let person: Person;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const org = await platformAdmin.post('/v1/organizations', { name: 'Hooli' });
    expect(org.status).toBe(201);
    person = await addPerson(server.url, platformAdmin, org.body.id, 'member', 'traveller');
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

const rowOf = (page: Page, userAgent: string) => page.getByTestId('session-row').filter({ hasText: userAgent });

/** Clicks `button` and waits for the action's answer and the page's reloaded data. */
async function submit(page: Page, button: ReturnType<Page['getByRole']>): Promise<void> {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/portal/security'),
    button.click(),
  ]);
  if (response.status() === 403) expect.fail(`POST /portal/security answered 403: ${await response.text()}`);
  await page.waitForFunction(() => !document.querySelector('main button[disabled]'));
}

describe('where you are signed in', () => {
  test('lists both browsers, ends the other one, signs out everywhere else, then signs this device out', async () => {
    const first = await signedInPage(
      browser,
      server.url,
      { email: person.email, password: PASSWORD },
      { userAgent: 'FirstBrowser/1.0' },
    );
    const second = await signedInPage(
      browser,
      server.url,
      { email: person.email, password: PASSWORD },
      { userAgent: 'SecondBrowser/2.0' },
    );
    try {
      await first.goto('/portal/security');
      await expect.poll(() => first.getByTestId('session-row').count()).toBe(3);
      await expect.poll(() => rowOf(first, 'FirstBrowser/1.0').getByTestId('this-device').count()).toBe(1);
      await expect.poll(() => rowOf(first, 'SecondBrowser/2.0').getByTestId('this-device').count()).toBe(0);
      await expect.poll(() => first.getByTestId('this-device').count()).toBe(1);

      // The second browser still works until the first ends its session.
      await second.goto('/portal/security');
      expect(new URL(second.url()).pathname).toBe('/portal/security');

      await submit(first, rowOf(first, 'SecondBrowser/2.0').getByRole('button', { name: /^Sign out/ }));
      await expect.poll(() => first.getByRole('status').textContent()).toContain('That session was signed out');
      await expect.poll(() => rowOf(first, 'SecondBrowser/2.0').count()).toBe(0);

      // Its next navigation finds no session: it is sent to sign in.
      await second.goto('/portal/dashboard');
      await second.waitForURL((url) => url.pathname === '/login');

      // The invitation's session is the only other one left.
      await submit(first, first.getByRole('button', { name: 'Sign out everywhere else' }));
      await expect.poll(() => first.getByRole('status').textContent()).toContain('One other session was signed out');
      await expect.poll(() => first.getByTestId('session-row').count()).toBe(1);
      expect((await person.api.get('/api/v1/auth/session')).status).toBe(401);
      await expect.poll(() => first.getByText('This device is the only place you are signed in.').count()).toBe(1);

      // Signing this device out is allowed too: it lands on sign-in, and the portal is closed to it.
      await Promise.all([
        first.waitForURL((url) => url.pathname === '/login'),
        rowOf(first, 'FirstBrowser/1.0')
          .getByRole('button', { name: /^Sign out/ })
          .click(),
      ]);
      await first.goto('/portal/security');
      await first.waitForURL((url) => url.pathname === '/login');
    } finally {
      await first.context().close();
      await second.context().close();
    }
  });
});
