// Single sign-on in the portal (docs/architecture.md#single-sign-on), in headless Chromium against the whole service:
// an owner proves a domain on /admin/settings/sso through a real DNS server (test/helpers/dns.ts) and connects
// identity providers for it; /login asks for the address first and sends one of that domain to its provider; and the
// whole round trip through a real OpenID Connect provider over HTTPS (test/helpers/oidc-upstream.ts) lands a new
// person in the organization with the mapped role and a seat, for the portal and for an application's login_hint.
import { createHash, X509Certificate } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import axe from 'axe-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import {
  authorizeUrl,
  backAtApp,
  BROWSER_WAIT_MS,
  freshPage,
  launchChromium,
  signedInPage,
  startRedirectTarget,
  type RedirectTarget,
} from '../helpers/browser.ts';
import { createTenant, PASSWORD, signIn, type Tenant } from '../helpers/fixtures.ts';
import type { Client } from '../helpers/http.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { proveDomain } from '../helpers/sso.ts';
import { exchangeCode, registerClient } from '../helpers/oauth.ts';

const screenshots = new URL('../.tmp/sso/', import.meta.url);
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 800 }, bypassCSP: true };
/** The SAML identity provider's sign-in page: a path of the test provider's server that the test answers itself. */
const SAML_PATH = '/saml/sso';
const samlIdp = () => `${upstream.issuer}${SAML_PATH}`;

let dns: TestDnsServer;
let ca: TestCa;
let upstream: OidcUpstream;
let server: TestServer;
let browser: Browser;
let app: RedirectTarget;
let platform: Client;
let acme: Tenant;
/** The owner's test sign-in's result page, once the round trip ran it. */
let testResultPath: string | undefined;

/**
 * The base64 SHA-256 of the upstream's public key, which Chromium accepts for its certificate
 * (--ignore-certificate-errors-spki-list): the test CA is trusted for that one key, not every certificate error
 * ignored. Chromium has no flag to add a CA, and playwright's ignoreHTTPSErrors would ignore them all.
 */
const spkiHash = (pem: string) =>
  createHash('sha256')
    .update(new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa(['idp.test']);
  upstream = await startOidcUpstream(ca);
  server = await startTestServer({
    env: { DNS_SERVERS: dns.address, WEBHOOK_CA_FILE: ca.caFile },
    // idp.test is this machine, for Tessera's calls to the provider as for the browser's.
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  browser = await launchChromium([
    `--host-resolver-rules=MAP idp.test 127.0.0.1`,
    `--ignore-certificate-errors-spki-list=${spkiHash(ca.cert)}`,
  ]);
  app = await startRedirectTarget();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme Corp');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await server?.stop();
  await upstream?.close();
  await dns?.stop();
  ca?.remove();
});

const settings = (page: Page) => page.goto('/admin/settings/sso');
const domainRow = (page: Page, domain: string) => page.locator(`[data-testid="domain-row"][data-domain="${domain}"]`);
const connectionRow = (page: Page, name: string) =>
  page.getByTestId('connection-row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
const status = (page: Page) => page.locator('main p.done[role="status"]');
const alert = (page: Page) => page.locator('main [role="alert"]');

/** `email`'s membership of Acme as the members list shows it, if any. */
async function memberOfAcme(
  email: string,
): Promise<{ user_id: string; role: string; user: { email: string } } | undefined> {
  const reply = await acme.owner.api.get(`/v1/organizations/${acme.id}/members?limit=100`);
  expect(reply.status).toBe(200);
  return reply.body.members.find((m: { user: { email: string } }) => m.user.email === email);
}

/** Clicks the button and waits for the page's answer to the form it sends. */
async function submit(page: Page, button: ReturnType<Page['getByRole']>): Promise<void> {
  await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), button.click()]);
}

/** A page shows an action's answer once it has applied it: as long as any other browser wait may take. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: BROWSER_WAIT_MS });

/** What axe-core finds serious or critical on the page, and whether the page is wider than the screen. */
async function phoneProblems(page: Page): Promise<{ violations: string[]; width: number }> {
  await page.addScriptTag({ content: axe.source });
  const results = await page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
  );
  const violations = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  return { violations, width: await page.evaluate(() => document.documentElement.scrollWidth) };
}

