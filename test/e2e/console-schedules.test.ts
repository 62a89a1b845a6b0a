// Schedules in the console: made on one of your mail accounts, listed with their next run, paused and resumed, deleted.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let dovecot: DovecotServer;

beforeAll(async () => {
  [t, browser, dovecot] = await Promise.all([startTestApp(), launchBrowser(), startDovecot()]);
  expect((await t.root.post('/api/user/', { username: 'sami', password: 'sami-password' })).status).toBe(201);
  const sami = new HttpClient(t.url);
  await sami.login('sami', 'sami-password');
  await addPasswordAccount(sami, dovecot, 'sami@example.test');
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await dovecot?.stop();
});

describe('schedules', () => {
  it('creates a schedule on an account, shows its next run, pauses and resumes it, and deletes it', async () => {
    const { page, problems } = await openConsole(browser, t.url);
    await signIn(page, 'sami', 'sami-password');
    await page.getByRole('link', { name: 'Schedules' }).click();
    await expect.poll(() => page.getByText('No schedules yet.').count()).toBe(1);

    await page.getByRole('button', { name: 'New schedule' }).click();
    const form = page.getByRole('dialog');
    await form.getByLabel('Name').fill('empty junk hourly');
    await expect.poll(() => form.getByLabel('Email').inputValue()).toBe('sami@example.test');
    await form.getByRole('button', { name: 'New schedule' }).click();

    const row = page.getByTestId('schedules-table').locator('tbody tr', { hasText: 'empty junk hourly' });
    await row.waitFor();
    expect(await row.textContent()).toContain('every 1 h');
    expect(await row.textContent()).toContain('sami@example.test · Junk');
    expect(await row.textContent()).toContain('Enabled');
    // Its next run: within the hour (an interval's first run is at once, the next one an hour later).
    expect(await row.locator('td').nth(4).textContent()).toMatch(/\d/);

    await row.getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => row.textContent()).toContain('Paused');
    await row.getByRole('button', { name: 'Enable' }).click();
    await expect.poll(() => row.textContent()).toContain('Enabled');

    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.getByText('No schedules yet.').count()).toBe(1);
    expectNoProblems(problems);
  });
});
