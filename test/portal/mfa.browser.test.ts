import { mkdir } from 'node:fs/promises';
import axe from 'axe-core';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { movableClock } from '../helpers/clock.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { signIn } from '../helpers/http.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { proveDomain } from '../helpers/sso.ts';

// Second factors in the portal, in headless Chromium against the real service: setting up an authenticator app on
// /portal/security (its key read from the page, its codes computed here), signing in with a code or a recovery code,
// the organization's policy (an owner requires a second factor; a member without one is sent to set one up and
// held there), and the members page's 2FA column and an owner's reset (Globex verified example.test, so it manages its
// people's accounts: docs/architecture.md#managed-accounts).
//
// A code is accepted once (and no older one after it): the service runs on a clock the test moves, and each code is
// computed for the next 30-second step of that clock, which no code used before belongs to.

const clock = movableClock();
let server: TestServer;
let dns: TestDnsServer;
let browser: Browser;
let tenant: Tenant;
/** Sets up an app on the page and signs in with it. */
let traveller: Person;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ clock, env: { DNS_SERVERS: dns.address } });
  try {
    browser = await launchChromium();
    const { api: platformAdmin } = await signIn(server.url, ADMIN.email, ADMIN.password);
    tenant = await createTenant(server.url, platformAdmin, 'Globex');
    await proveDomain(tenant.owner.api, dns, 'example.test');
    traveller = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'traveller');
  } catch (error) {
    await browser?.close();
    await server.stop();
    await dns.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dns?.stop();
});

/** The code of the authenticator app holding `secret`, for the service clock's next step (never used before). */
function nextCode(secret: string): string {
  clock.advance(30);
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: clock.now().getTime(),
  });
}

/** A code that is not `code` (nor, but by a one-in-a-million chance, any step's). */
const wrong = (code: string) => String((Number(code) + 500_000) % 1_000_000).padStart(6, '0');

/** Submits the form whose button is `button` and waits until the page has taken the action's answer. */
async function submit(page: Page, button: ReturnType<Page['getByRole']>): Promise<void> {
  const path = new URL(page.url()).pathname;
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    button.click(),
  ]);
  await page.waitForFunction(() => !document.querySelector('main button[disabled]'));
}

/** The second step of the sign-in form: answers `code` (or a recovery code) and waits for the answer. */
async function answerSecondFactor(page: Page, answer: { code: string } | { recoveryCode: string }): Promise<void> {
  const step = page.getByTestId('second-factor');
  if ('recoveryCode' in answer) {
    if (!(await step.getByLabel('Recovery code').count()))
      await step.getByRole('button', { name: 'Use a recovery code' }).click();
    await step.getByLabel('Recovery code').fill(answer.recoveryCode);
  } else {
    await step.getByLabel('Code from your authenticator app').fill(answer.code);
  }
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/login'),
    step.getByRole('button', { name: 'Verify' }).click(),
  ]);
}

/** A fresh browser signed in as `person` with the password and then a code of the app holding `secret`. */
async function signedInWithCode(person: { email: string }, secret: string, path = '/login'): Promise<Page> {
  const page = await freshPage(browser, server.url);
  await page.goto(path);
  await signInOnPage(page, person.email, PASSWORD);
  await page.getByTestId('second-factor').waitFor();
  await answerSecondFactor(page, { code: nextCode(secret) });
  await page.waitForURL((url) => url.pathname !== '/login');
  return page;
}

/** A first second factor needs the password again: the setup form asks for it then. */
async function proveFirstFactor(page: Page, password = PASSWORD) {
  const field = page.getByTestId('two-factor').getByLabel('Your password');
  if (await field.count()) await field.fill(password);
}

