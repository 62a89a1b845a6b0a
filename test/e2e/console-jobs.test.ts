// The Jobs page's actions: Cancel on a waiting job (it reads Cancelled), Retry on a failed one (run again, with its audit row).
import net from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers, type WorkerSet } from '../../workers/index.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { until } from '../helpers/until.js';
import { expectNoProblems, launchBrowser, openConsole, signIn } from './browser.js';

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
});