describe('the single sign-on settings', () => {
  test('an owner adds a domain and sees its TXT record; a check fails saying what it found, and passes once the record is published', async () => {
    // given the organization's owner on the settings page, reached from the settings navigation
    const page = await signedInPage(browser, server.url, { email: acme.owner.email, password: PASSWORD });
    await page
      .getByRole('navigation', { name: 'Administration' })
      .getByRole('link', { name: 'Single sign-on' })
      .click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/sso');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Single sign-on');

    // when they add acme.test
    await page.getByLabel('Domain', { exact: true }).fill('ACME.test');
    await submit(page, page.getByRole('button', { name: 'Add domain' }));

    // then it is listed, not verified, with the record to publish
    await poll(() => status(page).textContent()).toContain('acme.test was added');
    const row = domainRow(page, 'acme.test');
    await expect(row.getByTestId('domain-status').textContent()).resolves.toContain('Not verified');
    const name = (await row.getByTestId('txt-name').textContent())!;
    const value = (await row.getByTestId('txt-value').textContent())!;
    expect(name).toBe('_tessera-verification.acme.test');
    expect(value).toMatch(/^tessera-verification=\S{20,}$/);
    await expect(row.getByRole('button', { name: 'Copy the record value for acme.test' }).count()).resolves.toBe(1);

    // when the DNS holds another record and they check
    dns.txt.set(name, ['google-site-verification=abc123']);
    await submit(page, row.getByRole('button', { name: /^Check now/ }));

    // then the check fails and says what it found
    await poll(() => alert(page).textContent()).toContain('"google-site-verification=abc123"');
    await expect(domainRow(page, 'acme.test').getByTestId('domain-status').textContent()).resolves.toContain(
      'Not verified',
    );

    // when the record is published and they check again
    dns.txt.set(name, [value]);
    await submit(page, domainRow(page, 'acme.test').getByRole('button', { name: /^Check now/ }));

    // then the domain is verified
    await poll(() => status(page).textContent()).toContain('acme.test is verified');
    await expect(domainRow(page, 'acme.test').getByTestId('domain-status').textContent()).resolves.toContain(
      'Verified',
    );
    await expect(
      domainRow(page, 'acme.test')
        .getByRole('button', { name: /^Check now/ })
        .count(),
    ).resolves.toBe(0);
    await page.context().close();
  });

  test('an owner adds a SAML connection for the verified domain, with the URLs to give the provider', async () => {
    // given the owner on the settings page, acme.test verified
    const page = await signedInPage(browser, server.url, { email: acme.owner.email, password: PASSWORD });
    await settings(page);
    const form = page.getByRole('region', { name: 'Add a connection' });

    // when they add a SAML connection with a sign-in URL and a certificate, serving acme.test, SSO required
    await form.getByLabel('Name').fill('Acme Okta');
    await form.getByLabel('Type').selectOption('saml');
    await expect(form.getByLabel('Issuer URL').isVisible()).resolves.toBe(false);
    await form.getByLabel('Sign-in URL').fill(samlIdp());
    await form.getByLabel('Signing certificate').fill(ca.cert);
    await form.getByLabel('acme.test').check();
    await form.getByLabel('Require SSO for these domains').check();
    await form.getByLabel('Role claim').fill('groups');
    await form.getByLabel('Role map').fill('acme-admins = admin\nnot a line');
    await submit(page, form.getByRole('button', { name: 'Add connection' }));

    // then a role map line that is not `value = role` is refused, with what was typed kept
    await poll(() => alert(page).textContent()).toContain('correct the fields marked below');
    await expect(form.locator('.field-error').textContent()).resolves.toContain('line 2 must read value = role');
    await expect(form.getByLabel('Name').inputValue()).resolves.toBe('Acme Okta');

    // and once corrected (the certificate typed again), the connection is added
    await form.getByLabel('Role map').fill('acme-admins = admin');
    await form.getByLabel('Signing certificate').fill(ca.cert);
    await submit(page, form.getByRole('button', { name: 'Add connection' }));
    await poll(() => status(page).textContent()).toContain('“Acme Okta” was added');

    // and it is listed with its domain, enabled, SSO required, and the ACS and metadata URLs
    const row = connectionRow(page, 'Acme Okta');
    const id = (await row.getAttribute('data-connection-id'))!;
    await expect(row.locator('td[data-label="Type"]').textContent()).resolves.toBe('SAML');
    await expect(row.getByTestId('connection-domains').textContent()).resolves.toContain('acme.test');
    await expect(row.getByTestId('connection-status').textContent()).resolves.toMatch(/Enabled[\s\S]*SSO required/);
    await expect(row.locator('code').allTextContents()).resolves.toEqual([
      `${server.url}/sso/${id}/acs`,
      `${server.url}/sso/${id}/metadata`,
    ]);
    await expect(row.getByRole('link', { name: 'Test sign-in with Acme Okta' }).getAttribute('href')).resolves.toBe(
      `/sso/${id}/start?test=1`,
    );
    const stored = await acme.owner.api.get(`/api/v1/connections/${id}`);
    expect(stored.body).toMatchObject({
      type: 'saml',
      require_sso: true,
      role_claim: 'groups',
      role_map: { 'acme-admins': 'admin' },
      idp_certificates: 1,
    });
    await page.context().close();
  });

  test('an admin sees the domains and connections, and may test one, but has no form to change them; a forged form is refused', async () => {
    // given the organization's admin on the settings page
    const page = await signedInPage(browser, server.url, { email: acme.admin.email, password: PASSWORD });
    await settings(page);

    // then the domain and the connection are listed, with the way to test it, and nothing that changes them
    await expect(page.getByTestId('owners-only').textContent()).resolves.toContain("Only the organization's owners");
    await expect(domainRow(page, 'acme.test').getByTestId('domain-status').textContent()).resolves.toContain(
      'Verified',
    );
    const row = connectionRow(page, 'Acme Okta');
    await expect(row.getByRole('link', { name: 'Test sign-in with Acme Okta' }).count()).resolves.toBe(1);
    for (const name of ['Edit Acme Okta', 'Delete Acme Okta', 'Remove acme.test'])
      await expect(page.getByRole('link', { name }).count(), name).resolves.toBe(0);
    await expect(page.getByRole('button', { name: /^Disable/ }).count()).resolves.toBe(0);
    await expect(page.getByRole('region', { name: 'Add a connection' }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Add domain' }).count()).resolves.toBe(0);

    // when they send the forms anyway, the service's refusal is the answer and nothing changes
    const id = (await row.getAttribute('data-connection-id'))!;
    const forged = await page.request.post('/admin/settings/sso?/setEnabled', {
      form: { id, enabled: 'false' },
      headers: { origin: server.url },
    });
    expect(JSON.stringify(await forged.json())).toContain('Only owners change how people sign in');
    const added = await page.request.post('/admin/settings/sso?/addDomain', {
      form: { domain: 'admin.acme.test' },
      headers: { origin: server.url },
    });
    expect(JSON.stringify(await added.json())).toContain('Only owners change how people sign in');
    expect((await acme.owner.api.get(`/api/v1/connections/${id}`)).body.enabled).toBe(true);
    expect((await acme.owner.api.get('/api/v1/domains')).body.domains.map((d: { domain: string }) => d.domain)).toEqual(
      ['acme.test'],
    );
    await page.context().close();
  });
});

describe('a connection changed', () => {
  test('an owner edits its role map, its certificate kept; switched off, its addresses go to the password; switched on again', async () => {
    // given the owner on the settings page
    const page = await signedInPage(browser, server.url, { email: acme.owner.email, password: PASSWORD });
    await settings(page);
    const id = (await connectionRow(page, 'Acme Okta').getAttribute('data-connection-id'))!;

    // when they edit the role map (the certificate and metadata left empty)
    await connectionRow(page, 'Acme Okta').getByRole('link', { name: 'Edit Acme Okta' }).click();
    const edit = page.getByRole('region', { name: 'Edit “Acme Okta”' });
    await expect(edit.getByLabel('Role map').inputValue()).resolves.toBe('acme-admins = admin');
    await edit.getByLabel('Role map').fill('acme-admins = admin\nacme-owners = owner');
    await submit(page, edit.getByRole('button', { name: 'Save changes' }));

    // then the change is saved and the certificate kept
    await poll(() => status(page).textContent()).toContain('Changes to “Acme Okta” saved');
    const stored = await acme.owner.api.get(`/api/v1/connections/${id}`);
    expect(stored.body).toMatchObject({
      role_map: { 'acme-admins': 'admin', 'acme-owners': 'owner' },
      idp_certificates: 1,
      require_sso: true,
      domains: ['acme.test'],
    });

    // when they switch it off, an address of acme.test is asked for its password
    await submit(page, connectionRow(page, 'Acme Okta').getByRole('button', { name: 'Disable Acme Okta' }));
    await poll(() => status(page).textContent()).toContain('“Acme Okta” is off');
    await expect(connectionRow(page, 'Acme Okta').getByTestId('connection-status').textContent()).resolves.toContain(
      'Disabled',
    );
    const visitor = await freshPage(browser, server.url);
    await visitor.goto('/login');
    await visitor.getByLabel('Email').fill('grace@acme.test');
    await Promise.all([
      visitor.waitForResponse((r) => r.request().method() === 'POST'),
      visitor.getByRole('button', { name: 'Continue', exact: true }).click(),
    ]);
    await visitor.getByLabel('Password').waitFor();
    await visitor.context().close();

    // and switched on again, it serves them again
    await submit(page, connectionRow(page, 'Acme Okta').getByRole('button', { name: 'Enable Acme Okta' }));
    await poll(() => status(page).textContent()).toContain('“Acme Okta” is on');
    await page.context().close();
  });
});

describe('/login asks for the address first', () => {
  test('an address of a domain with a connection goes to its identity provider, with the address and the way back', async () => {
    // given a signed-out browser, and the SAML provider's sign-in page
    upstream.override(SAML_PATH, (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<title>IdP</title><p>The identity provider</p>'),
    );
    const page = await freshPage(browser, server.url);
    await page.goto('/login?return_to=%2Fportal%2Fsubscriptions');

    // when an address of acme.test continues
    await page.getByLabel('Email').fill('Grace@Acme.test');
    await page.getByRole('button', { name: 'Continue', exact: true }).click();

    // then the browser is at the provider with a SAML request, and no password was asked
    await page.waitForURL((url) => url.href.startsWith(samlIdp()));
    expect(new URL(page.url()).searchParams.get('SAMLRequest')).toBeTruthy();
    await page.context().close();

    // and without scripts the form's answer is that same redirect, through Tessera's start with return_to and login_hint
    const answer = await fetch(`${server.url}/login?return_to=%2Fportal%2Fsubscriptions`, {
      method: 'POST',
      headers: {
        origin: new URL(server.url).origin,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'text/html',
      },
      body: new URLSearchParams({ email: 'grace@acme.test', return_to: '/portal/subscriptions' }),
      redirect: 'manual',
    });
    expect(answer.status).toBe(303);
    const location = new URL(answer.headers.get('location')!, server.url);
    expect(location.pathname).toMatch(/^\/sso\/[0-9a-f-]+\/start$/);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      return_to: '/portal/subscriptions',
      login_hint: 'grace@acme.test',
    });
  });

  test('any other address goes on to its password, the field focused, with a way to change the address', async () => {
    // given the sign-in page
    const page = await freshPage(browser, server.url);
    await page.goto('/login');

    // when an address without a connection continues
    await page.getByLabel('Email').fill(acme.member.email);
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Continue', exact: true }).click(),
    ]);

    // then the password is asked, its field focused, the address shown
    await page.getByLabel('Password').waitFor();
    await poll(() => page.evaluate(() => document.activeElement?.id)).toBe('password');
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(acme.member.email);
    await expect(page.getByLabel('Email').getAttribute('readonly')).resolves.not.toBeNull();

    // and "Change" goes back to the address, which can be corrected
    await page.getByRole('link', { name: 'Change e-mail address' }).click();
    await page.getByRole('button', { name: 'Continue', exact: true }).waitFor();
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(acme.member.email);
    await poll(() => page.evaluate(() => document.activeElement?.id)).toBe('email');

    // and the password signs in
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Continue', exact: true }).click(),
    ]);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await page.context().close();
  });

  test('?sso_error= shows its reason in the page’s words, never the address bar’s, and the form stays usable', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/login?sso_error=invalid_response');
    await expect(alert(page).textContent()).resolves.toContain("Your identity provider's answer could not be verified");
    await poll(() => page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('alert');
    await page.getByLabel('Email').fill(acme.member.email);
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Continue', exact: true }).click(),
    ]);
    await page.getByLabel('Password').waitFor();
    await expect(alert(page).count()).resolves.toBe(0);

    for (const [reason, words] of [
      ['expired_request', 'took too long or was already used'],
      ['email_outside_domains', 'a domain it does not serve'],
      ['<b>Your account is locked, call 555</b>', 'did not work'],
      ['', 'did not work'],
    ] as const) {
      await page.goto(`/login?${new URLSearchParams({ sso_error: reason })}`);
      const text = (await alert(page).textContent())!;
      expect(text, reason).toContain(words);
      expect(text, reason).not.toContain('555');
    }
    await page.context().close();
  });

  test('a password for an address whose organization requires SSO is refused with a link to its provider', async () => {
    // Posted as a page without the first step would (the address and a password at once).
    const answer = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: {
        origin: new URL(server.url).origin,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'text/html',
      },
      body: new URLSearchParams({ email: 'grace@acme.test', password: 'whatever it is' }),
      redirect: 'manual',
    });
    const html = await answer.text();
    // (403: the status the API gives sso_required)
    expect(answer.status, html.slice(0, 500)).toBe(403);
    expect(html).toContain('Your organization requires you to sign in with Acme Okta');
    expect(html).toMatch(
      /<a href="\/sso\/[0-9a-f-]+\/start\?login_hint=grace%40acme.test"[^>]*>Continue with Acme Okta<\/a>/,
    );
  });
});

