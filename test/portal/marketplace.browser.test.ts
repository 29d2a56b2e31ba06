import { createHash, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startSampleApp, type SampleApp } from '../helpers/sample-app.ts';
import { waitFor } from '../helpers/wait.ts';

// The marketplace end to end in headless Chromium: a platform admin registers the sample app and rotates its secret
// on /admin/apps, an organization's admin installs it (a clear error while the app refuses), a member opens it from
// /portal/apps and arrives signed in at the app, which shows their e-mail; uninstalling ends it.

const screenshots = new URL('../.tmp/', import.meta.url);

let ca: TestCa;
let server: TestServer;
let sample: SampleApp;
let browser: Browser;
let tenant: Tenant;

beforeAll(async () => {
  ca = makeTestCa(['app.test']);
  server = await startTestServer({
    role: 'all',
    env: { WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  sample = await startSampleApp(ca, server.url);
  // The browser reaches app.test on this machine and trusts exactly the sample app's key (pinned), nothing else.
  const spki = createHash('sha256')
    .update(new X509Certificate(ca.cert).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');
  browser = await launchChromium([
    '--host-resolver-rules=MAP app.test 127.0.0.1',
    `--ignore-certificate-errors-spki-list=${spki}`,
  ]);
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api, 'Marketplace Tenant');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await sample?.close();
  ca?.remove();
});

const row = (page: Page, name: string) => page.getByTestId('app-row').filter({ hasText: name });

describe('the marketplace in the portals', () => {
  test('register, rotate, install, open with single sign-on, uninstall', async () => {
    // given a platform admin on /admin/apps, reached from the admin navigation
    const admin = await signedInPage(browser, server.url, ADMIN);
    await admin.goto('/admin/dashboard');
    await admin.getByRole('navigation', { name: 'Administration' }).getByRole('link', { name: 'Apps' }).click();
    await admin.waitForURL((url) => url.pathname === '/admin/apps');

    // when they register the sample app
    await admin.getByLabel('Name').last().fill('Sample CRM');
    await admin.getByLabel('Description').last().fill('Customers, in sync');
    await admin.getByLabel('Webhook URL (https)').fill(sample.url('/hooks'));
    await admin
      .getByLabel(/^Redirect URIs/)
      .last()
      .fill(sample.url('/callback'));
    await admin
      .getByLabel(/^Scopes/)
      .last()
      .fill('openid email profile');
    await admin.getByRole('button', { name: 'Register app' }).click();

    // then its signing secret is shown once, and it is in the catalog
    const first = (await admin.getByTestId('signing-secret').textContent())!;
    expect(first).toMatch(/^whsec_/);
    await expect(row(admin, 'Sample CRM').count()).resolves.toBe(1);

    // and a rotation shows a new one; the app is given that one
    await row(admin, 'Sample CRM').getByRole('button', { name: 'Rotate signing secret' }).click();
    await admin.getByText('the old one no longer signs').waitFor();
    const rotated = (await admin.getByTestId('signing-secret').textContent())!;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(first);
    sample.setSigningSecret(rotated);
    await admin.context().close();

    // given the organization's admin on /admin/apps, while the app refuses everything
    const orgAdmin = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await orgAdmin.goto('/admin/apps');
    await expect(orgAdmin.getByRole('button', { name: 'Register app' }).count()).resolves.toBe(0);
    sample.mode(500);
    await row(orgAdmin, 'Sample CRM').getByRole('button', { name: 'Install' }).click();
    // then the error says, in full, where the app did not accept and why, and that nothing is installed
    await expect(orgAdmin.getByRole('alert').textContent()).resolves.toContain(
      `The app did not accept the installation at ${sample.url('/hooks')} (it answered HTTP 500); nothing was installed`,
    );
    await expect(row(orgAdmin, 'Sample CRM').textContent()).resolves.toContain('Not installed');

    // when the app works again, the install succeeds and the app holds the organization's credentials
    sample.mode('normal');
    await row(orgAdmin, 'Sample CRM').getByRole('button', { name: 'Install' }).click();
    await orgAdmin.getByRole('status').filter({ hasText: 'is installed' }).waitFor();
    await expect(row(orgAdmin, 'Sample CRM').textContent()).resolves.toContain('Installed');
    expect(sample.credentials.has(tenant.id)).toBe(true);
    await orgAdmin.screenshot({ path: new URL('marketplace-admin.png', screenshots).pathname, fullPage: true });

    // when a member opens it from /portal/apps (linked from the dashboard)
    const member = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
    await member.getByRole('link', { name: 'Your organization’s apps' }).click();
    await member.waitForURL((url) => url.pathname === '/portal/apps');
    await member
      .getByTestId('installed-app')
      .filter({ hasText: 'Sample CRM' })
      .getByRole('link', { name: 'Open' })
      .click();

    // then they arrive at the app signed in, with no consent page: it shows their e-mail
    await member.waitForURL((url) => url.hostname === 'app.test' && url.pathname === '/callback');
    await expect(member.locator('#email').textContent()).resolves.toBe(tenant.member.email);
    expect(new URL(member.url()).searchParams.get('state')).toBe(tenant.id);
    await member.screenshot({ path: new URL('marketplace-launch.png', screenshots).pathname });

    // when the admin uninstalls it
    await orgAdmin.reload();
    await row(orgAdmin, 'Sample CRM').getByRole('button', { name: 'Uninstall' }).click();
    await orgAdmin.getByRole('status').filter({ hasText: 'is uninstalled' }).waitFor();

    // then the app is told and forgets the organization, and the member's page lists nothing
    await waitFor(() => (sample.credentials.has(tenant.id) ? undefined : true));
    await member.goto(`${server.url}/portal/apps`);
    await expect(member.locator('main').textContent()).resolves.toContain('No apps are installed');
    await member.context().close();
    await orgAdmin.context().close();
  });

  test('a signed-out visitor is sent to sign in, and a member cannot open /admin/apps', async () => {
    const page = await browser.newPage({ baseURL: server.url });
    await page.goto('/portal/apps');
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.close();
    const member = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
    const response = await member.goto('/admin/apps');
    expect(response?.status()).toBe(403);
    await member.context().close();
  });
});
