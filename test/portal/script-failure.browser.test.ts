import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';

// A page whose scripts cannot be fetched at first (a dropped connection, a deploy that replaced them) is loaded once
// more instead of staying on Kit's error page (hooks.client.ts); a failure that lasts still shows the error page.

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  server = await startTestServer();
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/**
 * Opens /admin/products with the page's own scripts failing while the first `failing` loads of the page last (each
 * is fetched twice: preloaded, then imported). Not the root layout's and error page's (nodes 0 and 1): Kit loads
 * those before it hydrates, and without them it leaves the server-rendered page as it is.
 */
async function productsWithFailingScripts(
  failing: number,
): Promise<{ page: Page; documents: () => number; failed: () => number }> {
  const page = await signedInPage(browser, server.url, ADMIN);
  let documents = 0;
  let failed = 0;
  page.on('request', (request) => request.resourceType() === 'document' && documents++);
  const ownScript = (url: URL) => /^\/_app\/immutable\/nodes\/(?![01]\.)/.test(url.pathname);
  await page.route(ownScript, (route) => {
    if (documents > failing) return route.continue();
    failed++;
    return route.abort('connectionclosed');
  });
  await page.goto('/admin/products');
  await page.waitForLoadState('networkidle');
  return { page, documents: () => documents, failed: () => failed };
}

describe('scripts that fail to load', () => {
  test('once: the page loads again and works', async () => {
    const { page, documents, failed } = await productsWithFailingScripts(1);
    expect(failed()).toBeGreaterThan(0);
    expect(documents()).toBe(2);
    await page.getByRole('heading', { name: 'Products', level: 1 }).waitFor();
    expect(await page.getByText('Something went wrong').count()).toBe(0);
    // Hydrated: the enhanced form answers in place, without a page load.
    const create = page.locator('form[action="?/create"]');
    await create.getByLabel('Name').fill('After a reload');
    await create.getByLabel('Slug').fill('after-a-reload');
    await create.getByRole('button', { name: 'Add product' }).click();
    await page.getByRole('status').filter({ hasText: 'Product after-a-reload created.' }).waitFor();
    expect(documents()).toBe(2);
  });

  test('for good: one more load, then the error page, not a loop', async () => {
    const { page, documents } = await productsWithFailingScripts(Number.POSITIVE_INFINITY);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    expect(documents()).toBe(2);
  });
});
