// Bull Board in a real browser (issue 22 item 8): it renders its queues for an admin with every request on this origin
// (its page asked a public font CDN before) and no CSP violation under the policy it is now served with.
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
});
