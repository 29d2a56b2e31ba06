import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { registerClient, tokenRequest } from '../helpers/oauth.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { proveDomain } from '../helpers/sso.ts';

// /admin/audit-logs: the audit trail, newest first, 50 a page, failures marked, filters, actors by name and e-mail,
// and CSV export, in headless Chromium.

const screenshots = new URL('../.tmp/', import.meta.url);

let server: TestServer;
let browser: Browser;
/** The platform admin's REST client: ADMIN owns the operator organization, its current one. */
let admin: Client;
let adminId: string;
let operatorId: string;
let tenant: Tenant;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { DNS_SERVERS: dns.address } });
  try {
    browser = await launchChromium();
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    adminId = (await admin.get('/api/v1/users/me')).body.id;
    operatorId = (await admin.get('/api/v1/orgs')).body.find((o: { role: string }) => o.role === 'owner').id;
    tenant = await createTenant(server.url, admin);
    // The tenant manages its people's accounts (their domain is its own), so their failed sign-ins are in its trail.
    await proveDomain(tenant.owner.api, dns, 'example.test');
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dns?.stop();
});

interface Row {
  id: string;
  action: string;
  outcome: string;
  targetId: string | null;
  failureMarked: boolean;
  cells: string[];
}

/** The audit table's rows as shown, top to bottom. */
function rows(page: Page): Promise<Row[]> {
  return page.getByTestId('audit-entry').evaluateAll((trs) =>
    trs.map((tr) => ({
      id: tr.getAttribute('data-id')!,
      action: tr.getAttribute('data-action')!,
      outcome: tr.getAttribute('data-outcome')!,
      targetId: tr.getAttribute('data-target-id'),
      failureMarked: tr.classList.contains('failure'),
      cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').replace(/\s+/g, ' ').trim()),
    })),
  );
}

/**
 * The audit trail as GraphQL gives it to the platform admin, newest first, every page: what the pages must show.
 * Without an organization, every organization's entries and the platform events.
 */
async function trail(organizationId?: string): Promise<{ id: string; createdAt: string }[]> {
  const entries: { id: string; createdAt: string }[] = [];
  let cursor: string | null = null;
  do {
    const reply: Reply = await admin.post('/graphql', {
      query:
        'query($org: String, $cursor: String) { auditLogs(organizationId: $org, limit: 100, cursor: $cursor) { items { id createdAt } nextCursor } }',
      variables: { org: organizationId ?? null, cursor },
    });
    if (!reply.body?.data) throw new Error(`auditLogs failed: ${JSON.stringify(reply.body)}`);
    entries.push(...reply.body.data.auditLogs.items);
    cursor = reply.body.data.auditLogs.nextCursor;
  } while (cursor);
  return entries;
}

/** The texts of what describes the field labelled `label` (aria-describedby), joined. */
const describedBy = (page: Page, label: string) =>
  page.getByLabel(label, { exact: true }).evaluate((el) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent?.trim() ?? '')
      .join(' '),
  );

/** A wrong password for `email`, sent with this user agent. */
const failSignIn = (email: string, userAgent: string) =>
  client(server.url).post('/api/v1/auth/login', { email, password: 'not the password' }, { 'user-agent': userAgent });

