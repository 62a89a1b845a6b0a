// The Jobs page's actions: Cancel on a waiting job (it reads Cancelled), Retry on a failed one (run again, with its audit row).
import net from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers, type WorkerSet } from '../../workers/index.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { until } from '../helpers/until.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, setLanguage, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let workers: WorkerSet | undefined;
let jo: HttpClient;

beforeAll(async () => {
  // No workers at first: a submitted job waits.
  [t, browser] = await Promise.all([startTestApp({ workers: false, env: { SYNC_WAIT_MS: '300' } }), launchBrowser()]);
  expect((await t.root.post('/api/user/', { username: 'jo', password: 'jo-password' })).status).toBe(201);
  jo = new HttpClient(t.url);
  await jo.login('jo', 'jo-password');
});
afterAll(async () => {
  await workers?.close(2_000);
  await browser?.close();
  await t?.close();
});

describe('jobs', () => {
  it('cancels a waiting job from its row, and retries a failed one', async () => {
    const item = { source: 'x', url: 'https://example.com/e2e-cancel', summary: 's', content: 'c', score: 5, title: 't', analyzedBy: 'm' };
    const waiting = (await jo.post('/api/content/batch', [item], { prefer: 'respond-async' })).body.jobId as string;
    const { page, problems } = await openConsole(browser, t.url);
    await signIn(page, 'jo', 'jo-password');
    await page.getByRole('link', { name: 'Jobs' }).click();
    const row = page.getByTestId('jobs-table').locator('tbody tr', { hasText: waiting });
    await row.waitFor();
    await row.getByRole('button', { name: 'Cancel job' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel job' }).click();
    await expect.poll(() => row.textContent()).toContain('Cancelled');
    expect((await jo.get(`/api/jobs/${waiting}`)).body.state).toBe('cancelled');

    // A fetch from a server that is not there fails for good; Retry runs it again.
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    await jo.post('/api/mail/accounts', {
      email: 'gone@example.test',
      auth: { type: 'password', password: 'x' },
      imap: { host: '127.0.0.1', port: closed, secure: false },
    });
    workers = await startWorkers(t.platform, ['mail']);
    const failing = (await jo.post('/api/mail-new', { email: 'gone@example.test' }, { prefer: 'respond-async' })).body.jobId as string;
    await until(
      'the fetch to fail',
      async () => (await jo.get(`/api/jobs/${failing}`)).body.state,
      (s) => s === 'failed',
    );
    await page.getByRole('button', { name: 'Refresh' }).click();
    const failed = page.getByTestId('jobs-table').locator('tbody tr', { hasText: failing });
    await failed.waitFor();
    await failed.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Retry' }).click();
    await until(
      'the audit row of the retry',
      async () => JSON.stringify((await jo.get('/api/log/self?type=3')).body),
      (s) => s.includes(`Retried job ${failing}`),
    );
    expectNoProblems(problems);
  });

  it('shows a content batch with failed entries as partly failed, with each failed entry readable (both languages)', async () => {
    const content = await startWorkers(t.platform, ['content']);
    try {
      const good = { source: 'x', url: 'https://example.com/e2e-partial', summary: 's', content: 'c', score: 5, title: 't' };
      const items = [good, { ...good, url: 'https://example.com/e2e-bad', score: 'high' }, good];
      const jobId = (await jo.post('/api/content/batch', items, { prefer: 'respond-async' })).body.jobId as string;
      const done = await until(
        'the batch to end',
        async () => (await jo.get(`/api/jobs/${jobId}`)).body,
        (j) => j.state === 'completed',
      );
      expect(done.result).toMatchObject({ success: 1, failed: 2, total: 3 });
      const { page, problems } = await openConsole(browser, t.url);
      await signIn(page, 'jo', 'jo-password');
      await page.goto('/jobs');
      const row = page.getByTestId('jobs-table').locator('tbody tr', { hasText: jobId });
      await expect.poll(() => row.locator('.badge').textContent()).toBe('Done, 2 of 3 failed');
      expect(await row.locator('.badge').getAttribute('class')).toContain('warn');
      await row.getByRole('button', { name: 'content.batch' }).click();
      const failed = page.getByTestId('job-failed-entries');
      await failed.waitFor();
      const lines = await failed.locator('tbody tr').allTextContents();
      expect(lines).toHaveLength(2);
      expect(lines[0]).toContain('https://example.com/e2e-bad');
      expect(lines[0]).toMatch(/^2/);
      expect(lines[1]).toMatch(/^3/);
      expect(lines[1]).toContain('https://example.com/e2e-partial');
      expect(await page.getByTestId('job-entries').textContent()).toBe('1 of 3 entries done, 2 failed.');
      // The JSON is there for whoever wants it, folded away.
      expect(await page.locator('.job-detail pre.json').isVisible()).toBe(false);
      await screenshotBoth(page, 'jobs-partly-failed');
      await setLanguage(page, 'zh-CN');
      await expect.poll(() => row.locator('.badge').textContent()).toBe('已完成，3 条中 2 条失败');
      expect(await page.getByTestId('job-entries').textContent()).toBe('3 条中 1 条成功，2 条失败。');
      expectNoProblems(problems);
    } finally {
      await content.close(2_000);
    }
  });
});
