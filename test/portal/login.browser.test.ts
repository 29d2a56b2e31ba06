import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import { freshPage as freshPageOf, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { startTestServer } from '../helpers/server.ts';

// Sign-in through the real service (API + portal in one process) in headless Chromium.

const owner = { email: 'owner@example.com', password: 'correct horse battery staple', orgName: 'Operator' };
const screenshots = new URL('../.tmp/', import.meta.url);

let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser;

beforeAll(async () => {
	server = await startTestServer({ bootstrap: owner });
	browser = await launchChromium();
}, 120_000);

afterAll(async () => {
	await browser?.close();
	await server?.stop();
});

const freshPage = () => freshPageOf(browser, server.url);
const signIn = signInOnPage;

describe('portal sign-in', { timeout: 30_000 }, () => {
	test('a wrong password shows the error on /login', async () => {
		// given the sign-in page
		const page = await freshPage();
		await page.goto('/login');
		await expect(page.title()).resolves.toBe('Sign in · Tessera');

		// when the owner signs in with a wrong password
		await signIn(page, owner.email, 'not the password');

		// then the page says so and stays on /login
		await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid email or password');
		expect(new URL(page.url()).pathname).toBe('/login');
		await page.context().close();
	});

	test('the right password lands on the dashboard showing the email', async () => {
		// given the sign-in page
		const page = await freshPage();
		await page.goto('/login');

		// when the owner signs in
		await signIn(page, owner.email, owner.password);

		// then the portal dashboard shows who is signed in, in which organization
		await page.waitForURL((url) => url.pathname === '/portal/dashboard');
		await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Dashboard');
		await expect(page.getByTestId('user-email').textContent()).resolves.toBe(owner.email);
		await expect(page.locator('main').textContent()).resolves.toContain(owner.orgName);
		const cookies = await page.context().cookies();
		const session = cookies.find((c) => c.name === 'tessera_session');
		expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });

		await mkdir(screenshots, { recursive: true });
		await page.screenshot({ path: new URL('portal-dashboard.png', screenshots).pathname, fullPage: true });
		await page.context().close();
	});

	test('the admin dashboard sends a signed-out visitor to sign in and back', async () => {
		// given a signed-out browser
		const page = await freshPage();

		// when it opens the admin dashboard
		await page.goto('/admin/dashboard');

		// then it is sent to sign in, asking to come back
		const login = new URL(page.url());
		expect(login.pathname).toBe('/login');
		expect(login.searchParams.get('return_to')).toBe('/admin/dashboard');

		// and after signing in as the operator org's owner it lands back on the admin dashboard
		await signIn(page, owner.email, owner.password);
		await page.waitForURL((url) => url.pathname === '/admin/dashboard');
		await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Admin dashboard');
		await expect(page.locator('main').textContent()).resolves.toContain(owner.orgName);
		await page.context().close();
	});

	test('a return_to to another origin is ignored', async () => {
		// given a sign-in link asking to return to a protocol-relative URL
		const page = await freshPage();
		await page.goto('/login?return_to=//evil.example');

		// when the owner signs in
		await signIn(page, owner.email, owner.password);

		// then the browser stays on Tessera, on the portal dashboard
		await page.waitForURL((url) => url.pathname === '/portal/dashboard');
		expect(new URL(page.url()).origin).toBe(new URL(server.url).origin);
		await page.context().close();
	});
});
