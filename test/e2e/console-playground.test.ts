// The playground as a new root finds it: a key made there expires by itself (and says so), a call short of quota is
// called a quota problem (not "not allowed"), root sets its own quota on the Account page, and use-lite's refusal of a
// Chinese text names the text as the form numbers it, offers the check box it suggests, and leaves no stale result.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, setLanguage, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;

beforeAll(async () => {
  // Priced built-in models: root (quota 0) cannot pay for a call until it sets its own quota.
  [t, browser] = await Promise.all([startTestApp({ env: { LOCAL_MODEL_PRICE: '100' } }), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const tokens = async () => (await t.root.get('/api/token/')).body.data as { name: string; expired_time: number }[];

describe('the playground', () => {
  it('makes a key that expires, calls a quota error a quota error, and runs once root has set its own quota', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    await page.locator('#site-nav').getByRole('link', { name: 'Playground' }).click();
    // The picker says that a key made here expires, and the key made does, in 24 hours.
    await expect.poll(() => page.getByText('expires by itself after 24 hours').count()).toBe(1);
    await page.getByRole('button', { name: 'Make a temporary key' }).click();
    await expect.poll(async () => (await tokens()).length).toBe(1);
    const [made] = await tokens();
    expect(made!.name).toBe('playground (temporary)');
    const now = Date.now() / 1000;
    expect(made!.expired_time).toBeGreaterThan(now + 23.9 * 3600);
    expect(made!.expired_time).toBeLessThan(now + 24.1 * 3600);
    await expect.poll(() => page.getByLabel('Model').inputValue()).toBe('local-hash-v1');

    // Root has no quota: the call is refused, in words that say it is about quota.
    await page.getByLabel('Text 1', { exact: true }).fill('hello');
    await page.getByLabel('Text 2', { exact: true }).fill('world');
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('Not enough quota for this.');
    expect(await alert.textContent()).not.toContain('You are not allowed to do this.');
    await setLanguage(page, 'zh-CN');
    await expect.poll(() => alert.textContent()).toContain('额度不足');
    await setLanguage(page, 'en');

    // Root sets its own quota on the Account page.
    await page.getByRole('link', { name: 'Root User' }).click();
    const own = page.locator('form', { has: page.getByRole('heading', { name: 'Your quota' }) });
    await own.getByLabel('Quota').fill('100000');
    await own.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await t.root.get('/api/user/self')).body.data.quota).toBe(100000);
    await expect.poll(() => page.locator('dl.facts').textContent()).toContain('100,000');
    await screenshotBoth(page, 'account-own-quota');

    // Back in the playground (the key made is still offered in this tab), the call goes through.
    await page.locator('#site-nav').getByRole('link', { name: 'Playground' }).click();
    await expect.poll(() => page.getByLabel('Model').inputValue()).toBe('local-hash-v1');
    await page.getByLabel('Text 1', { exact: true }).fill('hello');
    await page.getByLabel('Text 2', { exact: true }).fill('world');
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    await page.getByTestId('playground-result').waitFor();
    expect(await tokens()).toHaveLength(1);
    expectNoProblems(problems);
    await context.close();
  });

  it("names use-lite's refused text by the form's number, offers the check box it asks for, and drops a stale result", async () => {
    // Quota to spend (the first test sets it through the console; this one may run alone).
    expect((await t.root.put('/api/user/self', { quota: 100000 })).status).toBe(200);
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    await page.goto('/playground');
    await page.getByRole('button', { name: 'Make a temporary key' }).click();
    await expect.poll(() => page.getByLabel('Model').inputValue()).toBe('local-hash-v1');
    await page.getByRole('button', { name: 'Fill in an example' }).click();
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    const result = page.getByTestId('playground-result');
    await expect.poll(() => result.getByTestId('dims').textContent()).toBe('384');

    // Another model: the result of the last one goes; the check box use-lite's error speaks of is there.
    const allow = page.getByLabel('Embed texts use-lite does not know anyway', { exact: false });
    expect(await allow.count()).toBe(0);
    await page.getByLabel('Model').selectOption('use-lite');
    await expect.poll(() => result.count()).toBe(0);
    expect(await allow.count()).toBe(1);
    // An empty first box: the Chinese text is the server's input[1] and the form's Text 3.
    await page.getByLabel('Text 1', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('Text 3 is in a script or language that use-lite');
    const said = (await alert.textContent()) ?? '';
    expect(said).not.toContain('input[');
    expect(said).not.toContain('allow_unsupported_text');
    expect(said).toContain('tick "Embed texts use-lite does not know anyway');
    expect(await result.count()).toBe(0);
    await setLanguage(page, 'zh-CN');
    await page.getByRole('button', { name: '生成向量并比较' }).click();
    await expect.poll(() => alert.textContent()).toContain('文本 3 的文字或语言是 use-lite');
    await setLanguage(page, 'en');

    // Ticked, the same texts are embedded (the Chinese one anyway).
    await allow.check();
    await page.getByRole('button', { name: 'Embed and compare' }).click();
    await expect.poll(() => result.getByTestId('dims').textContent()).toBe('512');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await result.getByTestId('matrix').locator('tbody tr').count()).toBe(3);
    expectNoProblems(problems);
    await context.close();
  });
});
