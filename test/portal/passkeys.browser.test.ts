import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import axe from 'axe-core';
import type { Browser, BrowserContextOptions, CDPSession, Page, Route } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { BROWSER_WAIT_MS, continueWithEmail, freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, PASSWORD, signIn, type Person } from '../helpers/fixtures.ts';
import { startPasskeyServer } from '../helpers/webauthn.ts';

// Passkeys in the portal, in headless Chromium with DevTools' virtual authenticator (a platform authenticator that
// verifies the person): add one on /portal/security, sign out, complete a password sign-in's second step with it,
// sign in on /login with "Sign in with a passkey" and no password, then remove it with the password. BASE_URL is http://localhost:<port> (a relying party browsers
// accept); with an IP address the portal offers no passkey at all.

let server: TestServer & { origin: string };
let browser: Browser;
let person: Person;
/** The phone test's own person: a passkey the first test leaves behind when it fails must not send this one to a second step. */
let phonePerson: Person;

beforeAll(async () => {
  server = await startPasskeyServer();
  try {
    browser = await launchChromium();
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const org = await platformAdmin.post('/v1/organizations', { name: 'Keyholders' });
    expect(org.status).toBe(201);
    person = await addPerson(server.url, platformAdmin, org.body.id, 'member', 'keyholder');
    phonePerson = await addPerson(server.url, platformAdmin, org.body.id, 'member', 'phone-keyholder');
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
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

const rows = (page: Page) => page.getByTestId('passkey-row');

/** expect.poll with the browser tests' patience: a registration's ceremony and reload take seconds on a busy machine. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: BROWSER_WAIT_MS });

/**
 * Holds back the page's requests for sign-in options, but those let through (`allowNext`, `releaseLatest`): a sign-in
 * page asks for them for its passkey autofill as it loads, and the virtual authenticator answers that conditional
 * request at once, before any button could be pressed. A request held gets no answer until the page leaves.
 */
async function gateSignInOptions(page: Page) {
  const held: Route[] = [];
  let allowed = 0;
  let asked = 0;
  await page.route('**/api/v1/auth/passkeys/options', async (route: Route) => {
    asked += 1;
    if (allowed === 0) return void held.push(route);
    allowed -= 1;
    await route.continue();
  });
  return {
    /** How many requests were held so far. */
    held: () => held.length,
    /** How many requests the page made so far, held or let through. */
    asked: () => asked,
    /** Lets the next request through (a button's). */
    allowNext: () => void (allowed += 1),
    /** Answers the request held last (the current page's autofill). */
    releaseLatest: () => held.at(-1)!.continue(),
  };
}

/** Opens /login and waits until its autofill has asked for options (held by `gate`). */
async function openLogin(page: Page, gate: Awaited<ReturnType<typeof gateSignInOptions>>): Promise<void> {
  const before = gate.held();
  await page.goto('/login');
  await poll(() => gate.held()).toBeGreaterThan(before);
}

describe('passkeys on /portal/security and /login', () => {
  test('adds a passkey, signs out, signs in with it and no password, and removes it with the password', async () => {
    const page = await signedInPage(browser, server.origin, { email: person.email, password: PASSWORD });
    const { cdp, authenticatorId } = await virtualAuthenticator(page);

    await page.goto('/portal/security');
    await poll(() => page.getByTestId('no-passkeys').count()).toBe(1);
    await page.getByLabel('Passkey name').fill('Virtual laptop');
    // The first second factor needs the password again.
    await page.getByLabel('Password to add your first passkey').fill(PASSWORD);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await poll(() => page.getByRole('status').textContent()).toContain('“Virtual laptop” was added');
    await poll(() => rows(page).count()).toBe(1);
    await poll(() => rows(page).first().textContent()).toContain('Never');
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]!.isResidentCredential).toBe(true);

    // Renamed in place.
    await rows(page)
      .first()
      .getByRole('button', { name: /^Rename/ })
      .click();
    await page.getByLabel('New name for Virtual laptop').fill('Desk laptop');
    await page.getByRole('button', { name: 'Save name' }).click();
    await poll(() => rows(page).first().textContent()).toContain('Desk laptop');

    // With a passkey the password alone no longer signs in: the second step offers the passkey, which completes it.
    const gate = await gateSignInOptions(page);
    const signOut = () =>
      Promise.all([
        page.waitForURL((url) => url.pathname === '/login'),
        page.getByRole('button', { name: 'Sign out', exact: true }).click(),
      ]);
    const atDashboard = () => page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await signOut();
    await openLogin(page, gate);
    await continueWithEmail(page, person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    const askedBefore = gate.asked();
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const step = page.getByTestId('second-factor');
    await step.waitFor();
    const afterStep = atDashboard();
    gate.allowNext();
    await step.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await afterStep;
    // The button's request alone: the e-mail step's autofill, mounted for the one tick in which SvelteKit's
    // applyAction clears `form`, asks for nothing once it is gone (a request of its own here could take the
    // button's turn through the gate, and the button then waited for ever).
    expect(gate.asked() - askedBefore).toBe(1);

    // Signed out, the sign-in page offers the passkey; it signs in without an e-mail address or a password.
    await signOut();
    await openLogin(page, gate);
    expect(await page.getByLabel('Email').getAttribute('autocomplete')).toBe('username webauthn');
    const signedIn = atDashboard();
    gate.allowNext();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await signedIn;
    const session = await server.base.db.session.findFirstOrThrow({
      where: { userId: person.id },
      orderBy: { createdAt: 'desc' },
    });
    expect(session.amr).toEqual(['hwk', 'user', 'mfa']);

    // And through the e-mail field's autofill, no button pressed: the virtual authenticator answers the page's
    // conditional request as a person choosing the passkey among the field's suggestions would.
    await signOut();
    await openLogin(page, gate);
    const autofilled = atDashboard();
    await gate.releaseLatest();
    await autofilled;
    expect(await server.base.db.session.count({ where: { userId: person.id, amr: { has: 'hwk' } } })).toBe(3);

    // The list says it was used; a wrong password keeps it; the right one removes it.
    await page.goto('/portal/security');
    await poll(() => rows(page).first().textContent()).not.toContain('Never');
    await rows(page)
      .first()
      .getByRole('button', { name: /^Remove/ })
      .click();
    await page.getByLabel('Password to remove Desk laptop').fill('not the password at all');
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await poll(() => page.getByTestId('passkeys-error').textContent()).toContain('The password is wrong');
    await poll(() => rows(page).count()).toBe(1);
    await page.getByLabel('Password to remove Desk laptop').fill(PASSWORD);
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await poll(() => page.getByRole('status').textContent()).toContain('“Desk laptop” was removed');
    await poll(() => rows(page).count()).toBe(0);
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
        signCount: 0,
      },
    });
    expect(key).toBeDefined();
    await page.goto('/login');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await poll(() => page.getByTestId('passkey-error').textContent()).toContain('not registered');
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.context().close();
  });
});