describe('a round trip through a real OpenID Connect provider', () => {
  let subscriptionId: string;
  let connectionId: string;

  beforeAll(async () => {
    // A second domain of Acme's, a subscription with seats, and a person at the provider in the admins' group.
    await proveDomain(acme.owner.api, dns, 'acme-labs.test');
    const product = await platform.post('/v1/products', {
      name: 'Lab Notebook',
      slug: 'lab-notebook',
      features: ['notes'],
    });
    const subscription = await platform.post('/api/v1/subscriptions', {
      organization_id: acme.id,
      product_id: product.body.id,
      total_seats: 3,
      price_per_seat: 4,
      billing_cycle: 'monthly',
      status: 'active',
    });
    expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
    subscriptionId = subscription.body.id;
    upstream.addAccount({
      sub: 'ada-1',
      email: 'ada@acme-labs.test',
      email_verified: true,
      name: 'Ada Lovelace',
      groups: ['acme-admins', 'staff'],
    });
    upstream.signInAs('ada-1');
  });

  test('an owner connects the provider from the settings page, and a test sign-in shows what it sends', async () => {
    // given the owner on the settings page
    const page = await signedInPage(browser, server.url, { email: acme.owner.email, password: PASSWORD });
    await settings(page);
    const form = page.getByRole('region', { name: 'Add a connection' });

    // when they add an OIDC connection for acme-labs.test, admins mapped from the groups claim, with seats
    await form.getByLabel('Name').fill('Acme Labs ID');
    await form.getByLabel('Type').selectOption('oidc');
    await form.getByLabel('Issuer URL').fill(upstream.issuer);
    await form.getByLabel('Client ID').fill(upstream.clientId);
    await form.getByLabel('Client secret').fill(upstream.clientSecret);
    await form.getByLabel('Scopes').fill('openid email profile groups');
    await form.getByLabel('acme-labs.test').check();
    await form.getByLabel('Seats from').selectOption(subscriptionId);
    await form.getByLabel('Role claim').fill('groups');
    await form.getByLabel('Role map').fill('acme-admins = admin');
    await submit(page, form.getByRole('button', { name: 'Add connection' }));
    await poll(() => status(page).textContent()).toContain('“Acme Labs ID” was added');

    // then its row gives the redirect URI to register with the provider
    const row = connectionRow(page, 'Acme Labs ID');
    connectionId = (await row.getAttribute('data-connection-id'))!;
    const redirectUri = (await row.locator('code').first().textContent())!;
    expect(redirectUri).toBe(`${server.url}/sso/${connectionId}/callback`);
    upstream.redirectUris.add(redirectUri);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('settings.png', screenshots).pathname, fullPage: true });
    const stored = await acme.owner.api.get(`/api/v1/connections/${connectionId}`);
    expect(stored.body).toMatchObject({
      type: 'oidc',
      issuer: upstream.issuer,
      seat_subscription_id: subscriptionId,
      role_map: { 'acme-admins': 'admin' },
      has_client_secret: true,
    });

    // when the owner runs a test sign-in
    await row.getByRole('link', { name: 'Test sign-in with Acme Labs ID' }).click();

    // then they come back to the result: who signed in, the role they would get, the claims; nobody was signed in
    await page.waitForURL((url) => url.pathname.startsWith('/admin/settings/sso/test/'));
    testResultPath = new URL(page.url()).pathname;
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Test sign-in with Acme Labs ID');
    await expect(page.getByTestId('test-subject').textContent()).resolves.toBe('ada-1');
    await expect(page.getByTestId('test-email').textContent()).resolves.toBe('ada@acme-labs.test');
    await expect(page.getByTestId('test-email-verified').textContent()).resolves.toBe('yes');
    await expect(page.getByTestId('test-role').textContent()).resolves.toContain('admin');
    const claims = await page.getByTestId('claim-row').allTextContents();
    expect(claims.join('\n')).toContain('acme-admins');
    await expect(memberOfAcme('ada@acme-labs.test')).resolves.toBeUndefined();
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('test-result.png', screenshots).pathname, fullPage: true });

    // and the way back leads to the settings
    await page.getByRole('link', { name: 'Back to single sign-on' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/sso');

    // when a test sign-in fails: the provider signs its ID token with a key it does not publish
    upstream.misbehave({ signWithOtherKey: true });
    try {
      await row.getByRole('link', { name: 'Test sign-in with Acme Labs ID' }).click();
      // then the admin is back on the settings page, told in its words what to check
      await page.waitForURL(
        (url) => url.pathname === '/admin/settings/sso' && url.searchParams.get('test_error') === 'invalid_response',
      );
      await poll(() => page.getByTestId('test-error').textContent()).toContain('did not pass the checks');
    } finally {
      upstream.misbehave(null);
    }
    await page.context().close();
  });

  test('/login with an address of the domain goes to the provider and back, into the organization with the mapped role and a seat', async () => {
    // given a signed-out browser on /login
    const page = await freshPage(browser, server.url);
    await page.goto('/login');

    // when Ada gives her address
    await page.getByLabel('Email').fill('ada@acme-labs.test');
    await page.getByRole('button', { name: 'Continue', exact: true }).click();

    // then she went through the provider (with her address as its hint) and lands signed in on Acme's admin dashboard
    await page.waitForURL((url) => url.origin === new URL(server.url).origin && url.pathname === '/admin/dashboard');
    expect(
      upstream.requests.some(
        (r) => r.startsWith('/auth?') && new URLSearchParams(r.slice(6)).get('login_hint') === 'ada@acme-labs.test',
      ),
    ).toBe(true);
    await expect(page.locator('.admin-nav .org').textContent()).resolves.toBe('Acme Corp');

    // and she is a member of Acme as admin, with a seat of the subscription
    const ada = await memberOfAcme('ada@acme-labs.test');
    expect(ada).toMatchObject({ role: 'admin', user: { name: 'Ada Lovelace', email_verified: true } });
    const seats = await acme.owner.api.get(`/api/v1/subscriptions/${subscriptionId}/seats`);
    expect(seats.body.seats.map((seat: { user_id: string }) => seat.user_id)).toEqual([ada!.user_id]);
    await page.context().close();
  });

  test('an application of the organization with the address as login_hint sends the browser straight to the provider, and gets a code', async () => {
    // given Acme's application, which asks no consent, and a browser signed in nowhere
    const acmeApp = await registerClient(acme.owner.api, {
      name: 'Acme Lab Notes',
      redirect_uris: [app.redirectUri],
      allowed_scopes: ['openid', 'email', 'profile'],
      consent_required: false,
    });
    const page = await freshPage(browser, server.url);
    const visited: string[] = [];
    page.on('framenavigated', (frame) => frame === page.mainFrame() && visited.push(new URL(frame.url()).pathname));
    const asked = upstream.requests.length;

    // when the application sends it to authorize with Ada's address as the hint
    await page.goto(authorizeUrl(acmeApp, { login_hint: 'ada@acme-labs.test' }), { waitUntil: 'commit' });

    // then the browser is back at the application with a code, never having seen the sign-in page
    const query = await backAtApp(page, app);
    expect(query.get('state')).toBe('s1');
    expect(visited).not.toContain('/login');
    expect(
      upstream.requests
        .slice(asked)
        .some(
          (r) => r.startsWith('/auth?') && new URLSearchParams(r.slice(6)).get('login_hint') === 'ada@acme-labs.test',
        ),
    ).toBe(true);

    // and the code is Ada's
    const reply = await exchangeCode(server.url, acmeApp, query.get('code')!, app.redirectUri);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const idToken = JSON.parse(Buffer.from(reply.body.id_token.split('.')[1], 'base64url').toString('utf8'));
    expect(idToken).toMatchObject({ email: 'ada@acme-labs.test', aud: acmeApp.client_id });
    await page.context().close();
  });
});

