import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { registerClient, tokenRequest } from '../helpers/oauth.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';

// /admin/audit-logs: the organization's audit trail, newest first, 50 a page, failures marked, in headless Chromium.

const screenshots = new URL('../.tmp/', import.meta.url);

let server: TestServer;
let browser: Browser;
/** The platform admin's REST client: ADMIN owns the operator organization, its current one. */
let admin: Client;
let adminId: string;
let operatorId: string;
let tenant: Tenant;

beforeAll(async () => {
	server = await startTestServer();
	try {
		browser = await launchChromium();
		admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
		adminId = (await admin.get('/api/v1/users/me')).body.id;
		operatorId = (await admin.get('/api/v1/orgs')).body.find((o: { role: string }) => o.role === 'owner').id;
		tenant = await createTenant(server.url, admin);
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
			cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').replace(/\s+/g, ' ').trim())
		}))
	);
}

/** The organization's audit trail as GraphQL gives it, newest first: what the pages must show. */
async function trail(organizationId: string): Promise<{ id: string; createdAt: string }[]> {
	const reply = await admin.post('/graphql', {
		query: 'query($org: String!) { auditLogs(organizationId: $org, limit: 200) { id createdAt } }',
		variables: { org: organizationId }
	});
	if (!reply.body?.data) throw new Error(`auditLogs failed: ${JSON.stringify(reply.body)}`);
	return reply.body.data.auditLogs;
}

describe('admin: audit logs', { timeout: 60_000 }, () => {
	test('client management shows up newest first, with a failed client authentication marked', async () => {
		// given an OAuth client registered, refused once with a wrong secret, updated and deleted, in that order
		const client = await registerClient(admin, { name: 'Audited', redirect_uris: ['https://audited.example.com/cb'], allowed_scopes: ['openid'] });
		const refused = await tokenRequest(server.url, { grant_type: 'client_credentials', client_id: client.client_id, client_secret: 'tscs_wrong' });
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
		await expect(page.getByRole('columnheader').allTextContents()).resolves.toEqual(['Time (UTC)', 'Action', 'Outcome', 'Actor', 'Target', 'IP address']);

		// and the client's entries are listed newest first
		const shown = await rows(page);
		const about = shown.filter((r) => r.targetId === client.id);
		expect(about.map((r) => `${r.action} ${r.outcome}`)).toEqual([
			'oauth_client.delete success',
			'oauth_client.update success',
			'oauth.client_auth failure',
			'oauth_client.create success'
		]);
		const ids = shown.map((r) => r.id);
		expect(ids).toEqual([...ids].sort().reverse());

		// and the failure is marked as one, the successes are not
		const [deleted, , failed, created] = about;
		expect(failed!.failureMarked).toBe(true);
		expect(failed!.cells[2]).toBe('✕ failure');
		expect(created!.failureMarked).toBe(false);
		expect(created!.cells[2]).toBe('success');

		// and each row says when (UTC, to the second), who, to what and from where
		const stored = (await trail(operatorId)).find((e) => e.id === created!.id)!;
		expect(created!.cells[0]).toBe(stored.createdAt.replace('T', ' ').slice(0, 19));
		expect(created!.cells[3]).toBe(`User ${adminId} (you)`);
		expect(created!.cells[4]).toBe(`oauth_client ${client.id}`);
		expect(created!.cells[5]).toMatch(/127\.0\.0\.1/);
		expect(deleted!.cells[3]).toContain(adminId);
		expect(failed!.cells[3]).toBe('Anonymous');

		await mkdir(screenshots, { recursive: true });
		await page.screenshot({ path: new URL('admin-audit.png', screenshots).pathname, fullPage: true });
		await page.context().close();
	});

	test('50 entries a page, Older entries goes on from the last one shown', async () => {
		// given more than a page of entries: a client updated sixty times
		const client = await registerClient(admin, { name: 'Busy', redirect_uris: ['https://busy.example.com/cb'], allowed_scopes: ['openid'] });
		for (let i = 0; i < 60; i++) {
			expect((await admin.patch(`/api/v1/oauth-clients/${client.id}`, { description: `change ${i}` })).status).toBe(200);
		}
		// (signing in leaves an entry too)
		const page = await signedInPage(browser, server.url, ADMIN);
		const expected = (await trail(operatorId)).map((e) => e.id);
		expect(expected.length).toBeGreaterThan(60);
		expect(expected.length).toBeLessThanOrEqual(100);

		// when the owner opens the audit logs
		await page.goto('/admin/audit-logs');

		// then the newest fifty are shown, and a link to the older ones
		expect((await rows(page)).map((r) => r.id)).toEqual(expected.slice(0, 50));
		await expect(page.getByRole('link', { name: 'Newest entries' }).count()).resolves.toBe(0);

		// when they follow it
		await page.getByRole('link', { name: 'Older entries' }).click();
		await page.waitForURL((url) => url.searchParams.get('before') === expected[49]);

		// then the rest are shown, with no further page and a way back
		expect((await rows(page)).map((r) => r.id)).toEqual(expected.slice(50));
		await expect(page.getByRole('link', { name: 'Older entries' }).count()).resolves.toBe(0);
		await page.getByRole('link', { name: 'Newest entries' }).click();
		await page.waitForURL((url) => url.pathname === '/admin/audit-logs' && !url.search);
		expect((await rows(page))[0]!.id).toBe(expected[0]);
		await page.context().close();
	});

	test("an organization's admins see only its own trail", async () => {
		// given a change in the operator organization
		const client = await registerClient(admin, { name: 'Operator Secret', redirect_uris: ['https://op.example.com/cb'], allowed_scopes: ['openid'] });

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

	test('a member is refused, a signed-out visitor is sent to sign in', async () => {
		const member = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
		const response = await member.goto('/admin/audit-logs');
		expect(response?.status()).toBe(403);
		await expect(member.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');
		await member.context().close();

		const anonymous = await freshPage(browser, server.url);
		await anonymous.goto('/admin/audit-logs?before=x');
		const login = new URL(anonymous.url());
		expect(login.pathname).toBe('/login');
		expect(login.searchParams.get('return_to')).toBe('/admin/audit-logs?before=x');
		await anonymous.context().close();
	});
});