const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 800 }, bypassCSP: true };

/** What axe-core finds serious or critical on the page, and whether the page is wider than the screen. */
async function problemsOn(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source });
  const results = await page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
  );
  const problems = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  if (width > 375) problems.push(`the page is ${width} px wide`);
  return problems;
}

describe('on a 375 px phone', () => {
  test('the passkeys section with its rename and remove forms, and the sign-in page, pass axe-core', async () => {
    const page = await signedInPage(browser, server.origin, { email: phonePerson.email, password: PASSWORD }, PHONE);
    await virtualAuthenticator(page);
    await page.goto('/portal/security');
    expect(await problemsOn(page), 'no passkeys yet').toEqual([]);
    await page.getByLabel('Passkey name').fill('A phone with a rather long name for its passkey, to wrap');
    await page.getByLabel('Password to add your first passkey').fill(PASSWORD);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await poll(() => rows(page).count()).toBe(1);
    expect(await problemsOn(page), 'one passkey').toEqual([]);
    await rows(page)
      .first()
      .getByRole('button', { name: /^Rename/ })
      .click();
    await page.getByRole('button', { name: 'Save name' }).waitFor();
    expect(await problemsOn(page), 'the rename form').toEqual([]);
    await rows(page)
      .first()
      .getByRole('button', { name: /^Remove/ })
      .click();
    await page.getByRole('button', { name: 'Remove passkey' }).waitFor();
    await page.getByLabel(/^Password to remove/).fill('not the password at all');
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await page.getByTestId('passkeys-error').waitFor();
    expect(await problemsOn(page), 'the remove form, refused').toEqual([]);
    await page.getByLabel(/^Password to remove/).fill(PASSWORD);
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await poll(() => rows(page).count()).toBe(0);

    await page.context().clearCookies();
    await page.goto('/login');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    expect(await problemsOn(page), 'the sign-in page').toEqual([]);
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
    await page.getByRole('button', { name: 'Continue', exact: true }).waitFor();
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
