// API keys in the console (made, shown once and copied, listed masked, disabled, edited, deleted), used from the
// embeddings playground, and the dashboard charting that usage.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;

beforeAll(async () => {
  // Priced, so each call's usage row is written with its charge (free calls are gathered per minute).
  [t, browser] = await Promise.all([startTestApp({ env: { LOCAL_MODEL_PRICE: '100' } }), launchBrowser()]);
  const made = await t.root.post('/api/user/', { username: 'erin', password: 'erin-password', display_name: 'Erin', quota: 100000 });
  expect(made.status, made.text).toBe(201);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('API keys and the playground', () => {
  it('makes a key, shows it once with a copy button, and uses it from the playground', async () => {
    const { page, context, problems } = await openConsole(browser, t.url, { clipboard: true });
    await signIn(page, 'erin', 'erin-password');
    await page.getByRole('link', { name: 'API keys' }).click();
    await expect.poll(() => page.getByText('You have no API keys yet.').count()).toBe(1);

    await page.getByRole('button', { name: 'New key' }).click();
    const form = page.getByRole('dialog');
    await form.getByLabel('Name').fill('laptop');
    await form.getByLabel('Models').fill('local-hash-v1');
    await form.getByRole('button', { name: 'New key' }).click();

    // Shown once, whole, with a copy button that puts exactly it on the clipboard.
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.textContent())!.trim();
    expect(key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    await screenshotBoth(page, 'key-created');
    await page.getByRole('dialog').getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.getByRole('dialog').getByRole('button', { name: 'Copied' }).count()).toBe(1);
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    // The key works against the API.
    expect((await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();

    // Listed masked: never the whole key again, not in the page nor in what the API sent it.
    const table = page.getByTestId('keys-table');
    await table.waitFor();
    const row = table.locator('tbody tr', { hasText: 'laptop' });
    expect(await row.locator('code').textContent()).toMatch(/^sk-\w{4}\*+\w{4}$/);
    expect(await page.content()).not.toContain(key);
    expect(await row.textContent()).toContain('Enabled');
    expect(await row.textContent()).toContain('Unlimited');
    expect(await row.textContent()).toContain('local-hash-v1');

    // The playground: the key made in this tab is offered, the model list comes from /v1/models with it.
    await page.getByRole('link', { name: 'Playground' }).click();
    await expect.poll(() => page.getByLabel('API key').inputValue()).toBe(key);
    await expect.poll(() => page.getByLabel('Model').inputValue()).toBe('local-hash-v1');
    await page.getByLabel('Text 1', { exact: true }).fill('reset my password');
    await page.getByLabel('Text 2', { exact: true }).fill('password reset');
    await page.getByRole('button', { name: 'Add a text' }).click();
    await page.getByLabel('Text 3', { exact: true }).fill('今天天气很好');
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    const result = page.getByTestId('playground-result');
    await result.waitFor();
    expect(await result.getByTestId('dims').textContent()).toBe('384');
    expect(Number(await result.getByTestId('tokens').textContent())).toBeGreaterThan(3);
    const cells = await result.getByTestId('matrix').locator('tbody td').allTextContents();
    expect(cells).toHaveLength(9);
    const m = cells.map(Number);
    // Each text is itself (1.000 on the diagonal); the two English ones are closer to each other than to the Chinese one.
    expect([m[0], m[4], m[8]]).toEqual([1, 1, 1]);
    expect(m[1]).toBeCloseTo(m[3]!, 6);
    expect(m[1]!).toBeGreaterThan(m[2]!);
    await screenshotBoth(page, 'playground');

    // Dimensions are the model's to change; a wrong value is explained, not dumped.
    await page.getByLabel('Dimensions').fill('64');
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    await expect.poll(() => result.getByTestId('dims').textContent()).toBe('64');
    await page.getByLabel('Dimensions').fill('5000');
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain("Invalid 'dimensions'");
    expect(await alert.textContent()).not.toContain('{');

    // The calls show on the dashboard (the usage rows are written asynchronously).
    await page.getByRole('link', { name: 'Dashboard' }).click();
    await expect
      .poll(
        async () => {
          await page.reload();
          // Either the charts (loaded with their own code) or the "no usage" note.
          await page.locator('.chart canvas, .card .empty').first().waitFor();
          return page.locator('.chart canvas').count();
        },
        { timeout: 20_000, interval: 1000 },
      )
      .toBe(2);
    await page.getByText('Show the numbers as a table').click();
    expect(await page.locator('details table').textContent()).toContain('local-hash-v1');
    await screenshotBoth(page, 'dashboard');
    expectNoProblems(problems);
    await context.close();
  });

  it('disables, edits and deletes a key', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'erin', 'erin-password');
    await page.goto('/keys');
    const row = page.getByTestId('keys-table').locator('tbody tr', { hasText: 'laptop' });
    await row.waitFor();
    await row.getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => row.textContent()).toContain('Disabled');
    const [tok] = (await erinTokens()).filter((x: { name: string }) => x.name === 'laptop');
    expect(tok.status).toBe(2);
    await row.getByRole('button', { name: 'Enable' }).click();
    await expect.poll(() => row.textContent()).toContain('Enabled');

    await row.getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('laptop-2');
    await dialog.getByLabel('No limit of its own (it spends your account quota only)').uncheck();
    await dialog.getByLabel('Quota left').fill('500');
    await dialog.getByRole('button', { name: 'Save' }).click();
    const edited = page.getByTestId('keys-table').locator('tbody tr', { hasText: 'laptop-2' });
    await expect.poll(() => edited.textContent()).toContain('500');
    expect((await erinTokens()).find((x: { name: string }) => x.name === 'laptop-2')).toMatchObject({ remain_quota: 500, unlimited_quota: false });
    await screenshotBoth(page, 'keys');

    // Deleting asks first; cancelling keeps the key.
    await edited.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await erinTokens()).toHaveLength(1);
    await edited.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByText('You have no API keys yet.').count()).toBe(1);
    expect(await erinTokens()).toHaveLength(0);
    expectNoProblems(problems);
    await context.close();
  });
});

async function erinTokens() {
  const me = new (await import('../helpers/http.js')).HttpClient(t.url);
  await me.login('erin', 'erin-password');
  return (await me.get('/api/token/')).body.data;
}
