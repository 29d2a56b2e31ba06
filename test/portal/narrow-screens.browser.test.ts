import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { continueWithEmail, freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { authorize, decideConsent, registerClient, sessionOf, type RegisteredClient } from '../helpers/oauth.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startSampleApp, type SampleApp } from '../helpers/sample-app.ts';
import { startOidcUpstream, type CookieJar, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { ssoSignInThroughOidc } from '../helpers/sso.ts';
import { waitFor } from '../helpers/wait.ts';

// Every page of the portals on a 375 px wide phone, in headless Chromium, with data on each: the page is never wider
// than the screen, each visible control in <main> is on screen (or in a frame that scrolls it into view), axe-core
// finds nothing serious or critical, and Tab goes through each form's fields and button in order with the focus
// visible. axe-core checks each page at 1280 px too. The pages come from the route folders, so a new page is not
// forgotten.

const WIDTH = 375;
const PHONE: BrowserContextOptions = { viewport: { width: WIDTH, height: 800 }, bypassCSP: true };
const routes = fileURLToPath(new URL('../../portal/src/routes/', import.meta.url));
const screenshots = new URL('../.tmp/narrow/', import.meta.url);

let ca: TestCa;
let server: TestServer;
let sample: SampleApp;
let upstream: OidcUpstream;
let browser: Browser;
let platform: Client;
let tenant: Tenant;
let member: Person;
/** What the pages with an id in their path are visited with, and the links of the anonymous pages. */
const ids: Record<
  | 'subscription'
  | 'client'
  | 'organization'
  | 'webhook'
  | 'mail'
  | 'invitationToken'
  | 'apiKey'
  | 'member'
  | 'ssoConnection'
  | 'ssoTest'
  | 'ssoIdentity'
  | 'scimToken'
  | 'groupMapping',
  string
> = {
  ssoConnection: '',
  ssoIdentity: '',
  scimToken: '',
  groupMapping: '',
  ssoTest: '',
  apiKey: '',
  member: '',
  subscription: '',
  client: '',
  organization: '',
  webhook: '',
  mail: '',
  invitationToken: '',
};
let consentClient: RegisteredClient;

/** Throws with the answer unless `reply` has `status`: the setup has nothing to test then. */
function ok<T>(reply: { status: number; body: T }, status: number): T {
  if (reply.status !== status)
    throw new Error(`expected ${status}, got ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body;
}

beforeAll(async () => {
  ca = makeTestCa(['app.test', 'idp.test']);
  server = await startTestServer({
    role: 'all',
    env: { WEBHOOK_CA_FILE: ca.caFile },
    // app.test, the sample app's name, is on this machine: it receives the app's notices and the webhook's events;
    // so is idp.test, the identity provider of the single sign-on connection.
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  try {
    sample = await startSampleApp(ca, server.url);
    upstream = await startOidcUpstream(ca);
    browser = await launchChromium();
    const signedIn = await signIn(server.url, ADMIN.email, ADMIN.password);
    platform = signedIn.api;
    const operatorId: string = signedIn.login.organization.id;

    // A tenant of the platform (its page), and the operator organization (the platform admin's current one) with
    // a member, a pending invitation, an API key, a webhook with a delivery, a product it subscribes to with the
    // member seated, an OAuth client and an installed app.
    tenant = await createTenant(server.url, platform, 'Narrow Screens Tenant With A Long Name');
    ids.organization = tenant.id;
    member = await addPerson(server.url, platform, operatorId, 'member', 'narrow-member');
    ids.member = member.id;
    ids.invitationToken = ok(
      await platform.post(`/v1/organizations/${operatorId}/invitations`, {
        email: 'invitee-with-a-long-address@example.test',
        role: 'admin',
      }),
      201,
    ).token;
    ids.apiKey = ok(
      await platform.post('/api/v1/api-keys', { name: 'Billing server in the Frankfurt region', role: 'admin' }),
      201,
    ).id;
    const webhook = ok(
      await platform.post('/api/v1/webhooks', {
        url: sample.url('/hooks/a/rather/long/path/for/tessera/events'),
        events: ['member.added', 'subscription.created', 'api_key.created'],
        description: 'The billing system',
      }),
      201,
    );
    ids.webhook = webhook.id;
    ok(await platform.post(`/api/v1/webhooks/${webhook.id}/test`, { event: 'member.added' }), 202);
    const product = ok(
      await platform.post('/v1/products', {
        name: 'Analytics Suite',
        slug: 'analytics-suite',
        description: 'Reports and dashboards for every team',
        features: ['export', 'dashboards', 'alerts'],
      }),
      201,
    );
    const subscription = ok(
      await platform.post('/v1/subscriptions', {
        organization_id: operatorId,
        product_id: product.id,
        total_seats: 5,
        price_per_seat: 12.5,
        billing_cycle: 'monthly',
        status: 'active',
      }),
      201,
    );
    ids.subscription = subscription.id;
    ok(await platform.post(`/api/v1/subscriptions/${subscription.id}/seats`, { user_id: member.id }), 201);
    ids.client = (
      await registerClient(platform, {
        name: 'Customer dashboard',
        description: 'Where customers read their invoices',
        redirect_uris: ['https://dashboard.example.test/oauth/callback/with/a/long/path'],
        allowed_scopes: ['openid', 'email', 'profile'],
      })
    ).id;
    // One client asks the member's consent on the page; the member allowed another already (a connected app).
    consentClient = await registerClient(platform, {
      name: 'Team notes',
      description: 'Notes for the whole team',
      redirect_uris: ['http://localhost:9/cb'],
      allowed_scopes: ['openid', 'email', 'profile'],
    });
    const connected = await registerClient(platform, {
      name: 'Time tracker',
      redirect_uris: ['http://localhost:9/cb'],
      allowed_scopes: ['openid', 'email', 'profile'],
    });
    const session = await sessionOf(server.url, member);
    await decideConsent(server.url, session, await authorize(server.url, session, authorizeParams(connected)));
    const app = ok(
      await platform.post('/api/v1/apps', {
        name: 'Sample CRM',
        description: 'Customers, in sync',
        webhook_url: sample.url('/hooks'),
        redirect_uris: [sample.url('/callback')],
        scopes: ['openid', 'email', 'profile'],
        homepage_url: 'https://app.test/',
      }),
      201,
    );
    sample.setSigningSecret(app.signing_secret);
    ok(await platform.post(`/api/v1/apps/${app.id}/install`), 201);
    ids.mail = await waitFor(async () => {
      const mails: { id: string; html: string | null }[] = ok(await platform.get('/api/v1/mails'), 200).mails;
      return mails.find((m) => m.html !== null)?.id;
    });
    await waitFor(async () =>
      ok(await platform.get(`/api/v1/webhooks/${webhook.id}/deliveries`), 200).deliveries.length ? true : undefined,
    );
    // Single sign-on: a domain waiting for its TXT record, an OpenID Connect connection, and the result of the
    // platform admin's test sign-in through it (for the admin who ran it only: their session's cookie).
    ok(
      await platform.post('/api/v1/domains', { domain: 'a-rather-long-subdomain.narrow-screens-tenant.example' }),
      201,
    );
    const connection = ok(
      await platform.post('/api/v1/connections', {
        type: 'oidc',
        name: 'Operator Entra ID',
        issuer: upstream.issuer,
        client_id: upstream.clientId,
        client_secret: upstream.clientSecret,
        domains: [],
      }),
      201,
    );
    ids.ssoConnection = connection.id;
    upstream.redirectUris.add(connection.callback_url);
    upstream.addAccount({
      sub: 'narrow-1',
      email: 'someone-with-a-long-address@narrow-screens-tenant.example',
      email_verified: true,
      name: 'Someone',
      groups: ['a-rather-long-group-name-from-the-directory'],
    });
    const jar: CookieJar = new Map([[new URL(server.url).host, new Map([['tessera_session', signedIn.login.token]])]]);
    const tested = await ssoSignInThroughOidc(server.url, connection.id, ca, { query: { test: '1' }, jar });
    ids.ssoTest = new URL(tested.location, server.url).pathname.split('/').at(-1)!;
    // Platform-wide sign-in: the member connected one provider (its row on /portal/security) and not the other
    // (its Connect link).
    const social = ok(
      await platform.post('/api/v1/connections', {
        type: 'oidc',
        platform: true,
        name: 'Google Workspace',
        issuer: upstream.issuer,
        client_id: upstream.clientId,
        client_secret: upstream.clientSecret,
      }),
      201,
    );
    upstream.redirectUris.add(social.callback_url);
    ok(
      await platform.post('/api/v1/connections', {
        type: 'github',
        platform: true,
        name: 'GitHub',
        client_id: 'Iv1.narrow-screens',
        client_secret: 'a GitHub client secret',
      }),
      201,
    );
    upstream.addAccount({
      sub: 'narrow-member',
      email: 'narrow-member-elsewhere@mail.example',
      email_verified: true,
      name: 'Narrow Member',
    });
    upstream.signInAs('narrow-member');
    const memberJar: CookieJar = new Map([[new URL(server.url).host, new Map([['tessera_session', member.token]])]]);
    await ssoSignInThroughOidc(server.url, social.id, ca, { query: { link: '1' }, jar: memberJar });
    ids.ssoIdentity = ok(
      await member.api.post('/graphql', { query: '{ mySsoIdentities { id } }' }),
      200,
    ).data.mySsoIdentities[0].id;
    // Directory provisioning: a token that provisioned someone (and was refused the same person again), a revoked
    // one, and groups that give a role and the subscription's seats.
    const scimToken = ok(
      await platform.post('/api/v1/scim-tokens', { name: 'Entra ID for the whole company, production tenant' }),
      201,
    );
    ids.scimToken = scimToken.id;
    const directory = client(server.url, { token: scimToken.token });
    const scimUser = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'someone-provisioned-with-a-long-address@narrow-screens-tenant.example',
      active: true,
    };
    ok(await directory.post('/scim/v2/Users', scimUser), 201);
    ok(await directory.post('/scim/v2/Users', scimUser), 409);
    const revoked = ok(await platform.post('/api/v1/scim-tokens', { name: 'Okta trial' }), 201);
    ok(await platform.delete(`/api/v1/scim-tokens/${revoked.id}`), 204);
    ok(
      await platform.post('/api/v1/directory/group-mappings', {
        group: 'Engineering leads of the platform team',
        role: 'admin',
      }),
      201,
    );
    ids.groupMapping = ok(
      await platform.post('/api/v1/directory/group-mappings', { group: 'Analysts', subscription_id: subscription.id }),
      201,
    ).id;
  } catch (error) {
    await browser?.close();
    await server.stop();
    await sample?.close();
    await upstream?.close();
    ca.remove();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await sample?.close();
  await upstream?.close();
  ca?.remove();
});

function authorizeParams(c: RegisteredClient): Record<string, string> {
  return {
    client_id: c.client_id,
    redirect_uri: c.redirect_uris[0]!,
    response_type: 'code',
    scope: 'openid email',
    state: 's',
    nonce: 'n',
  };
}

type Visitor = 'admin' | 'member' | 'anonymous';

interface Visit {
  /** The route as its folder names it: /admin/clients/[id]. */
  route: string;
  /** What the browser opens (after the ids are known). */
  url: () => string;
  as: Visitor;
  /** Where the browser ends when the page is only ever a redirect. */
  landsOn?: string;
  /** What the visit shows besides the page itself (a panel it opens). */
  showing?: string;
  /** An element only that state of the page has, to be sure the visit shows it. */
  marker?: string;
}

const visit = (route: string, as: Visitor, url: () => string = () => route, landsOn?: string): Visit => ({
  route,
  url,
  as,
  landsOn,
});
/** The page at `route` with a panel opened by its query (?edit=<id>): the panel's form is checked too. */
const panel = (route: string, showing: string, query: () => string): Visit => ({
  route,
  url: () => `${route}?${query()}`,
  as: 'admin',
  showing,
});

const VISITS: Visit[] = [
  visit('/admin/dashboard', 'admin'),
  visit('/admin/products', 'admin'),
  visit('/admin/subscriptions', 'admin'),
  visit('/admin/subscriptions/[id]', 'admin', () => `/admin/subscriptions/${ids.subscription}`),
  visit('/admin/clients', 'admin'),
  visit('/admin/clients/[id]', 'admin', () => `/admin/clients/${ids.client}`),
  visit('/admin/apps', 'admin'),
  visit('/admin/audit-logs', 'admin'),
  visit('/admin/organizations', 'admin'),
  visit('/admin/organizations/[id]', 'admin', () => `/admin/organizations/${ids.organization}`),
  visit('/admin/settings', 'admin'),
  visit('/admin/settings/members', 'admin'),
  panel('/admin/settings/members', 'removing a member', () => `remove=${ids.member}`),
  visit('/admin/settings/api-keys', 'admin'),
  panel('/admin/settings/api-keys', 'revoking a key', () => `revoke=${ids.apiKey}`),
  visit('/admin/settings/webhooks', 'admin'),
  panel('/admin/settings/webhooks', 'editing a webhook', () => `edit=${ids.webhook}`),
  panel('/admin/settings/webhooks', 'sending a test event', () => `test=${ids.webhook}`),
  panel('/admin/settings/webhooks', 'deleting a webhook', () => `delete=${ids.webhook}`),
  visit('/admin/settings/webhooks/[id]', 'admin', () => `/admin/settings/webhooks/${ids.webhook}`),
  visit('/admin/settings/sso', 'admin'),
  panel('/admin/settings/sso', 'editing a connection', () => `edit=${ids.ssoConnection}`),
  panel('/admin/settings/sso', 'deleting a connection', () => `delete=${ids.ssoConnection}`),
  visit('/admin/settings/sso/test/[id]', 'admin', () => `/admin/settings/sso/test/${ids.ssoTest}`),
  visit('/admin/settings/directory', 'admin'),
  panel('/admin/settings/directory', 'revoking a token', () => `revoke=${ids.scimToken}`),
  panel('/admin/settings/directory', 'deleting a group mapping', () => `delete=${ids.groupMapping}`),
  visit('/admin/settings/mail', 'admin'),
  visit('/admin/settings/mail/[id]', 'admin', () => `/admin/settings/mail/${ids.mail}`),
  visit('/logout', 'admin'),
  // Only ever a redirect: a visit goes home.
  visit('/switch-organization', 'admin', () => '/switch-organization', '/portal/dashboard'),
  visit('/portal/dashboard', 'member'),
  visit('/portal/apps', 'member'),
  visit('/portal/oauth-clients', 'member'),
  visit('/portal/security', 'member'),
  // Back from connecting a provider: the notice; and a connected sign-in's disconnect confirmation.
  { ...visit('/portal/security', 'member', () => '/portal/security?linked=1'), showing: 'a provider just connected' },
  {
    ...visit('/portal/security', 'member', () => `/portal/security?disconnect=${ids.ssoIdentity}`),
    showing: 'disconnecting a connected sign-in',
  },
  visit('/portal/subscriptions', 'member'),
  visit('/consent', 'member', () => `/oauth/authorize?${new URLSearchParams(authorizeParams(consentClient))}`),
  visit('/device', 'member'),
  visit('/login', 'anonymous'),
  // The second step, as an application's login_hint opens it: the password of an address no provider serves.
  {
    ...visit('/login', 'anonymous', () => `/login?${new URLSearchParams({ login_hint: member.email })}`),
    showing: 'the password step',
    marker: 'main input[type=password]',
  },
  visit('/forgot-password', 'anonymous'),
  visit('/reset-password', 'anonymous', () => '/reset-password?token=x'),
  visit('/verify-email', 'anonymous', () => '/verify-email?token=x'),
  visit('/invitations/accept', 'anonymous', () => '/invitations/accept?token=x'),
  // The same page with an invitation that can be accepted: its form.
  {
    ...visit(
      '/invitations/accept',
      'anonymous',
      () => `/invitations/accept?token=${encodeURIComponent(ids.invitationToken)}`,
    ),
    showing: 'a pending invitation',
  },
];

/** Every page of the portal: the folders under portal/src/routes holding a +page.svelte, groups left out. */
async function pageRoutes(dir = routes): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await pageRoutes(full)));
    else if (entry.name === '+page.svelte') {
      const route = `/${path
        .relative(routes, dir)
        .split(path.sep)
        .filter((part) => part && !/^\(.*\)$/.test(part))
        .join('/')}`;
      found.push(route);
    }
  }
  return found.sort();
}

/** One signed-in (or signed-out) browser per visitor and screen, opened once. */
const opened = new Map<string, Promise<Page>>();
function browserOf(as: Visitor, screen: BrowserContextOptions): Promise<Page> {
  const key = `${as} ${screen.viewport?.width}`;
  let page = opened.get(key);
  if (!page) {
    page =
      as === 'admin'
        ? signedInPage(browser, server.url, ADMIN, screen)
        : as === 'member'
          ? signedInPage(browser, server.url, { email: member.email, password: PASSWORD }, screen)
          : freshPage(browser, server.url, screen);
    opened.set(key, page);
  }
  return page;
}
const phone = (as: Visitor) => browserOf(as, PHONE);

/**
 * What sticks out: a page wider than the screen, and each visible control of <main> off the screen sideways
 * outside a scrolling frame. Those inside one are marked, to be scrolled into view.
 */
function overflowIn(width: number): { pageWidth: number; outside: string[]; inScroller: number } {
  const named = (el: Element) =>
    `<${el.tagName.toLowerCase()}> “${(el.textContent || el.getAttribute('aria-label') || el.getAttribute('name') || '').trim().slice(0, 60)}”`;
  const outside: string[] = [];
  let inScroller = 0;
  for (const el of document.querySelectorAll(
    'main :is(a[href], button, input:not([type=hidden]), select, textarea, summary)',
  )) {
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if (box.left >= -0.5 && box.right <= width + 0.5) continue;
    let scroller: Element | null = el.parentElement;
    while (scroller && scroller !== document.body) {
      const { overflowX } = getComputedStyle(scroller);
      if ((overflowX === 'auto' || overflowX === 'scroll') && scroller.scrollWidth > scroller.clientWidth) break;
      scroller = scroller.parentElement;
    }
    if (scroller && scroller !== document.body) {
      // A frame that shows it scrolls: a border, or the shadows of .table-wrap at the edge with more.
      const frame = getComputedStyle(scroller);
      if (parseFloat(frame.borderLeftWidth) === 0 && frame.backgroundImage === 'none')
        outside.push(`${named(el)} in a frame with no sign that it scrolls`);
      el.setAttribute('data-narrow-scrolled', String(inScroller++));
    } else {
      outside.push(`${named(el)} at ${Math.round(box.left)}..${Math.round(box.right)} px`);
    }
  }
  return { pageWidth: document.documentElement.scrollWidth, outside, inScroller };
}

/**
 * The cells that stack on a phone without their column's name: a cell of a named column (its header's words, an
 * actions column aside) must carry it as data-label, which app.css shows above the cell.
 */
function unlabelledCells(): string[] {
  const found: string[] = [];
  for (const table of document.querySelectorAll('main table')) {
    const headers = [...table.querySelectorAll('thead th')].map((th) =>
      th.querySelector('.visually-hidden') ? '' : (th.textContent ?? '').trim(),
    );
    for (const row of table.querySelectorAll('tbody tr')) {
      [...row.children].forEach((cell, i) => {
        const header = headers[i];
        if (cell.tagName !== 'TD' || cell.hasAttribute('colspan') || !header || header === 'Actions') return;
        if (!cell.getAttribute('data-label'))
          found.push(
            `a cell of “${header}” in ${table.closest('section')?.querySelector('h2')?.textContent ?? 'a table'}`,
          );
      });
    }
  }
  return [...new Set(found)];
}

/** The page's axe-core violations of serious or critical impact, each with the elements it names. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source });
  const results = await page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
  );
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help}\n${v.nodes.map((n) => `    ${n.target.join(' ')}: ${n.failureSummary?.replace(/\n/g, ' ')}`).join('\n')}`,
    );
}

/**
 * Tabs through the whole page and returns what went wrong: a visible form control of <main> that Tab never reaches
 * or reaches out of the order of the page, and a stop whose focus is not outlined.
 */
async function keyboardProblems(page: Page): Promise<string[]> {
  await page.evaluate(() => {
    // Tab starts from the top of the page, not from a field the page focused on arrival (the password of the sign-in
    // page's second step): a blurred element stays the browser's starting point, a focused one out of the Tab order
    // at the very top moves it there.
    const start = document.createElement('span');
    start.tabIndex = -1;
    document.body.prepend(start);
    start.focus();
    window.scrollTo(0, 0);
    const w = window as unknown as { tabbed: string[]; outlines: string[] };
    w.tabbed = [];
    w.outlines = [];
    let n = 0;
    document.addEventListener('focusin', (event) => {
      const el = event.target as HTMLElement;
      el.dataset.tabStop ??= String(n++);
      w.tabbed.push(el.dataset.tabStop);
      const style = getComputedStyle(el);
      const outlined =
        (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none';
      if (!outlined)
        w.outlines.push(
          `<${el.tagName.toLowerCase()}> “${(el.textContent || el.getAttribute('name') || '').trim().slice(0, 60)}”`,
        );
    });
  });
  // Round the page until a stop comes again.
  for (let pressed = 0; pressed < 600; pressed += 10) {
    for (let i = 0; i < 10; i++) await page.keyboard.press('Tab');
    const around = await page.evaluate(() => {
      const { tabbed } = window as unknown as { tabbed: string[] };
      return new Set(tabbed).size < tabbed.length;
    });
    if (around) break;
  }
  return page.evaluate(() => {
    const w = window as unknown as { tabbed: string[]; outlines: string[] };
    const problems = w.outlines.map((el) => `focus not visible on ${el}`);
    const label = (el: HTMLElement) =>
      `<${el.tagName.toLowerCase()}${el.getAttribute('name') ? ` name=${el.getAttribute('name')}` : ''}> “${(el.textContent || '').trim().slice(0, 40)}”`;
    // A group of radio buttons is one Tab stop, its checked button (or its first, none checked); the arrow keys move
    // within it (HTML's standard keyboard behaviour).
    const radioGroupStop = (el: HTMLElement) => {
      if (!(el instanceof HTMLInputElement) || el.type !== 'radio') return true;
      const group = [...(el.form ?? document).querySelectorAll<HTMLInputElement>('input[type=radio]')].filter(
        (r) => r.name === el.name,
      );
      return el === (group.find((r) => r.checked) ?? group[0]);
    };
    const fields = [
      ...document.querySelectorAll<HTMLElement>('main form :is(input:not([type=hidden]), select, textarea, button)'),
    ].filter(
      (el) =>
        el.tabIndex >= 0 &&
        !(el as HTMLButtonElement).disabled &&
        el.checkVisibility({ checkVisibilityCSS: true }) &&
        radioGroupStop(el),
    );
    const reached = new Set(w.tabbed);
    for (const el of fields)
      if (!el.dataset.tabStop || !reached.has(el.dataset.tabStop)) problems.push(`Tab never reaches ${label(el)}`);
    // The fields in the order Tab first reached them: the order of the page.
    const first = [...new Set(w.tabbed)];
    const order = fields
      .filter((el) => el.dataset.tabStop)
      .sort((a, b) => first.indexOf(a.dataset.tabStop!) - first.indexOf(b.dataset.tabStop!));
    order.forEach((el, i) => {
      if (el !== fields.filter((f) => f.dataset.tabStop)[i]) problems.push(`Tab reaches ${label(el)} out of order`);
    });
    return problems;
  });
}

describe('every page on a 375 px wide screen', () => {
  test('the pages visited are every page of the portal', async () => {
    expect([...new Set(VISITS.map((v) => v.route))].sort()).toEqual(await pageRoutes());
  });

  test.for(VISITS.map((v) => [`${v.route} (${v.as}${v.showing ? `, ${v.showing}` : ''})`, v] as const))(
    '%s',
    async ([, v]) => {
      // given the visitor's phone on the page
      const page = await phone(v.as);
      const response = await page.goto(v.url());
      expect(response?.status(), `GET ${v.url()}`).toBeLessThan(400);
      const at = new URL(page.url()).pathname;
      expect(at).toBe(v.landsOn ?? v.route.replace('[id]', v.url().split('/').at(-1)!.split('?')[0]!));
      if (v.marker) expect(await page.locator(v.marker).count(), `${at}: ${v.showing}`).toBeGreaterThan(0);
      // every folded part opened, so that what it holds is checked too
      await page.evaluate(() =>
        document.querySelectorAll('main details').forEach((d) => ((d as HTMLDetailsElement).open = true)),
      );

      await mkdir(screenshots, { recursive: true });
      await page.screenshot({
        path: new URL(
          `${v.route.slice(1).replace(/[/[\]]+/g, '-') || 'home'}-${v.as}-${VISITS.indexOf(v)}.png`,
          screenshots,
        ).pathname,
        fullPage: true,
      });

      // then nothing sticks out sideways, and what sits in a scrolling frame scrolls into view
      const overflow = await page.evaluate(overflowIn, WIDTH);
      expect(overflow.pageWidth, `${at} is wider than the screen`).toBeLessThanOrEqual(WIDTH);
      expect(overflow.outside, `${at}: controls off the screen`).toEqual([]);
      expect(await page.evaluate(unlabelledCells), `${at}: cells without their column's name`).toEqual([]);
      for (let i = 0; i < overflow.inScroller; i++) {
        const control = page.locator(`[data-narrow-scrolled="${i}"]`);
        await control.scrollIntoViewIfNeeded();
        const box = (await control.boundingBox())!;
        expect(box.x, `${at}: control ${i} scrolled into view`).toBeGreaterThanOrEqual(-0.5);
        expect(box.x + box.width, `${at}: control ${i} scrolled into view`).toBeLessThanOrEqual(WIDTH + 0.5);
      }

      // and axe-core finds nothing serious
      expect(await seriousViolations(page), `${at}: axe-core`).toEqual([]);

      // and Tab reaches every field and button of its forms in order, the focus outlined
      expect(await keyboardProblems(page), `${at}: keyboard`).toEqual([]);
    },
  );
});

// The same pages on a desktop screen, where tables are tables again: axe-core finds nothing serious there either.
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 900 }, bypassCSP: true };

describe('every page on a 1280 px wide screen', () => {
  test.for(VISITS.map((v) => [`${v.route} (${v.as}${v.showing ? `, ${v.showing}` : ''})`, v] as const))(
    '%s',
    async ([, v]) => {
      const page = await browserOf(v.as, DESKTOP);
      const response = await page.goto(v.url());
      expect(response?.status(), `GET ${v.url()}`).toBeLessThan(400);
      const at = new URL(page.url()).pathname;
      expect(at).toBe(v.landsOn ?? v.route.replace('[id]', v.url().split('/').at(-1)!.split('?')[0]!));
      if (v.marker) expect(await page.locator(v.marker).count(), `${at}: ${v.showing}`).toBeGreaterThan(0);
      await page.evaluate(() =>
        document.querySelectorAll('main details').forEach((d) => ((d as HTMLDetailsElement).open = true)),
      );
      expect(await seriousViolations(page), `${at}: axe-core`).toEqual([]);
    },
  );
});

/** Where the focus is after a refused submission: its role, its text, and whether it is on the screen. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    const box = el.getBoundingClientRect();
    return {
      role: el.getAttribute('role'),
      text: el.textContent?.trim() ?? '',
      onScreen: box.top >= 0 && box.bottom <= innerHeight,
    };
  });

describe('a refused submission on a phone', () => {
  test('brings its error into view and gives it the focus, also when the form is far below the error', async () => {
    // given the platform admin at the bottom of the products page, with a slug the catalog has already
    const page = await phone('admin');
    await page.goto('/admin/products');
    const create = page.getByRole('region', { name: 'Add a product' });
    await create.getByLabel('Name').fill('Analytics again');
    await create.getByLabel('Slug').fill('analytics-suite');

    // when they submit it with the keyboard
    await create.getByRole('button', { name: 'Add product' }).focus();
    await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.keyboard.press('Enter')]);

    // then the error at the top of the page is on the screen and has the focus, which screen readers read out
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'alert');
    const error = await focused(page);
    expect(error).toMatchObject({ role: 'alert', onScreen: true });
    expect(error.text).not.toBe('');

    // and a second refusal of the same form takes the focus again, after the field was left
    await create.getByLabel('Name').focus();
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      create.getByRole('button', { name: 'Add product' }).click(),
    ]);
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'alert');
    await expect(focused(page)).resolves.toMatchObject({ role: 'alert', onScreen: true });
  });

  test('on the sign-in page too', async () => {
    const page = await freshPage(browser, server.url, PHONE);
    await page.goto('/login');
    await continueWithEmail(page, member.email);
    await page.getByLabel('Password').fill('not the password');
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'alert');
    await expect(focused(page)).resolves.toMatchObject({
      role: 'alert',
      onScreen: true,
      text: expect.stringContaining('Invalid email or password'),
    });
    await page.context().close();
  });
});

describe('notices', () => {
  /** Every .svelte file under the routes, with its text. */
  async function svelteFiles(dir = routes): Promise<{ file: string; text: string }[]> {
    const found: { file: string; text: string }[] = [];
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) found.push(...(await svelteFiles(full)));
      else if (entry.name.endsWith('.svelte'))
        found.push({ file: path.relative(routes, full), text: await readFile(full, 'utf8') });
    }
    return found;
  }

  test('look the same on every page: success is <p class="done" role="status">, an error is FormError', async () => {
    const problems: string[] = [];
    for (const { file, text } of await svelteFiles()) {
      for (const tag of text.match(/<[a-z]+\b[^>]*role="status"[^>]*>/g) ?? [])
        if (!/class="done"/.test(tag)) problems.push(`${file}: ${tag}`);
      for (const tag of text.match(/<[a-z]+\b[^>]*role="alert"[^>]*>/g) ?? [])
        problems.push(`${file}: ${tag} (use FormError)`);
      for (const tag of text.match(/<[a-z]+\b[^>]*class="(notice|error)"[^>]*>/g) ?? [])
        problems.push(`${file}: ${tag}`);
    }
    expect(problems).toEqual([]);
  });
});
