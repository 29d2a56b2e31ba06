// /portal/security's connected sign-ins (docs/architecture.md#single-sign-on), in headless Chromium against the whole
// service and a fake GitHub Enterprise Server over HTTPS (test/helpers/github-upstream.ts) that the platform admin
// registered as a platform-wide provider: a GitHub account with a member's address is never let into that account by
// itself; the member signs in with their password, connects GitHub on the security page, and from then on "Sign in
// with GitHub" signs them in, until they disconnect it. A GitHub account connected to someone else is refused, and
// the refusal is said on the security page.
import { createHash, X509Certificate } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage, signInOnPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, signIn, type Tenant } from '../helpers/fixtures.ts';
import type { Client } from '../helpers/http.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startGithubUpstream, type GithubUpstream } from '../helpers/github-upstream.ts';

const screenshots = new URL('../.tmp/connected-sign-ins/', import.meta.url);

let ca: TestCa;
let github: GithubUpstream;
let server: TestServer;
let browser: Browser;
let platform: Client;
let tenant: Tenant;

/**
 * The base64 SHA-256 of the upstream's public key, which Chromium accepts for its certificate
 * (--ignore-certificate-errors-spki-list): the test CA is trusted for that one key, not every certificate error
 * ignored.
 */
const spkiHash = (pem: string) =>
  createHash('sha256')
    .update(new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');

beforeAll(async () => {
  ca = makeTestCa(['github.test']);
  github = await startGithubUpstream(ca);
  server = await startTestServer({
    env: { WEBHOOK_CA_FILE: ca.caFile },
    // github.test is this machine, for Tessera's calls to it as for the browser's.
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  try {
    browser = await launchChromium([
      `--host-resolver-rules=MAP github.test 127.0.0.1`,
      `--ignore-certificate-errors-spki-list=${spkiHash(ca.cert)}`,
    ]);
    platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    tenant = await createTenant(server.url, platform, 'Octo Corp');
    // The member's GitHub account, whose verified primary address is the member's.
    github.addUser({
      id: 4201,
      login: 'member-gh',
      name: 'Member on GitHub',
      email: null,
      emails: [{ email: tenant.member.email, primary: true, verified: true }],
    });
    // Another GitHub account with the admin's address.
    github.addUser({
      id: 4202,
      login: 'admin-gh',
      name: 'Admin on GitHub',
      email: null,
      emails: [{ email: tenant.admin.email, primary: true, verified: true }],
    });
  } catch (error) {
    await browser?.close();
    await server.stop();
    await github.close();
    ca.remove();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await github?.close();
  ca?.remove();
});

const origin = () => new URL(server.url).origin;
const section = (page: Page) => page.getByTestId('connected-sign-ins');
const row = (page: Page, name: string) =>
  page.getByTestId('connected-sign-in-row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
const status = (page: Page) => page.locator('main p.done[role="status"]');
const alert = (page: Page) => page.locator('main [role="alert"]');

/** Leaves for GitHub through "Sign in with GitHub" on /login and waits to be back at Tessera, off /sso/*. */
async function signInWithGithub(page: Page): Promise<URL> {
  await page.goto('/login');
  await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
  // Back refused (?sso_error=) or signed in on a dashboard; the /login in between those two is neither.
  await page.waitForURL(
    (url) =>
      url.origin === origin() &&
      (url.searchParams.get('sso_error') !== null || ['/portal/dashboard', '/admin/dashboard'].includes(url.pathname)),
  );
  return new URL(page.url());
}

describe('connected sign-ins', () => {
  test('without a provider on the platform, the security page has no such section', async () => {
    const page = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
    await page.goto('/portal/security');
    await page.getByRole('heading', { name: 'Where you are signed in' }).waitFor();
    await expect(section(page).count()).resolves.toBe(0);
    await page.context().close();

    // when the platform admin adds GitHub as a platform-wide provider
    const created = await platform.post('/api/v1/connections', {
      type: 'github',
      platform: true,
      name: 'GitHub',
      issuer: github.origin,
      client_id: github.clientId,
      client_secret: github.clientSecret,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  test('a member signs in with GitHub, is told to connect it, connects it, signs in with it, and disconnects it', async () => {
    github.signInAs('member-gh');

    // given a signed-out browser, when the member signs in with GitHub
    const page = await freshPage(browser, server.url);
    const refused = await signInWithGithub(page);

    // then they are not signed in: an account has that address, and the page says what to do
    expect(refused.pathname).toBe('/login');
    expect(refused.searchParams.get('sso_error')).toBe('account_exists');
    const message = (await alert(page).textContent())!;
    expect(message).toContain('An account with this e-mail address already exists');
    expect(message).toContain('Sign in with your password or passkey, then connect the provider under Security');

    // when they sign in with their password there and open Security from the header
    await signInOnPage(page, tenant.member.email, PASSWORD);
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await page.getByRole('link', { name: 'Security', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/portal/security');

    // then the section lists nothing connected and offers GitHub
    await expect(section(page).getByRole('heading', { name: 'Connected sign-ins' }).count()).resolves.toBe(1);
    await expect(section(page).getByTestId('no-connected-sign-ins').textContent()).resolves.toContain(
      'Nothing is connected yet',
    );
    const connect = section(page).getByRole('link', { name: 'Connect GitHub', exact: true });
    const href = (await connect.getAttribute('href'))!;
    expect(href).toMatch(/^\/sso\/[0-9a-f-]+\/start\?/);
    expect(Object.fromEntries(new URL(href, server.url).searchParams)).toEqual({
      link: '1',
      return_to: '/portal/security',
    });

    // when they connect GitHub
    await connect.click();

    // then they went through GitHub and are back on the security page, with the notice and GitHub listed
    await page.waitForURL(
      (url) => url.origin === origin() && url.pathname === '/portal/security' && url.searchParams.get('linked') === '1',
    );
    expect(github.requests.some((r) => r.path.startsWith('/login/oauth/authorize?'))).toBe(true);
    await expect(status(page).textContent()).resolves.toContain(
      'GitHub is connected: “Sign in with GitHub” signs you in to this account from now on.',
    );
    await expect(row(page, 'GitHub').count()).resolves.toBe(1);
    await expect(row(page, 'GitHub').locator('td[data-label="Connected"] time').textContent()).resolves.toMatch(/UTC$/);
    await expect(row(page, 'GitHub').locator('td[data-label="Last used"] time').textContent()).resolves.toMatch(/UTC$/);
    await expect(section(page).getByRole('link', { name: 'Connect GitHub', exact: true }).count()).resolves.toBe(0);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('connected.png', screenshots).pathname, fullPage: true });

    // when they sign out, and sign in with GitHub
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/login'),
      page.getByRole('banner').getByRole('button', { name: 'Sign out' }).click(),
    ]);
    const signedIn = await signInWithGithub(page);

    // then GitHub signed them in, as the member
    expect(signedIn.pathname).toBe('/portal/dashboard');
    await expect(page.getByRole('banner').locator('.who').textContent()).resolves.toBe(tenant.member.email);

    // when they disconnect GitHub on the security page, after its confirmation
    await page.goto('/portal/security');
    await row(page, 'GitHub').getByRole('link', { name: 'Disconnect GitHub' }).click();
    const confirmation = section(page).getByTestId('disconnect-confirmation');
    await confirmation.getByRole('heading', { name: 'Disconnect GitHub?' }).waitFor();
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Disconnect GitHub?');
    await page.screenshot({ path: new URL('disconnect.png', screenshots).pathname, fullPage: true });
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      confirmation.getByRole('button', { name: 'Disconnect GitHub' }).click(),
    ]);

    // then it is listed no more, GitHub can be connected again, and the confirmation is closed
    await expect
      .poll(() => status(page).textContent())
      .toContain('GitHub was disconnected: it no longer signs you in to this account.');
    await expect(row(page, 'GitHub').count()).resolves.toBe(0);
    await expect(section(page).getByRole('link', { name: 'Connect GitHub', exact: true }).count()).resolves.toBe(1);
    await expect(section(page).getByTestId('disconnect-confirmation').count()).resolves.toBe(0);

    // and GitHub no longer signs them in
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/login'),
      page.getByRole('banner').getByRole('button', { name: 'Sign out' }).click(),
    ]);
    const again = await signInWithGithub(page);
    expect(again.searchParams.get('sso_error')).toBe('account_exists');
    await page.context().close();
  });

  test('a GitHub account connected to someone else is not connected, and the security page says why', async () => {
    // given the member's GitHub account connected to the member again
    github.signInAs('member-gh');
    const member = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
    await member.goto('/portal/security');
    await section(member).getByRole('link', { name: 'Connect GitHub', exact: true }).click();
    await member.waitForURL((url) => url.pathname === '/portal/security' && url.searchParams.get('linked') === '1');
    await member.context().close();

    // when the admin, signed in, connects GitHub while GitHub signs in the member's account
    const admin = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await admin.goto('/portal/security');
    await section(admin).getByRole('link', { name: 'Connect GitHub', exact: true }).click();

    // then they are back on the security page, still signed in, told why nothing was connected
    await admin.waitForURL(
      (url) => url.pathname === '/portal/security' && url.searchParams.get('link_error') === 'identity_in_use',
    );
    const message = (await alert(admin).textContent())!;
    expect(message).toContain(
      'That account is already connected to another Tessera account, so it was not connected to yours.',
    );
    await expect.poll(() => admin.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('alert');
    await expect(row(admin, 'GitHub').count()).resolves.toBe(0);
    await expect(section(admin).getByRole('link', { name: 'Connect GitHub', exact: true }).count()).resolves.toBe(1);

    // and a reason the page does not know is said in its own words, never the address bar's
    await admin.goto('/portal/security?link_error=%3Cb%3ECall%20555%3C%2Fb%3E');
    const unknown = (await alert(admin).textContent())!;
    expect(unknown).toContain('Connecting did not work');
    expect(unknown).not.toContain('555');
    await admin.context().close();
  });

  test('the disconnect form works without scripts, and needs its confirmation', async () => {
    // given the member's connected GitHub, and the page's form as a browser without scripts posts it
    const { member } = tenant;
    const listed = await member.api.post('/graphql', { query: '{ mySsoIdentities { id name } }' });
    const [identity] = listed.body.data.mySsoIdentities as { id: string; name: string }[];
    expect(identity?.name).toBe('GitHub');
    const post = (body: Record<string, string>) =>
      fetch(`${server.url}/portal/security?/disconnectSignIn`, {
        method: 'POST',
        headers: {
          origin: origin(),
          cookie: `tessera_session=${member.token}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'text/html',
        },
        body: new URLSearchParams(body),
        redirect: 'manual',
      });

    // when it comes without the confirmation, nothing is disconnected
    const unconfirmed = await post({ id: identity!.id });
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.text()).toContain('Confirm which sign-in is to be disconnected.');

    // when it comes confirmed, GitHub is disconnected and the page says so
    const confirmed = await post({ id: identity!.id, confirm: 'yes' });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain('GitHub was disconnected');
    const after = await member.api.post('/graphql', { query: '{ mySsoIdentities { id } }' });
    expect(after.body.data.mySsoIdentities).toEqual([]);

    // and again, it is already gone
    const again = await post({ id: identity!.id, confirm: 'yes' });
    expect(again.status).toBe(404);
    expect(await again.text()).toContain('That sign-in is no longer connected to your account.');
  });
});