describe('platform sign-in (social)', () => {
  test('a platform admin adds a GitHub provider, /login offers it to everyone, and it goes once deleted', async () => {
    // given the platform admin on the settings page
    const page = await signedInPage(browser, server.url, ADMIN);
    await settings(page);
    const section = page.getByTestId('platform-sign-in');
    const form = section.getByRole('form', { name: 'Add a provider' });

    // when they add GitHub
    await form.getByLabel('Name').fill('GitHub');
    await form.getByLabel('Type').selectOption('github');
    await expect(form.getByLabel('Issuer URL').isVisible()).resolves.toBe(false);
    await form.getByLabel('Client ID').fill('Iv1.gh-client');
    await form.getByLabel('Client secret').fill('a GitHub client secret');
    await submit(page, form.getByRole('button', { name: 'Add provider' }));

    // then it is listed with the callback URL to register at GitHub
    await poll(() => status(page).textContent()).toContain('“GitHub” was added');
    const row = section
      .getByTestId('platform-row')
      .filter({ has: page.getByRole('rowheader', { name: 'GitHub', exact: true }) });
    const id = (await row.getAttribute('data-connection-id'))!;
    await expect(row.locator('code').textContent()).resolves.toBe(`${server.url}/sso/${id}/callback`);

    // and the sign-in page offers it, keeping where the visitor was going
    const visitor = await freshPage(browser, server.url);
    await visitor.goto('/login?return_to=%2Fportal%2Fsubscriptions');
    await expect(visitor.getByRole('link', { name: 'Sign in with GitHub' }).getAttribute('href')).resolves.toBe(
      `/sso/${id}/start?return_to=%2Fportal%2Fsubscriptions`,
    );

    // when they delete it, it is gone from /login
    await page.goto(`/admin/settings/sso?delete=${id}`);
    await submit(page, page.getByRole('button', { name: 'Delete connection' }));
    await poll(() => status(page).textContent()).toContain('“GitHub” was deleted');
    await visitor.reload();
    await expect(visitor.getByRole('link', { name: 'Sign in with GitHub' }).count()).resolves.toBe(0);
    await visitor.context().close();
    await page.context().close();

    // and an organization's admin has no such section
    const admin = await signedInPage(browser, server.url, { email: acme.admin.email, password: PASSWORD });
    await settings(admin);
    await expect(admin.getByTestId('platform-sign-in').count()).resolves.toBe(0);
    await admin.context().close();
  });
});

