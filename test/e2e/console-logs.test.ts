// The logs page: what its sums are of (quota used by calls, and quota added by top-ups, over the matching rows), its
// filters kept in the address (a reload or a shared link shows the same rows), and the rows' details in Chinese.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, setLanguage, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let used = 0;

beforeAll(async () => {
  // Priced, so each call's consume row is written with its charge at once.
  [t, browser] = await Promise.all([startTestApp({ env: { LOCAL_MODEL_PRICE: '1000' } }), launchBrowser()]);
  const made = await t.root.post('/api/user/', { username: 'lia', password: 'lia-password', quota: 1000 });
  expect(made.status).toBe(201);
  expect((await t.root.put(`/api/user/${made.body.data.id}`, { quota: 1500 })).status).toBe(200);
  const lia = new HttpClient(t.url);
  await lia.login('lia', 'lia-password');
  const key = (await lia.post('/api/token/', { name: 'logs-key', unlimited_quota: true })).body.data.key as string;
  for (const input of ['hello world', 'a longer text to embed']) {
    const res = await fetch(`${t.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'local-hash-v1', input }),
    });
    expect(res.status).toBe(200);
  }
  const consumed = (await lia.get('/api/log/self?type=2')).body.data as { quota: number }[];
  expect(consumed).toHaveLength(2);
  used = consumed.reduce((n, r) => n + r.quota, 0);
  expect(used).toBeGreaterThan(0);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('logs', () => {
  it('says what it sums, keeps its filters in the address, and shows the details in Chinese', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'lia', 'lia-password');
    await page.locator('#site-nav').getByRole('link', { name: 'My logs' }).click();
    const table = page.getByTestId('logs-table');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(5);
    // Both sums, each named: the calls' (consume rows) and the top-ups' (+1,000 and +500 in the rows shown).
    const stat = page.getByTestId('logs-stat');
    await expect
      .poll(() => stat.textContent())
      .toMatch(
        new RegExp(
          `^In the matching rows: quota used by calls ${used.toLocaleString('en')}, quota added by top-ups 1,500 · Last minute: \\d+ requests, [\\d,]+ tokens$`,
        ),
      );

    // A filter goes into the address, and stays through a reload.
    await page.getByLabel('Type').selectOption('1');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('type')).toBe('1');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    await expect.poll(() => stat.textContent()).toMatch(/^In the matching rows: quota added by top-ups 1,500 · Last minute/);
    await page.reload();
    await expect.poll(() => page.getByLabel('Type').inputValue()).toBe('1');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    // A shared link with a filter opens filtered.
    await page.goto('/logs?type=2');
    await expect.poll(() => page.getByLabel('Type').inputValue()).toBe('2');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    await expect.poll(() => stat.textContent()).toMatch(/^In the matching rows: quota used by calls [\d,]+ · Last minute/);
    // Reset clears the address too.
    await page.getByRole('button', { name: 'Reset' }).click();
    await expect.poll(() => new URL(page.url()).search).toBe('');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(5);
    await screenshotBoth(page, 'logs');

    // In Chinese, the details are Chinese too (the server writes them in English).
    await setLanguage(page, 'zh-CN');
    const details = (await table.locator('tbody tr td:last-child').allTextContents()).join('\n');
    expect(details).toContain('root (#1) 将额度从 1000 改为 1500');
    expect(details).toContain('root (#1) 设置了初始额度 1000');
    expect(details).toContain('root (#1) 创建了用户 lia (#2)，角色 1');
    expect(details).toMatch(/local-hash-v1：\d+ 个 Token，每 1K Token 1000 额度/);
    expect(details).not.toMatch(/Quota changed|Initial quota|tokens,/);
    await expect.poll(() => stat.textContent()).toContain('匹配的记录中：调用消耗额度');
    expectNoProblems(problems);
    await context.close();
  });
});