/** Sets up the authenticator app on /portal/security of `page`: its key, from the page, and the recovery codes. */
async function setUpApp(page: Page): Promise<{ secret: string; recoveryCodes: string[] }> {
  const section = page.getByTestId('two-factor');
  await proveFirstFactor(page);
  await submit(page, section.getByRole('button', { name: 'Set up an authenticator app' }));
  const secret = (await section.getByTestId('totp-secret').textContent())!.trim();
  expect(secret).toMatch(/^[A-Z2-7]{16,}=*$/);
  await expect
    .poll(() =>
      section
        .getByRole('img', { name: /QR code/ })
        .evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0),
    )
    .toBe(true);
  await section.getByLabel('Code from your authenticator app').fill(nextCode(secret));
  await submit(page, section.getByRole('button', { name: 'Confirm' }));
  const codes = section.getByTestId('recovery-codes').locator('li');
  await expect.poll(() => codes.count()).toBe(10);
  return { secret, recoveryCodes: (await codes.allTextContents()).map((c) => c.trim()) };
}

describe('an authenticator app', () => {
  let secret = '';
  let recoveryCodes: string[] = [];

  test('is set up on /portal/security: QR code and key, a wrong code refused, the right one answers ten recovery codes', async () => {
    // given the person signed in with the password alone, on the security page
    const page = await freshPage(browser, server.url);
    await page.goto('/login?return_to=/portal/security');
    await signInOnPage(page, traveller.email, PASSWORD);
    await page.waitForURL((url) => url.pathname === '/portal/security');
    const section = page.getByTestId('two-factor');
    await expect(section.getByTestId('totp-status').textContent()).resolves.toContain('Off');

    // when they start setting up an app (with their password again) and give a wrong code
    await proveFirstFactor(page);
    await submit(page, section.getByRole('button', { name: 'Set up an authenticator app' }));
    secret = (await section.getByTestId('totp-secret').textContent())!.trim();
    await section.getByLabel('Code from your authenticator app').fill(wrong(nextCode(secret)));
    await submit(page, section.getByRole('button', { name: 'Confirm' }));

    // then the code is refused beside the field, and the same key is still shown
    await expect.poll(() => section.getByRole('alert').textContent()).toContain('That code is wrong');
    await expect
      .poll(() => section.getByLabel('Code from your authenticator app').getAttribute('aria-invalid'))
      .toBe('true');
    await expect(section.getByTestId('totp-secret').textContent()).resolves.toBe(secret);
    await expect(section.getByRole('img', { name: /QR code/ }).count()).resolves.toBe(1);

    // when they give the app's current code
    await section.getByLabel('Code from your authenticator app').fill(nextCode(secret));
    await submit(page, section.getByRole('button', { name: 'Confirm' }));

    // then ten recovery codes are shown once, with a way to save them, and the app is on
    const codes = section.getByTestId('recovery-codes').locator('li');
    await expect.poll(() => codes.count()).toBe(10);
    recoveryCodes = (await codes.allTextContents()).map((c) => c.trim());
    expect(new Set(recoveryCodes).size).toBe(10);
    await expect(section.getByText('Save these recovery codes now').count()).resolves.toBe(1);
    await expect(section.getByRole('link', { name: 'Download as a text file' }).getAttribute('download')).resolves.toBe(
      'tessera-recovery-codes.txt',
    );
    await expect.poll(() => section.getByTestId('totp-status').textContent()).toContain('On');
    expect((await traveller.api.get('/api/v1/users/me/mfa')).body).toMatchObject({
      totp: true,
      recovery_codes_left: 10,
    });

    // and a reload shows them no more
    await page.reload();
    await expect(section.getByTestId('recovery-codes').count()).resolves.toBe(0);
    await expect(section.getByTestId('recovery-codes-left').textContent()).resolves.toContain('10 of 10');
    await page.context().close();
  });

  test('signing in asks for a code after the password: a wrong one is refused on the step, the right one signs in', async () => {
    // given a signed-out browser asked to come back to the security page
    const page = await freshPage(browser, server.url);
    await page.goto('/login?return_to=/portal/security');

    // when the person gives their password
    await signInOnPage(page, traveller.email, PASSWORD);

    // then the page asks for a code, with no session yet and the sign-in's token not in the address
    const step = page.getByTestId('second-factor');
    await step.waitFor();
    const field = step.getByLabel('Code from your authenticator app');
    await expect(field.getAttribute('autocomplete')).resolves.toBe('one-time-code');
    await expect(field.getAttribute('inputmode')).resolves.toBe('numeric');
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(page.url()).not.toContain('mfa');
    expect((await page.context().cookies()).some((c) => c.name === 'tessera_session')).toBe(false);

    // when they give a wrong code
    await answerSecondFactor(page, { code: wrong(nextCode(secret)) });

    // then it is refused beside the field, and the step stays
    await expect.poll(() => step.getByRole('alert').textContent()).toContain('That code is wrong');
    await expect
      .poll(() => step.getByLabel('Code from your authenticator app').getAttribute('aria-invalid'))
      .toBe('true');
    const described = await step.getByLabel('Code from your authenticator app').getAttribute('aria-describedby');
    expect(described?.split(' ')).toContain(await step.getByRole('alert').getAttribute('id'));
    expect(new URL(page.url()).pathname).toBe('/login');

    // when they give the right one
    await answerSecondFactor(page, { code: nextCode(secret) });

    // then they are signed in, where they were going
    await page.waitForURL((url) => url.pathname === '/portal/security');
    await expect(page.getByTestId('email').textContent()).resolves.toBe(traveller.email);
    await page.context().close();
  });

  test('a recovery code signs in once; the same one again is refused', async () => {
    // given the password step done
    const page = await freshPage(browser, server.url);
    await page.goto('/login');
    await signInOnPage(page, traveller.email, PASSWORD);
    await page.getByTestId('second-factor').waitFor();

    // when the person uses a recovery code instead
    await answerSecondFactor(page, { recoveryCode: recoveryCodes[0]! });

    // then they are signed in (a member lands on the portal's dashboard)
    await page.waitForURL((url) => url.pathname === '/portal/dashboard');
    await page.goto('/portal/security');
    await expect(page.getByTestId('recovery-codes-left').textContent()).resolves.toContain('9 of 10');
    await page.context().close();

    // when another browser tries the same recovery code
    const again = await freshPage(browser, server.url);
    await again.goto('/login');
    await signInOnPage(again, traveller.email, PASSWORD);
    await answerSecondFactor(again, { recoveryCode: recoveryCodes[0]! });

    // then it is refused, and the step stays on the recovery code
    const step = again.getByTestId('second-factor');
    await expect
      .poll(() => step.getByRole('alert').textContent())
      .toContain('That recovery code is wrong or was already used');
    await expect(step.getByLabel('Recovery code').count()).resolves.toBe(1);
    expect(new URL(again.url()).pathname).toBe('/login');

    // and another of the codes still works
    await answerSecondFactor(again, { recoveryCode: recoveryCodes[1]! });
    await again.waitForURL((url) => url.pathname === '/portal/dashboard');
    await again.context().close();
  });

  test('a sign-in asked for again (reauth=1) shows the form to a signed-in person, and replaces the session', async () => {
    // given the person signed in
    const page = await signedInWithCode(traveller, secret);
    const before = (await page.context().cookies()).find((c) => c.name === 'tessera_session')!.value;

    // when the authorization endpoint sends them to sign in again
    await page.goto('/login?reauth=1&return_to=/portal/security');

    // then the form is shown, with their address filled in
    expect(new URL(page.url()).pathname).toBe('/login');
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(traveller.email);

    // and signing in with the password and a code replaces the session and goes on
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    await answerSecondFactor(page, { code: nextCode(secret) });
    await page.waitForURL((url) => url.pathname === '/portal/security');
    const after = (await page.context().cookies()).find((c) => c.name === 'tessera_session')!.value;
    expect(after).not.toBe(before);

    // while without reauth a signed-in visitor is sent on
    await page.goto('/login?return_to=/portal/security');
    await page.waitForURL((url) => url.pathname === '/portal/security');
    await page.context().close();
  });

  test('without scripts, the code step works too, and switches to a recovery code by a round trip', async () => {
    const post = (body: Record<string, string>) =>
      fetch(`${server.url}/login`, {
        method: 'POST',
        headers: {
          origin: new URL(server.url).origin,
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams(body),
        redirect: 'manual',
      });
    const tokenIn = (html: string) => /name="mfaToken" value="([^"]+)"/.exec(html)?.[1];

    // the password answers the code step, its token in the form
    const step = await post({ email: traveller.email, password: PASSWORD });
    expect(step.status).toBe(200);
    const html = await step.text();
    const mfaToken = tokenIn(html)!;
    expect(mfaToken).toBeTruthy();
    expect(html).toContain('Code from your authenticator app');

    // "Use a recovery code" asks for one instead, the same sign-in going on
    const switched = await post({
      email: traveller.email,
      mfaToken,
      methods: 'totp,recovery_code',
      method: 'totp',
      use: 'recovery_code',
    });
    expect(switched.status).toBe(200);
    const recoveryHtml = await switched.text();
    expect(recoveryHtml).toContain('for="recovery-code"');
    expect(tokenIn(recoveryHtml)).toBe(mfaToken);

    // and the code signs in: the session cookie, and on home
    const done = await post({
      email: traveller.email,
      mfaToken,
      methods: 'totp,recovery_code',
      method: 'totp',
      code: nextCode(secret),
    });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/portal/dashboard');
    expect(done.headers.get('set-cookie')).toContain('tessera_session=');
  });

  test('a code step left for more than 5 minutes starts over at the password', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/login');
    await signInOnPage(page, traveller.email, PASSWORD);
    await page.getByTestId('second-factor').waitFor();

    clock.advance(6 * 60);
    await answerSecondFactor(page, { code: nextCode(secret) });

    await expect.poll(() => page.getByRole('alert').textContent()).toContain('This sign-in has expired');
    await expect(page.getByLabel('Password').count()).resolves.toBe(1);
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(traveller.email);
    await expect(page.getByTestId('second-factor').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('new recovery codes with a code from the app; removed with the password', async () => {
    const page = await signedInWithCode(traveller, secret, '/login?return_to=/portal/security');
    const section = page.getByTestId('two-factor');
    const fold = (name: string) =>
      section.locator('details').filter({ has: page.locator('summary', { hasText: name }) });

    // a new set of recovery codes, confirmed with a code of the app
    const regenerate = fold('New recovery codes');
    await regenerate.locator('summary').click();
    await regenerate.getByLabel('Or a code from your authenticator app').fill(nextCode(secret));
    await submit(page, regenerate.getByRole('button', { name: 'Make new recovery codes' }));
    const codes = section.getByTestId('recovery-codes').locator('li');
    await expect.poll(() => codes.count()).toBe(10);
    const fresh = (await codes.allTextContents()).map((c) => c.trim());
    expect(fresh).not.toContain(recoveryCodes[2]);
    await expect.poll(() => section.getByTestId('recovery-codes-left').textContent()).toContain('10 of 10');

    // removing the app: a wrong password is refused beside the fields
    const remove = fold('Remove the authenticator app');
    await remove.locator('summary').click();
    await remove.getByLabel('Your password').fill('not the password');
    await submit(page, remove.getByRole('button', { name: 'Remove the authenticator app' }));
    await expect.poll(() => remove.getByRole('alert').textContent()).toContain('nothing was changed');
    await expect(remove.getByLabel('Your password').getAttribute('aria-invalid')).resolves.toBe('true');

    // the right one removes it
    await remove.getByLabel('Your password').fill(PASSWORD);
    await submit(page, remove.getByRole('button', { name: 'Remove the authenticator app' }));
    await expect.poll(() => section.getByTestId('totp-status').textContent()).toContain('Off');
    await expect.poll(() => section.getByRole('status').textContent()).toContain('The authenticator app was removed');
    expect((await traveller.api.get('/api/v1/users/me/mfa')).body).toMatchObject({ totp: false });

    // and the next sign-in needs the password alone
    const next = await freshPage(browser, server.url);
    await next.goto('/login');
    await signInOnPage(next, traveller.email, PASSWORD);
    await next.waitForURL((url) => url.pathname === '/portal/dashboard');
    await next.context().close();
    await page.context().close();
  });
});

describe("the organization's policy", () => {
  let ownerSecret = '';
  let memberSecret = '';

  test('an owner without a second factor is refused; with one, they require it for all members', async () => {
    // given the owner signed in with the password alone, on the organization's settings
    const page = await freshPage(browser, server.url);
    await page.goto('/login?return_to=/admin/settings');
    await signInOnPage(page, tenant.owner.email, PASSWORD);
    await page.waitForURL((url) => url.pathname === '/admin/settings');
    const policy = page.getByTestId('mfa-policy');
    const toggle = policy.getByRole('switch', { name: 'Require two-factor authentication for all members' });

    // when they require a second factor without one of their own, the service's refusal is shown
    await toggle.check();
    await submit(page, policy.getByRole('button', { name: 'Save' }));
    await expect.poll(() => policy.getByRole('alert').textContent()).not.toBe('');
    expect((await tenant.owner.api.get(`/v1/organizations/${tenant.id}`)).body).toMatchObject({ require_mfa: false });

    // when they set up an authenticator app and try again
    await page.goto('/portal/security');
    ownerSecret = (await setUpApp(page)).secret;
    await page.goto('/admin/settings');
    await toggle.check();
    await submit(page, policy.getByRole('button', { name: 'Save' }));

    // then the organization requires it
    await expect.poll(() => policy.getByRole('status').textContent()).toContain('now required');
    await expect(toggle.isChecked()).resolves.toBe(true);
    expect((await tenant.owner.api.get(`/v1/organizations/${tenant.id}`)).body).toMatchObject({ require_mfa: true });
    await page.context().close();
  });

  test('a member without one is sent to set one up, held there on every page of the organization, and goes on once done', async () => {
    // when the member signs in
    const page = await freshPage(browser, server.url);
    await page.goto('/login?return_to=/portal/apps');
    await signInOnPage(page, tenant.member.email, PASSWORD);

    // then they land on the security page, whose two-factor section says why, and will bring them back
    await page.waitForURL((url) => url.pathname === '/portal/security' && url.searchParams.get('enrol') === '1');
    expect(new URL(page.url()).searchParams.get('return_to')).toBe('/portal/apps');
    const section = page.getByTestId('two-factor');
    await expect(section.getByTestId('enrol-required').textContent()).resolves.toContain(
      'Your organization requires two-factor authentication',
    );

    // when they open another page of the organization, it sends them back there
    await page.goto('/portal/subscriptions');
    await page.waitForURL((url) => url.pathname === '/portal/security' && url.searchParams.get('enrol') === '1');
    expect(new URL(page.url()).searchParams.get('return_to')).toBe('/portal/subscriptions');

    // and so does an admin page for an admin without a factor
    const admin = await freshPage(browser, server.url);
    await admin.goto('/login');
    await signInOnPage(admin, tenant.admin.email, PASSWORD);
    await admin.waitForURL(
      (url) => url.pathname === '/portal/security' && url.searchParams.get('return_to') === '/admin/dashboard',
    );
    await admin.goto('/admin/settings/members');
    await admin.waitForURL(
      (url) => url.pathname === '/portal/security' && url.searchParams.get('return_to') === '/admin/settings/members',
    );
    await admin.context().close();

    // when the member sets up an authenticator app
    memberSecret = (await setUpApp(page)).secret;

    // then the section leads on to where they were going, which now opens
    await expect(section.getByTestId('enrol-required').count()).resolves.toBe(0);
    const onward = section.getByTestId('continue');
    await expect(onward.getAttribute('href')).resolves.toBe('/portal/subscriptions');
    await Promise.all([page.waitForURL((url) => url.pathname === '/portal/subscriptions'), onward.click()]);
    await page.goto('/portal/apps');
    expect(new URL(page.url()).pathname).toBe('/portal/apps');
    await page.context().close();
  });

  test('the members page shows who has 2FA; an owner resets a member’s', async () => {
    // given the owner (with their code) on the members page
    const page = await signedInWithCode(tenant.owner, ownerSecret, '/login?return_to=/admin/settings/members');
    await page.waitForURL((url) => url.pathname === '/admin/settings/members');
    const row = (person: Person) => page.locator(`[data-testid="member-row"][data-user-id="${person.id}"]`);

    // then each member's 2FA shows, labelled for the narrow layout
    await expect(row(tenant.member).getByTestId('member-mfa').textContent()).resolves.toContain('Yes');
    await expect(row(tenant.admin).getByTestId('member-mfa').textContent()).resolves.toContain('No');
    await expect(row(tenant.owner).getByTestId('member-mfa').textContent()).resolves.toContain('Yes');
    await expect(row(tenant.member).getByTestId('member-mfa').getAttribute('data-label')).resolves.toBe('2FA');
    // only members who have one can be reset
    await expect(
      row(tenant.admin)
        .getByRole('link', { name: /Reset 2FA/ })
        .count(),
    ).resolves.toBe(0);

    // when the owner resets the member's, confirming it
    await row(tenant.member)
      .getByRole('link', { name: /Reset 2FA/ })
      .click();
    await page.getByRole('heading', { name: /Reset member's two-factor authentication\?/ }).waitFor();
    await submit(page, page.getByRole('button', { name: 'Reset two-factor authentication' }));

    // then the page says so, the member has none, and the service agrees
    await expect.poll(() => page.getByRole('status').textContent()).toContain('two-factor authentication was reset');
    await expect.poll(() => row(tenant.member).getByTestId('member-mfa').textContent()).toContain('No');
    expect((await tenant.member.api.get('/api/v1/users/me/mfa')).status).toBe(200);
    expect((await tenant.member.api.get('/api/v1/users/me/mfa')).body).toMatchObject({ totp: false });
    expect(memberSecret).not.toBe('');
    await page.context().close();
  });
});

/** A phone's screen, as test/portal/narrow-screens.browser.test.ts checks every page on. */
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 800 }, bypassCSP: true };
const screenshots = new URL('../.tmp/', import.meta.url);
const screenshot = async (page: Page, name: string) => {
  await mkdir(screenshots, { recursive: true });
  await page.screenshot({ path: new URL(name, screenshots).pathname, fullPage: true });
};

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
  test('the setup required by the organization, its recovery codes, and the code step of the sign-in pass axe-core', async () => {
    // given a new member of the organization that requires a second factor
    const newcomer = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'newcomer');
    const page = await freshPage(browser, server.url, PHONE);
    await page.goto('/login');
    await signInOnPage(page, newcomer.email, PASSWORD);
    await page.waitForURL((url) => url.pathname === '/portal/security' && url.searchParams.get('enrol') === '1');
    const section = page.getByTestId('two-factor');

    // the page that says why, the setup with its QR code, and the recovery codes
    await section.getByTestId('enrol-required').waitFor();
    expect(await problemsOn(page), 'the required setup').toEqual([]);
    const required = page.url();
    await proveFirstFactor(page);
    await submit(page, section.getByRole('button', { name: 'Set up an authenticator app' }));
    const secret = (await section.getByTestId('totp-secret').textContent())!.trim();
    // still the page the policy sent them to, saying why
    expect(page.url()).toBe(required);
    await expect(section.getByTestId('enrol-required').count()).resolves.toBe(1);
    expect(await problemsOn(page), 'the QR code and key').toEqual([]);
    await screenshot(page, 'mfa-setup.png');
    await section.getByLabel('Code from your authenticator app').fill(nextCode(secret));
    await submit(page, section.getByRole('button', { name: 'Confirm' }));
    await expect.poll(() => section.getByTestId('recovery-codes').locator('li').count()).toBe(10);
    expect(await problemsOn(page), 'the recovery codes').toEqual([]);
    await screenshot(page, 'mfa-recovery-codes.png');
    await page.context().close();

    // the code step of the sign-in, refused once
    const phone = await freshPage(browser, server.url, PHONE);
    await phone.goto('/login');
    await signInOnPage(phone, newcomer.email, PASSWORD);
    await phone.getByTestId('second-factor').waitFor();
    expect(await problemsOn(phone), 'the code step').toEqual([]);
    await answerSecondFactor(phone, { code: wrong(nextCode(secret)) });
    await expect.poll(() => phone.getByRole('alert').textContent()).toContain('That code is wrong');
    expect(await problemsOn(phone), 'the refused code').toEqual([]);
    await screenshot(phone, 'mfa-code-step.png');
    await phone.context().close();
  });
});
