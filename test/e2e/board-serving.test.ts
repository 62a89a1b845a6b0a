// Bull Board in a real browser (issue 22 item 8): it renders its queues for an admin with every request on this origin
// (its page asked a public font CDN before) and no CSP violation under the policy it is now served with; a link leads
// back to the console.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;

beforeAll(async () => {
  [t, browser] = await Promise.all([startTestApp({ workers: false }), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('Bull Board', () => {
  it('renders its queues and a queue page for an admin, asking nothing of any other origin, with no CSP violation', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    const requested: string[] = [];
    context.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => {
      // Chromium reports a refused load as a console error; openConsole leaves "Failed to load resource" out, not these.
      if (/Content Security Policy/i.test(m.text())) problems.push(`csp: ${m.text()}`);
    });
    await signIn(page, 'root', ROOT_PASSWORD);
    await page.goto('/admin/queues');
    for (const queue of ['content', 'embeddings', 'mail']) await page.getByRole('link', { name: queue, exact: true }).first().waitFor();
    await page.getByRole('link', { name: 'content', exact: true }).first().click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/admin/queues/queue/content');
    await page.waitForLoadState('networkidle');
    const boardRequests = requested.filter((u) => new URL(u).pathname.startsWith('/admin/queues'));
    expect(boardRequests.some((u) => /\/static\/js\/main\./.test(u))).toBe(true);
    expect(requested.filter((u) => !u.startsWith(`${t.url}/`) && !u.startsWith('data:'))).toEqual([]);
    expectNoProblems(problems);
    await context.close();
  });

  it('has a link back to the console, in view and in its own menu', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    await page.goto('/admin/queues/queue/content');
    const back = page.getByRole('link', { name: 'Switchyard console' });
    await back.waitFor();
    expect(await back.isVisible()).toBe(true);
    const at = (await back.boundingBox())!;
    expect(at.y + at.height).toBeLessThanOrEqual(860);
    // The board's menu (behind its user icon) has one too.
    await page.locator('header button[aria-haspopup="menu"]').click();
    await page
      .getByRole('menuitem', { name: 'Back to the console' })
      .or(page.getByRole('link', { name: 'Back to the console' }))
      .first()
      .waitFor();
    await page.keyboard.press('Escape');
    await back.click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/');
    await page.locator('header.top').waitFor();
    expectNoProblems(problems);
    await context.close();
  });
});