describe('on a 375 px phone', () => {
  test('the settings page, its edit panel, the test result and the sign-in page with an error pass axe-core and fit', async () => {
    const page = await signedInPage(browser, server.url, { email: acme.owner.email, password: PASSWORD }, PHONE);
    await settings(page);
    const id = await connectionRow(page, 'Acme Okta').getAttribute('data-connection-id');
    const pages = [
      '/admin/settings/sso',
      `/admin/settings/sso?edit=${id}`,
      `/admin/settings/sso?delete=${id}`,
      `/admin/settings/sso?deleteDomain=${await domainRow(page, 'acme.test').getAttribute('data-domain-id')}`,
    ];
    if (testResultPath) pages.push(testResultPath);
    await mkdir(screenshots, { recursive: true });
    for (const [i, path] of pages.entries()) {
      await page.goto(path);
      await page.screenshot({ path: new URL(`phone-${i}.png`, screenshots).pathname, fullPage: true });
      const { violations, width } = await phoneProblems(page);
      expect(violations, path).toEqual([]);
      expect(width, path).toBeLessThanOrEqual(375);
    }

    const visitor = await freshPage(browser, server.url, PHONE);
    await visitor.goto('/login?sso_error=account_exists');
    await visitor.screenshot({ path: new URL('phone-login.png', screenshots).pathname, fullPage: true });
    const { violations, width } = await phoneProblems(visitor);
    expect(violations).toEqual([]);
    expect(width).toBeLessThanOrEqual(375);
    await visitor.context().close();
    await page.context().close();
  });
});
