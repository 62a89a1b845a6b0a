// Content in the console: browsing with infinite scroll on the keyset cursor, search in Chinese, filters and sort,
// an item's page, delete (creator or admin), and the stats by source.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
const TOTAL = 75;

function item(i: number) {
  const chinese = i % 5 === 0;
  return {
    source: i % 3 === 0 ? 'linuxdo' : 'twitter',
    url: `https://example.com/post/${i}`,
    title: chinese ? `独特的开源项目 第${i}号` : `Post number ${i}`,
    summary: chinese ? `这是一个关于独特开源项目的摘要，编号 ${i}。` : `A summary of post ${i}, about nothing in particular.`,
    content: chinese ? `正文：独特 ${i}` : `The body of post ${i}.`,
    score: (i % 10) + 0.5,
    analyzedBy: 'gpt-4o',
    analyzedAt: new Date(Date.UTC(2026, 10, 1) + i * 60_000).toISOString(),
  };
}

beforeAll(async () => {
  [t, browser] = await Promise.all([startTestApp(), launchBrowser()]);
  await t.root.post('/api/user/', { username: 'frank', password: 'frank-password' });
  const frank = new HttpClient(t.url);
  await frank.login('frank', 'frank-password');
  // Root stores most items, frank stores the last five (his to delete).
  const res = await t.root.post(
    '/api/content/batch',
    Array.from({ length: TOTAL - 5 }, (_, i) => item(i)),
  );
  expect(res.body.success, res.text).toBe(TOTAL - 5);
  const mine = await frank.post(
    '/api/content/batch',
    Array.from({ length: 5 }, (_, i) => item(TOTAL - 5 + i)),
  );
  expect(mine.body.success, mine.text).toBe(5);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('content', () => {
  it('scrolls through every item page by page, searches in Chinese, filters and sorts', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'frank', 'frank-password');
    await page.locator('#site-nav').getByRole('link', { name: 'Content', exact: true }).click();
    const items = page.getByTestId('content-items').locator('li');
    await expect.poll(() => items.count()).toBe(30);
    expect(await page.getByTestId('content-count').textContent()).toBe(`${TOTAL} items`);
    // Highest score first by default.
    expect(await items.first().locator('.item-meta').textContent()).toContain('9.5');
    // The stats by source, as bars.
    const bars = page.locator('.bar-list li');
    expect(await bars.count()).toBe(2);
    expect(await bars.first().textContent()).toMatch(/twitter.*50/);
    expect(await page.locator('aside').textContent()).toContain(`${TOTAL} items in all`);
    await screenshotBoth(page, 'content');

    // Scrolling to the end loads the next page (keyset cursor from the Link header), until there is none.
    await page.locator('.sentinel').scrollIntoViewIfNeeded();
    await expect.poll(() => items.count()).toBe(60);
    await page.locator('.sentinel').scrollIntoViewIfNeeded();
    await expect.poll(() => items.count()).toBe(TOTAL);
    const titles = await items.locator('.item-title').allTextContents();
    expect(new Set(titles).size).toBe(TOTAL);
    expect(await page.getByRole('button', { name: 'Show more' }).count()).toBe(0);

    // Chinese search (typed, searched after a pause): only the items that contain it.
    await page.getByLabel('Search', { exact: true }).fill('独特');
    await expect.poll(() => page.getByTestId('content-count').textContent()).toBe('15 items');
    expect(await items.count()).toBe(15);
    for (const title of await items.locator('.item-title').allTextContents()) expect(title).toContain('独特');
    expect(new URL(page.url()).searchParams.get('q')).toBe('独特');
    await screenshotBoth(page, 'content-search');

    // Source filter on top of it, then sorting by lowest score.
    await page.getByLabel('Source', { exact: true }).selectOption('linuxdo');
    await expect.poll(() => page.getByTestId('content-count').textContent()).toBe('5 items');
    await page.getByLabel('Sort').selectOption('score:asc');
    await expect.poll(async () => (await items.first().locator('.item-meta').textContent()) ?? '').toContain('0.5');
    // Score range.
    await page.getByLabel('Search', { exact: true }).fill('');
    await page.getByLabel('Source', { exact: true }).selectOption('');
    await page.getByLabel('Score from').fill('9');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.getByTestId('content-count').textContent()).toBe('7 items');
    // Nothing matches: said so.
    await page.getByLabel('Score from').fill('');
    await page.getByLabel('Search', { exact: true }).fill('不存在的词');
    await expect.poll(() => page.getByText('Nothing matches “不存在的词”.').count()).toBe(1);
    expectNoProblems(problems);
    await context.close();
  });

  it("opens an item's page, offers no delete on another user's item, deletes one's own; an admin is offered delete", async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'frank', 'frank-password');
    await page.goto('/content?q=%E7%8B%AC%E7%89%B9%E7%9A%84%E5%BC%80%E6%BA%90%E9%A1%B9%E7%9B%AE%20%E7%AC%AC5%E5%8F%B7');
    const items = page.getByTestId('content-items').locator('li');
    await expect.poll(() => items.count()).toBe(1);
    await items.first().locator('.item-title').click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('独特的开源项目 第5号');
    expect(await page.locator('article').textContent()).toContain('正文：独特 5');
    expect(await page.locator('article a[href="https://example.com/post/5"]').getAttribute('rel')).toBe('noopener noreferrer');
    await screenshotBoth(page, 'content-item');
    // Root stored this one: frank may not delete it, so he is not offered a Delete the server would refuse (403).
    await page.getByRole('link', { name: 'Back to the list' }).waitFor();
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0);
    const rootsItem = new URL(page.url()).pathname;

    // His own item (stored by him): deleted, back to the list, gone.
    const own = (await t.root.get(`/api/content?q=${encodeURIComponent(`Post number ${TOTAL - 1}`)}`)).body[0];
    await page.goto(`/content/${own.id}`);
    await expect.poll(() => page.locator('h1').textContent()).toBe(`Post number ${TOTAL - 1}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/content');
    expect((await t.root.get(`/api/content/${own.id}`)).status).toBe(404);
    await expect.poll(() => page.getByTestId('content-count').textContent()).toBe(`${TOTAL - 1} items`);
    // Root may delete anyone's item: offered to them (on frank's item, and root's own).
    const root = await openConsole(browser, t.url);
    await signIn(root.page, 'root', ROOT_PASSWORD);
    const franks = (await t.root.get(`/api/content?q=${encodeURIComponent(`Post number ${TOTAL - 2}`)}`)).body[0];
    for (const path of [`/content/${franks.id}`, rootsItem]) {
      await root.page.goto(path);
      await root.page.getByRole('link', { name: 'Back to the list' }).waitFor();
      await expect.poll(() => root.page.getByRole('button', { name: 'Delete' }).count()).toBe(1);
    }
    expectNoProblems(root.problems);
    await root.context.close();
    // An unknown item says so.
    await page.goto('/content/0193a1b2-0000-7000-8000-000000000000');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Content not found');
    expectNoProblems(problems);
    await context.close();
  });
});
