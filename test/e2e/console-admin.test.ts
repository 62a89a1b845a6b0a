// Admin pages: an admin creates a user and redemption codes that the user redeems (once); channels with a direct test
// and the reason of an automatic disable; logs with filters.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { type ConsolePage, expectNoProblems, launchBrowser, openConsole, screenshotBoth, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let upstream: FakeOpenAI;
let admin: ConsolePage;

beforeAll(async () => {
  [t, browser, upstream] = await Promise.all([startTestApp(), launchBrowser(), new FakeOpenAI().start()]);
  admin = await openConsole(browser, t.url, { clipboard: true });
  await signIn(admin.page, 'root', ROOT_PASSWORD);
});
afterAll(async () => {
  await admin?.context.close();
  await browser?.close();
  await t?.close();
  await upstream?.stop();
});

describe('users and redemption codes', () => {
  let codes: string[] = [];

  it('an admin creates a user, edits and finds them', async () => {
    const { page, problems } = admin;
    await page.locator('#site-nav').getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('button', { name: 'New user' }).click();
    let dialog = page.getByRole('dialog');
    await dialog.getByLabel('Username').fill('alice');
    await dialog.getByLabel('Display name').fill('Alice');
    await dialog.getByLabel('Password', { exact: true }).fill('alice-password');
    await dialog.getByLabel('Quota').fill('10');
    await dialog.getByRole('button', { name: 'New user' }).click();
    const table = page.getByTestId('users-table');
    const row = table.locator('tbody tr', { hasText: 'alice' });
    await expect.poll(() => row.textContent()).toContain('Alice');
    expect(await row.textContent()).toContain('User');
    // A taken username is refused in words.
    await page.getByRole('button', { name: 'New user' }).click();
    dialog = page.getByRole('dialog');
    await dialog.getByLabel('Username').fill('ALICE');
    await dialog.getByLabel('Password', { exact: true }).fill('another-password');
    await dialog.getByRole('button', { name: 'New user' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toContain('This clashes with something that already exists.');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('dialog').getByLabel('Quota').fill('25');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    // The dialog closes once saved, and the Quota cell (the fifth) says 25 (the row's text as a whole holds the
    // creation date, which may hold "25" too).
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await expect.poll(() => row.locator('td').nth(4).textContent()).toBe('25');
    await page.getByLabel('Find by username, name or email').fill('ali');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    await screenshotBoth(page, 'admin-users');
    expectNoProblems(problems);
  });

  it('an admin makes three codes and copies them all; the user redeems one once; a disabled one is refused', async () => {
    const { page, problems } = admin;
    await page.locator('#site-nav').getByRole('link', { name: 'Redemption codes', exact: true }).click();
    await page.getByRole('button', { name: 'New codes' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('launch');
    await dialog.getByLabel('Quota of each').fill('500');
    await dialog.getByLabel('How many (1–100)').fill('3');
    await dialog.getByRole('button', { name: 'New codes' }).click();
    const made = page.getByTestId('new-codes');
    await made.waitFor();
    codes = (await made.inputValue()).split('\n');
    expect(codes).toHaveLength(3);
    for (const c of codes) expect(c).toMatch(/^[0-9a-f]{32}$/);
    await page.getByRole('button', { name: 'Copy all' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(codes.join('\n'));
    await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();
    const table = page.getByTestId('codes-table');
    await expect.poll(() => table.locator('tbody tr', { hasText: 'Unused' }).count()).toBe(3);
    await table.locator('tbody tr', { hasText: codes[2]! }).getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => table.locator('tbody tr', { hasText: codes[2]! }).textContent()).toContain('Disabled');

    // The user: no admin pages, and a code to redeem.
    const alice = await openConsole(browser, t.url);
    await signIn(alice.page, 'alice', 'alice-password');
    expect(await alice.page.locator('#site-nav').textContent()).not.toContain('Redemption codes');
    const left = alice.page.getByTestId('quota-left');
    await expect.poll(() => left.textContent()).toBe('25');
    const redeem = async (code: string) => {
      await alice.page.getByLabel('Redemption code').fill(code);
      await alice.page.getByRole('button', { name: 'Redeem' }).click();
    };
    await redeem(codes[0]!);
    await expect.poll(() => left.textContent()).toBe('525');
    expect(await alice.page.getByRole('status').filter({ hasText: '500 quota added to your account.' }).count()).toBe(1);
    await redeem(codes[0]!);
    await expect.poll(() => alice.page.getByRole('alert').textContent()).toContain('This redemption code has already been used');
    await redeem(codes[2]!);
    await expect.poll(() => alice.page.getByRole('alert').textContent()).toContain('This redemption code is disabled');
    expect(await left.textContent()).toBe('525');
    await screenshotBoth(alice.page, 'dashboard-redeem');
    // Her own logs show the top-up.
    await alice.page.locator('#site-nav').getByRole('link', { name: 'My logs', exact: true }).click();
    await expect.poll(() => alice.page.getByTestId('logs-table').textContent()).toContain('Top-up');
    await screenshotBoth(alice.page, 'logs');
    expectNoProblems(alice.problems);
    await alice.context.close();

    await page.reload();
    await expect.poll(() => table.locator('tbody tr', { hasText: codes[0]! }).textContent()).toContain('Used');
    await screenshotBoth(page, 'admin-redemptions');
    expectNoProblems(problems);
  });

  it('deletes a user after asking', async () => {
    const made = await t.root.post('/api/user/', { username: 'temp-user', password: 'temp-password' });
    expect(made.status).toBe(201);
    const { page } = admin;
    await page.goto('/admin/users');
    const row = page.getByTestId('users-table').locator('tbody tr', { hasText: 'temp-user' });
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await t.root.get('/api/user/search?keyword=temp-user')).body.data).toEqual([]);
  });
});

describe('channels', () => {
  it('creates a channel, tests it directly, shows why it was disabled automatically, and enables it again', async () => {
    const { page, problems } = admin;
    upstream.behaviour = { kind: 'status', status: 401, message: 'Incorrect API key provided: sk-up***' };
    await page.locator('#site-nav').getByRole('link', { name: 'Channels', exact: true }).click();
    await expect.poll(() => page.getByText('No channels: only the built-in models are served.').count()).toBe(1);
    await page.getByRole('button', { name: 'New channel' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('upstream-a');
    await dialog.getByLabel('Base URL').fill(upstream.url);
    await dialog.getByLabel('Upstream key').fill('sk-upstream-secret');
    await dialog.getByLabel('Models').fill('text-embedding-3-small');
    await dialog.getByLabel('Price').fill('0');
    await dialog.getByRole('button', { name: 'New channel' }).click();
    const row = page.getByTestId('channels-table').locator('tbody tr', { hasText: 'upstream-a' });
    await expect.poll(() => row.textContent()).toContain('Enabled');
    expect(await page.content()).not.toContain('sk-upstream-secret');

    // The test goes to this channel directly (no key of the admin's: root, with no quota, may test); the upstream refuses it.
    await row.getByRole('button', { name: 'Test' }).click();
    await expect.poll(() => page.locator('.toast.error').textContent()).toMatch(/^upstream-a failed the test: .*refused its key/);
    // The list shows it at once.
    await expect.poll(() => row.textContent()).toContain('Disabled automatically');
    expect(await row.getByTestId('status-reason').textContent()).toContain('Incorrect API key provided');
    await screenshotBoth(page, 'admin-channels');

    // Fixed upstream: enabled again, and the test answers.
    upstream.behaviour = { kind: 'ok', reportUsage: true };
    await row.getByRole('button', { name: 'Enable' }).click();
    await expect.poll(() => row.textContent()).toContain('Enabled');
    await row.getByRole('button', { name: 'Test' }).click();
    // (Toasts are hidden since the screenshots: found by their class.)
    await expect.poll(() => page.locator('.toast.ok', { hasText: 'upstream-a answered the test.' }).count()).toBe(1);
    await expect.poll(() => row.getByTestId('response-time').textContent()).toMatch(/^\d+ ms$/);
    expect(upstream.calls.at(-1)?.authorization).toBe('Bearer sk-upstream-secret');

    // Edit: a new weight; the key is kept when left empty.
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('dialog').getByLabel('Weight').fill('5');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => row.locator('td').nth(4).textContent()).toBe('5');
    expectNoProblems(problems);
  });
});

describe('logs', () => {
  it("filters everyone's logs by type and user", async () => {
    const { page, problems } = admin;
    await page.locator('#site-nav').getByRole('link', { name: 'All logs', exact: true }).click();
    const table = page.getByTestId('logs-table');
    await expect.poll(() => table.textContent()).toContain('alice');
    await page.getByLabel('Type').selectOption({ label: 'Top-up' });
    await page.getByLabel('User', { exact: true }).fill('alice');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(async () => (await table.locator('tbody tr').allTextContents()).every((r) => r.includes('Top-up') && r.includes('alice'))).toBe(true);
    // Her initial quota, its change, and the redemption: three top-up rows.
    const rows = await table.locator('tbody tr').allTextContents();
    expect(rows).toHaveLength(3);
    expect(rows.join('\n')).toMatch(/Redeemed code #\d+ "launch": \+500 quota/);
    expect(rows.join('\n')).toContain('Initial quota 10');
    expect(rows.join('\n')).toContain('Quota changed from 10 to 25');
    await expect.poll(() => page.getByTestId('logs-stat').textContent()).toMatch(/^In the matching rows: quota added by top-ups 525 · Last minute/);
    await screenshotBoth(page, 'admin-logs');
    await page.getByLabel('Type').selectOption({ label: 'Management' });
    await page.getByLabel('User', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => table.textContent()).toContain('Created channel');
    expectNoProblems(problems);
  });
});
