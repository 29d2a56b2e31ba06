import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, PASSWORD, signIn, type Person } from '../helpers/fixtures.ts';
import { startPasskeyServer } from '../helpers/webauthn.ts';

// Passkeys in the portal, in headless Chromium with DevTools' virtual authenticator (a platform authenticator that
// verifies the person): add one on /portal/security, sign out, sign in on /login with "Sign in with a passkey" and
// no password, then remove it with the password. BASE_URL is http://localhost:<port> (a relying party browsers
// accept); with an IP address the portal offers no passkey at all.

let server: TestServer & { origin: string };
let browser: Browser;
let person: Person;

beforeAll(async () => {
	server = await startPasskeyServer();
	try {
		browser = await launchChromium();
		const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
		const org = await platformAdmin.post('/v1/organizations', { name: 'Keyholders' });
		expect(org.status).toBe(201);
		person = await addPerson(server.url, platformAdmin, org.body.id, 'member', 'keyholder');
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

/** A virtual platform authenticator for `page`, holding discoverable credentials and verifying the person. */
async function virtualAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
	const cdp = await page.context().newCDPSession(page);
	await cdp.send('WebAuthn.enable');
	const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
		options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
	});
	return { cdp, authenticatorId };
}

const rows = (page: Page) => page.getByTestId('passkey-row');

describe('passkeys on /portal/security and /login', () => {
	test('adds a passkey, signs out, signs in with it and no password, and removes it with the password', async () => {
		const page = await signedInPage(browser, server.origin, { email: person.email, password: PASSWORD });
		const { cdp, authenticatorId } = await virtualAuthenticator(page);

		await page.goto('/portal/security');
		await expect.poll(() => page.getByTestId('no-passkeys').count()).toBe(1);
		await page.getByLabel('Passkey name').fill('Virtual laptop');
		await page.getByRole('button', { name: 'Add a passkey' }).click();
		await expect.poll(() => page.getByRole('status').textContent()).toContain('“Virtual laptop” was added');
		await expect.poll(() => rows(page).count()).toBe(1);
		await expect.poll(() => rows(page).first().textContent()).toContain('Never');
		const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
		expect(credentials).toHaveLength(1);
		expect(credentials[0]!.isResidentCredential).toBe(true);

		// Renamed in place.
		await rows(page).first().getByRole('button', { name: /^Rename/ }).click();
		await page.getByLabel('New name for Virtual laptop').fill('Desk laptop');
		await page.getByRole('button', { name: 'Save name' }).click();
		await expect.poll(() => rows(page).first().textContent()).toContain('Desk laptop');

		// Signed out, the sign-in page offers the passkey; it signs in without an e-mail address or a password.
		await Promise.all([page.waitForURL((url) => url.pathname === '/login'), page.getByRole('button', { name: 'Sign out', exact: true }).click()]);
		await page.goto('/login');
		await expect.poll(() => page.getByLabel('Email').getAttribute('autocomplete')).toBe('username webauthn');
		const signedIn = page.waitForURL((url) => url.pathname === '/portal/dashboard');
		await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
		await signedIn;
		const session = await server.base.db.session.findFirstOrThrow({ where: { userId: person.id }, orderBy: { createdAt: 'desc' } });
		expect(session.amr).toEqual(['hwk', 'user', 'mfa']);

		// The list says it was used; a wrong password keeps it; the right one removes it.
		await page.goto('/portal/security');
		await expect.poll(() => rows(page).first().textContent()).not.toContain('Never');
		await rows(page).first().getByRole('button', { name: /^Remove/ }).click();
		await page.getByLabel('Password to remove Desk laptop').fill('not the password at all');
		await page.getByRole('button', { name: 'Remove passkey' }).click();
		await expect.poll(() => page.getByTestId('passkeys-error').textContent()).toContain('The password is wrong');
		await expect.poll(() => rows(page).count()).toBe(1);
		await page.getByLabel('Password to remove Desk laptop').fill(PASSWORD);
		await page.getByRole('button', { name: 'Remove passkey' }).click();
		await expect.poll(() => page.getByRole('status').textContent()).toContain('“Desk laptop” was removed');
		await expect.poll(() => rows(page).count()).toBe(0);
		expect(await server.base.db.passkey.count({ where: { userId: person.id } })).toBe(0);
		await page.context().close();
	});

	test('a passkey the service does not know is refused on /login with a message, and the page stays', async () => {
		const page = await freshPage(browser, server.origin);
		const { cdp, authenticatorId } = await virtualAuthenticator(page);
		// A discoverable credential of this relying party that no account registered.
		const key = await cdp.send('WebAuthn.addCredential', {
			authenticatorId,
			credential: {
				credentialId: Buffer.from('unknown-credential-0001').toString('base64'),
				isResidentCredential: true,
				rpId: new URL(server.origin).hostname,
				privateKey: pkcs8Key(),
				userHandle: Buffer.from('nobody').toString('base64'),
				signCount: 0
			}
		});
		expect(key).toBeDefined();
		await page.goto('/login');
		await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
		await expect.poll(() => page.getByTestId('passkey-error').textContent()).toContain('not registered');
		expect(new URL(page.url()).pathname).toBe('/login');
		await page.context().close();
	});
});

describe('with an IP address for BASE_URL', () => {
	let ipServer: TestServer;
	beforeAll(async () => {
		ipServer = await startTestServer();
	}, 120_000);
	afterAll(() => ipServer?.stop());

	test('offers no passkey on /login or /portal/security', async () => {
		const { api: platformAdmin } = await signIn(ipServer.url, ADMIN.email, ADMIN.password);
		const org = await platformAdmin.post('/v1/organizations', { name: 'Numbers' });
		const someone = await addPerson(ipServer.url, platformAdmin, org.body.id, 'member', 'numeric');
		const page = await signedInPage(browser, ipServer.url, { email: someone.email, password: PASSWORD });
		await page.goto('/portal/security');
		await page.getByRole('heading', { name: 'Where you are signed in' }).waitFor();
		expect(await page.getByTestId('passkeys').count()).toBe(0);
		await page.context().clearCookies();
		await page.goto('/login');
		await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
		expect(await page.getByTestId('passkey-sign-in').count()).toBe(0);
		expect(await page.getByLabel('Email').getAttribute('autocomplete')).toBe('username');
		await page.context().close();
	});
});

/** A fresh P-256 private key in PKCS#8, base64, as WebAuthn.addCredential takes it. */
function pkcs8Key(): string {
	const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
	return privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
}