describe('admin: audit logs', () => {
  test('client management shows up newest first, with a failed client authentication marked', async () => {
    // given an OAuth client registered, refused once with a wrong secret, updated and deleted, in that order
    const client = await registerClient(admin, {
      name: 'Audited',
      redirect_uris: ['https://audited.example.com/cb'],
      allowed_scopes: ['openid'],
    });
    const refused = await tokenRequest(server.url, {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: 'tscs_wrong',
    });
    expect(refused.status).toBe(401);
    expect((await admin.patch(`/api/v1/oauth-clients/${client.id}`, { name: 'Audited v2' })).status).toBe(200);
    expect((await admin.delete(`/api/v1/oauth-clients/${client.id}`)).status).toBe(204);

    // when the owner opens the audit logs from the admin navigation
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/dashboard');
    await page.getByRole('navigation', { name: 'Administration' }).getByRole('link', { name: 'Audit logs' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/audit-logs');

    // then the page is there, with its columns
    await expect(page.title()).resolves.toBe('Audit logs · Tessera');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Audit logs');
    // (a platform admin sees every organization's entries, so which one each belongs to)
    await expect(page.getByRole('columnheader').allTextContents()).resolves.toEqual([
      'Time (UTC)',
      'Organization',
      'Action',
      'Outcome',
      'Actor',
      'Target',
      'IP address',
    ]);

    // and the client's entries are listed newest first
    const shown = await rows(page);
    const about = shown.filter((r) => r.targetId === client.id);
    expect(about.map((r) => `${r.action} ${r.outcome}`)).toEqual([
      'oauth_client.delete success',
      'oauth_client.update success',
      'oauth.client_auth failure',
      'oauth_client.create success',
    ]);
    const ids = shown.map((r) => r.id);
    expect(ids).toEqual([...ids].sort().reverse());

    // and the failure is marked as one, the successes are not
    const [deleted, , failed, created] = about;
    expect(failed!.failureMarked).toBe(true);
    expect(failed!.cells[3]).toBe('✕ failure');
    expect(created!.failureMarked).toBe(false);
    expect(created!.cells[3]).toBe('success');

    // and each row says when (UTC, to the second), where, who (by name and e-mail, not id), to what and from where
    const stored = (await trail(operatorId)).find((e) => e.id === created!.id)!;
    expect(created!.cells[0]).toBe(stored.createdAt.replace('T', ' ').slice(0, 19));
    expect(created!.cells[1]).toBe('Operator');
    expect(created!.cells[4]).toBe(`Administrator ${ADMIN.email} (you)`);
    expect(created!.cells[4]).not.toContain(adminId);
    expect(created!.cells[5]).toBe(`oauth_client ${client.id}`);
    expect(created!.cells[6]).toMatch(/127\.0\.0\.1/);
    expect(deleted!.cells[4]).toBe(`Administrator ${ADMIN.email} (you)`);
    expect(failed!.cells[4]).toBe('Anonymous');

    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-audit.png', screenshots).pathname, fullPage: true });
    await page.context().close();
  });

  test('50 entries a page, Older entries goes on from the last one shown', async () => {
    // given more than a page of entries: a client updated sixty times
    const client = await registerClient(admin, {
      name: 'Busy',
      redirect_uris: ['https://busy.example.com/cb'],
      allowed_scopes: ['openid'],
    });
    for (let i = 0; i < 60; i++) {
      expect((await admin.patch(`/api/v1/oauth-clients/${client.id}`, { description: `change ${i}` })).status).toBe(
        200,
      );
    }
    // (signing in leaves an entry too)
    const page = await signedInPage(browser, server.url, ADMIN);
    const expected = (await trail()).map((e) => e.id);
    expect(expected.length).toBeGreaterThan(60);

    // when the owner opens the audit logs
    await page.goto('/admin/audit-logs');

    // then the newest fifty are shown, and a link to the older ones
    expect((await rows(page)).map((r) => r.id)).toEqual(expected.slice(0, 50));
    await expect(page.getByRole('link', { name: 'Newest entries' }).count()).resolves.toBe(0);

    // when they follow it
    await page.getByRole('link', { name: 'Older entries' }).click();
    await page.waitForURL((url) => url.searchParams.get('cursor') === expected[49]);

    // then the next fifty are shown, and a way back
    expect((await rows(page)).map((r) => r.id)).toEqual(expected.slice(50, 100));
    await expect(page.getByRole('link', { name: 'Older entries' }).count()).resolves.toBe(
      expected.length > 100 ? 1 : 0,
    );
    await page.getByRole('link', { name: 'Newest entries' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/audit-logs' && !url.search);
    expect((await rows(page))[0]!.id).toBe(expected[0]);
    await page.context().close();
  });

  test("an organization's admins see only its own trail", async () => {
    // given a change in the operator organization
    const client = await registerClient(admin, {
      name: 'Operator Secret',
      redirect_uris: ['https://op.example.com/cb'],
      allowed_scopes: ['openid'],
    });

    // when the tenant's admin opens the audit logs
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    const response = await page.goto('/admin/audit-logs');

    // then they see their organization's trail and nothing of the operator's
    expect(response?.status()).toBe(200);
    await expect(page.locator('.intro').textContent()).resolves.toContain(tenant.name);
    const shown = await rows(page);
    expect(shown.map((r) => r.targetId)).not.toContain(client.id);
    const theirs = (await trail(tenant.id)).map((e) => e.id);
    expect(shown.map((r) => r.id)).toEqual(theirs.slice(0, 50));
    await page.context().close();
  });

  test('filters with a GET form: failed sign-ins on a member, shown by name and e-mail', async () => {
    // given two wrong passwords for the tenant's member, and one for an e-mail no one has
    expect((await failSignIn(tenant.member.email, 'filter-test/1')).status).toBe(401);
    expect((await failSignIn(tenant.member.email, 'filter-test/2')).status).toBe(401);
    expect((await failSignIn('ghost@example.test', 'filter-test/3')).status).toBe(401);

    // when the tenant's admin filters by the member's e-mail and failures
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await page.goto('/admin/audit-logs');
    await page.getByLabel('Actor').fill(tenant.member.email);
    await page.getByLabel('Outcome').selectOption('failure');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('outcome') === 'failure');

    // then the address carries the filters, the form keeps them, and only those attempts are listed
    const url = new URL(page.url());
    expect(url.searchParams.get('actor')).toBe(tenant.member.email);
    await expect(page.getByLabel('Actor').inputValue()).resolves.toBe(tenant.member.email);
    const shown = await rows(page);
    expect(shown.map((r) => `${r.action} ${r.outcome}`)).toEqual(['auth.login failure', 'auth.login failure']);
    // and the actor is the member by name and e-mail, never the bare id
    for (const row of shown) {
      expect(row.cells[3]).toBe(`member ${tenant.member.email}`);
      expect(row.cells[3]).not.toContain(tenant.member.id);
    }
    // and the unknown e-mail is not theirs to see
    await page.getByLabel('Actor').fill('ghost@example.test');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((u) => u.searchParams.get('actor') === 'ghost@example.test');
    expect(await rows(page)).toEqual([]);
    await expect(page.getByText('No entries match these filters.').count()).resolves.toBe(1);

    // when the filter is malformed, the form says which field, beside it
    await page.goto('/admin/audit-logs?from=yesterday');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('correct the filters marked above');
    await expect(describedBy(page, 'From (UTC)')).resolves.toMatch(/^From must be an RFC 3339 date-time with a zone/);
    await page.context().close();

    // while the platform admin sees the unknown e-mail as a platform event
    const platformPage = await signedInPage(browser, server.url, ADMIN);
    await platformPage.goto('/admin/audit-logs?actor=ghost%40example.test');
    const ghost = await rows(platformPage);
    expect(ghost).toHaveLength(1);
    expect(ghost[0]!.cells[1]).toBe('Platform');
    expect(ghost[0]!.cells[4]).toBe('Anonymous');
    await platformPage.context().close();
  });

  test('exports the filtered entries as CSV, safe to open in a spreadsheet', async () => {
    // given failed sign-ins whose user agents look like spreadsheet formulas
    for (const agent of ['=HYPERLINK("http://evil.example","x")', '+1+2', '-3+4', '@SUM(1)']) {
      expect((await failSignIn(tenant.owner.email, agent)).status).toBe(401);
    }
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await page.goto(
      `/admin/audit-logs?action=auth.login&outcome=failure&actor=${encodeURIComponent(tenant.owner.email)}`,
    );
    const shown = await rows(page);
    expect(shown).toHaveLength(4);

    // when they export
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Export CSV' }).click(),
    ]);

    // then a CSV file comes down with the filtered entries, newest first
    expect(download.suggestedFilename()).toMatch(/^audit-log-\d{4}-\d{2}-\d{2}\.csv$/);
    const href = await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href');
    expect(href).toBe(
      `/admin/audit-logs/export?actor=${encodeURIComponent(tenant.owner.email)}&action=auth.login&outcome=failure`,
    );
    const reply = await page.request.get(href!);
    expect(reply.status()).toBe(200);
    expect(reply.headers()['content-type']).toMatch(/^text\/csv/);
    expect(reply.headers()['content-disposition']).toMatch(/^attachment; filename="audit-log-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = (await reply.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'time_utc,organization_id,organization,action,outcome,actor_type,actor_name,actor_email,actor_id,target_type,target_id,ip,user_agent,details',
    );
    expect(lines).toHaveLength(5);
    expect(lines.slice(1).every((l) => l.includes(`,auth.login,failure,User,owner,${tenant.owner.email},`))).toBe(true);
    // and no cell starts a formula: each is prefixed with ', and quoted where it holds a comma or quote
    expect(lines[1]).toContain(`,'@SUM(1),`);
    expect(lines[2]).toContain(`,'-3+4,`);
    expect(lines[3]).toContain(`,'+1+2,`);
    expect(lines[4]).toContain(`,"'=HYPERLINK(""http://evil.example"",""x"")",`);
    expect(lines.slice(1).map((l) => l.slice(0, 19).replace('T', ' '))).toEqual(shown.map((r) => r.cells[0]));

    // and a bad filter is the client's mistake
    expect((await page.request.get('/admin/audit-logs/export?outcome=maybe')).status()).toBe(400);
    await page.context().close();

    // and the platform admin's whole trail, many pages of the API, streams out entire
    for (let i = 0; i < 120; i++)
      expect((await admin.patch(`/v1/organizations/${operatorId}`, { name: 'Operator' })).status).toBe(200);
    const platformPage = await signedInPage(browser, server.url, ADMIN);
    const everything = await platformPage.request.get('/admin/audit-logs/export');
    const ids = (await everything.text())
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((l) => l.slice(0, 24));
    const expected = await trail();
    expect(expected.length).toBeGreaterThan(200);
    expect(ids).toEqual(expected.map((e) => e.createdAt.slice(0, 24)));
    await platformPage.context().close();
  });

  test('the organization filter lists every organization the viewer may read, by name, and a To before From is refused beside To', async () => {
    // given every organization, as GraphQL lists them to the platform admin
    const all: { id: string; name: string }[] = [];
    let cursor: string | null = null;
    do {
      const reply: Reply = await admin.post('/graphql', {
        query: 'query($c: String) { organizations(limit: 100, cursor: $c) { items { id name } nextCursor } }',
        variables: { c: cursor },
      });
      all.push(...reply.body.data.organizations.items);
      cursor = reply.body.data.organizations.nextCursor;
    } while (cursor);
    expect(all.length).toBeGreaterThan(1);

    // when the platform admin opens the audit logs
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/audit-logs');
    // then the filter offers every organization by name, after "Every organization"
    // (#f-organization: the header's organization switcher is labelled Organization too)
    const filter = (p: Page) => p.locator('#f-organization');
    const options = () => filter(page).locator('option').allTextContents();
    const byName = (list: { name: string }[]) =>
      list.map((o) => o.name).sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }));
    await expect(options()).resolves.toEqual(['Every organization', ...byName(all)]);

    // when they choose the tenant and filter
    await filter(page).selectOption({ label: tenant.name });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('organization_id') === tenant.id);
    // then the filter names the tenant (not its id), and the entries are the tenant's
    await expect(filter(page).locator('option:checked').textContent()).resolves.toBe(tenant.name);
    await expect(page.locator('.intro').textContent()).resolves.toContain(tenant.name);
    expect((await rows(page)).map((r) => r.id)).toEqual((await trail(tenant.id)).slice(0, 50).map((e) => e.id));

    // when To is before From
    await page.goto(`/admin/audit-logs?organization_id=${tenant.id}&from=2026-11-20&to=2026-11-19`);
    // then nothing is listed, and the service's reason is beside To, which it describes
    await expect(describedBy(page, 'To (UTC, inclusive)')).resolves.toBe('To must not be before from');
    await expect.poll(() => page.getByLabel('To (UTC, inclusive)').getAttribute('aria-invalid')).toBe('true');
    expect(await rows(page)).toEqual([]);
    await page.context().close();

    // given the tenant's admin, who also owns an organization of their own
    const own = await tenant.admin.api.post('/graphql', {
      query:
        'mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { __typename ... on Organization { id name } } }',
      variables: { i: { name: `Side project ${tenant.id.slice(-6)}` } },
    });
    const side = own.body.data.createOrganization;
    expect(side.__typename).toBe('Organization');
    // when they open the audit logs
    const theirs = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await theirs.goto('/admin/audit-logs');
    // then the filter offers the organizations they administer, the current one chosen, and no other
    await expect(filter(theirs).locator('option').allTextContents()).resolves.toEqual(
      byName([{ name: tenant.name }, side]),
    );
    await expect(filter(theirs).locator('option:checked').textContent()).resolves.toBe(tenant.name);
    // and choosing their other organization shows its trail
    await filter(theirs).selectOption({ label: side.name });
    await theirs.getByRole('button', { name: 'Filter' }).click();
    await theirs.waitForURL((url) => url.searchParams.get('organization_id') === side.id);
    await expect(theirs.locator('.intro').textContent()).resolves.toContain(side.name);
    expect((await rows(theirs)).map((r) => r.action)).toContain('organization.create');
    // while the operator organization is not theirs to read
    await theirs.goto(`/admin/audit-logs?organization_id=${operatorId}`);
    await expect(
      filter(theirs).evaluate((el) =>
        document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent?.trim(),
      ),
    ).resolves.toBe('Organization is unknown, or not yours to read');
    await theirs.context().close();
  });

  test('a member is refused, a signed-out visitor is sent to sign in', async () => {
    const member = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
    const response = await member.goto('/admin/audit-logs');
    expect(response?.status()).toBe(403);
    await expect(member.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');
    expect((await member.request.get('/admin/audit-logs/export')).status()).toBe(403);
    await member.context().close();

    const anonymous = await freshPage(browser, server.url);
    await anonymous.goto('/admin/audit-logs?cursor=x');
    const login = new URL(anonymous.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/admin/audit-logs?cursor=x');
    const exported = await anonymous.request.get('/admin/audit-logs/export', { maxRedirects: 0 });
    expect(exported.status()).toBe(303);
    expect(exported.headers().location).toMatch(/^\/login\?return_to=/);
    await anonymous.context().close();
  });
});
