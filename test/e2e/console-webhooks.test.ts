// Webhooks in the console: an endpoint made (its secret shown once), a job's end delivered and seen in its delivery
// log, redelivered with the same webhook-id, disabled, and deleted.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { item } from '../shared/content-suite.js';
import { expectNoProblems, launchBrowser, openConsole, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let receiver: Receiver;
let wendy: HttpClient;

beforeAll(async () => {
  [t, browser, receiver] = await Promise.all([startTestApp(), launchBrowser(), startReceiver()]);
  expect((await t.root.post('/api/user/', { username: 'wendy', password: 'wendy-password' })).status).toBe(201);
  wendy = new HttpClient(t.url);
  await wendy.login('wendy', 'wendy-password');
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await t?.close();
});

describe('webhooks', () => {
  it('creates an endpoint (secret shown once), shows its deliveries, redelivers, disables and deletes it', async () => {
    const { page, problems } = await openConsole(browser, t.url);
    await signIn(page, 'wendy', 'wendy-password');
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await expect.poll(() => page.getByText('No webhook endpoints yet.').count()).toBe(1);

    await page.getByRole('button', { name: 'New endpoint' }).click();
    const form = page.getByRole('dialog');
    await form.getByLabel('URL').fill(`${receiver.url}/console`);
    await form.getByLabel('Description').fill('from the console');
    await form.getByRole('button', { name: 'New endpoint' }).click();
    const secret = await page.getByTestId('webhook-secret').textContent();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();

    const row = page.getByTestId('webhooks-table').locator('tbody tr', { hasText: 'from the console' });
    await row.waitFor();
    expect(await row.textContent()).toContain('Enabled');
    expect(await row.textContent()).not.toContain(secret!.slice(6, 20));

    await wendy.post('/api/content/batch', [item()]);
    await expect.poll(() => receiver.requests.length).toBe(1);
    await row.getByRole('button', { name: 'Deliveries' }).click();
    const log = page.getByTestId('webhook-deliveries');
    await expect.poll(() => log.locator('tbody tr').count()).toBe(1);
    expect(await log.textContent()).toContain('job.completed');
    expect(await log.textContent()).toContain('200');
    await log.getByRole('button', { name: 'Redeliver' }).click();
    await expect.poll(() => receiver.requests.length).toBe(2);
    expect(receiver.requests[1]!.headers['webhook-id']).toBe(receiver.requests[0]!.headers['webhook-id']);
    await page.keyboard.press('Escape');

    await row.getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => row.textContent()).toContain('Disabled');
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByText('No webhook endpoints yet.').count()).toBe(1);
    expectNoProblems(problems);
  });
});
