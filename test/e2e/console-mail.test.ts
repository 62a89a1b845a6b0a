// Mail in the console, against a real Dovecot: accounts (add, import, delete, last error), reading mail safely (a
// sandboxed frame that loads nothing remote and runs no script), a verification code that arrives while the console
// waits and shows live progress, emptying a folder after a confirmation, and the jobs page following a job live.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMessage, type DovecotServer, startDovecot } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let dovecot: DovecotServer;
let gina: HttpClient;
/** A server the mails try to load things from: it must never hear from the browser. */
let tracker: http.Server;
const trackerHits: string[] = [];
let trackerUrl = '';

const EMAIL = 'gina@mail.test';

beforeAll(async () => {
  tracker = http.createServer((req, res) => {
    trackerHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end();
  });
  await new Promise<void>((r) => tracker.listen(0, '127.0.0.1', () => r()));
  trackerUrl = `http://127.0.0.1:${(tracker.address() as AddressInfo).port}`;
  [t, browser, dovecot] = await Promise.all([startTestApp({ env: { MAIL_TIMEOUT_MS: '5000', JOB_BACKOFF_MS: '100' } }), launchBrowser(), startDovecot()]);
  await t.root.post('/api/user/', { username: 'gina', password: 'gina-password' });
  gina = new HttpClient(t.url);
  await gina.login('gina', 'gina-password');
  await dovecot.addUser(EMAIL, 'imap-password');
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await dovecot?.stop();
  tracker?.closeAllConnections();
  await new Promise((r) => tracker?.close(r));
});

async function openAccount(page: Page, email: string) {
  await page.goto('/mail');
  await page.getByTestId('mail-accounts').getByRole('link', { name: email }).click();
  await expect.poll(() => page.locator('h1').textContent()).toBe(email);
}

describe('mail accounts', () => {
  it('adds an account with its own servers, imports many, and deletes one after asking', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'gina', 'gina-password');
    await page.locator('#site-nav').getByRole('link', { name: 'Mail', exact: true }).click();
    await expect.poll(() => page.getByText('No mail accounts yet.').count()).toBe(1);
    await page.getByRole('button', { name: 'Add account' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Email address').fill(EMAIL);
    await dialog.getByRole('textbox', { name: 'Password' }).fill('imap-password');
    await dialog.getByLabel('Other servers than Outlook’s').check();
    await dialog.locator('input[name="imap-host"]').fill('127.0.0.1');
    await dialog.locator('input[name="imap-port"]').fill(String(dovecot.port));
    await dialog.locator('input[name="imap-secure"]').uncheck();
    await dialog.locator('input[name="smtp-host"]').fill('127.0.0.1');
    await dialog.locator('input[name="smtp-port"]').fill('2525');
    await dialog.getByRole('button', { name: 'Add account' }).click();
    const table = page.getByTestId('mail-accounts');
    await expect.poll(() => table.textContent()).toContain(EMAIL);
    expect(await table.textContent()).toContain(`127.0.0.1:${dovecot.port}`);
    const [stored] = (await gina.get('/api/mail/accounts')).body;
    expect(stored).toMatchObject({ email: EMAIL, auth_type: 'password', imap: { host: '127.0.0.1', port: dovecot.port, secure: false } });

    // An Outlook account with OAuth2: the client id and refresh token are stored (encrypted), never shown again.
    await page.getByRole('button', { name: 'Add account' }).click();
    const oauth = page.getByRole('dialog');
    await oauth.getByLabel('Email address').fill('someone@outlook.test');
    await oauth.getByLabel('Microsoft OAuth2').check();
    await oauth.getByLabel('Client ID').fill('9e5f94bc-e8a4-4e73-b8be-63364c29d753');
    await oauth.getByLabel('Refresh token').fill('M.C5-refresh-token-secret');
    await oauth.getByRole('button', { name: 'Add account' }).click();
    await expect.poll(() => table.locator('tbody tr', { hasText: 'someone@outlook.test' }).textContent()).toContain('OAuth2');
    expect(await table.locator('tbody tr', { hasText: 'someone@outlook.test' }).textContent()).toContain('outlook.office365.com:993');
    expect(JSON.stringify((await gina.get('/api/mail/accounts')).body)).not.toContain('M.C5-refresh-token-secret');
    await gina.delete('/api/mail/accounts/someone%40outlook.test');
    await page.reload();
    await expect.poll(() => table.textContent()).not.toContain('someone@outlook.test');

    // Import: each line answered on its own.
    await page.getByRole('button', { name: 'Import' }).click();
    await page
      .getByRole('dialog')
      .getByLabel('Accounts')
      .fill(['# two accounts and a mistake', 'imported@outlook.test----some-password', 'not-an-email----x'].join('\n'));
    await page.getByRole('dialog').getByRole('button', { name: 'Import' }).click();
    await expect.poll(() => page.getByRole('dialog').getByRole('status').textContent()).toContain('1 imported, 1 failed');
    expect(await page.getByRole('dialog').textContent()).toContain('email: must be an email address');
    await page.getByRole('dialog').getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => table.textContent()).toContain('imported@outlook.test');
    await screenshotBoth(page, 'mail');

    const row = table.locator('tbody tr', { hasText: 'imported@outlook.test' });
    await row.getByRole('button', { name: 'Delete' }).click();
    expect(await page.getByRole('dialog').textContent()).toContain('imported@outlook.test and its stored credentials are removed');
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await gina.get('/api/mail/accounts')).body).toHaveLength(2);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(async () => (await gina.get('/api/mail/accounts')).body.length).toBe(1);
    await expect.poll(() => table.textContent()).not.toContain('imported@outlook.test');
    expectNoProblems(problems);
    await context.close();
  });

  it("shows a mail server's refusal in words, and the account's last error", async () => {
    const refused = 'nobody-home@mail.test';
    const res = await gina.post('/api/mail/accounts', {
      email: refused,
      auth: { type: 'password', password: 'x' },
      imap: { host: '127.0.0.1', port: 1, secure: false },
      smtp: { host: '127.0.0.1', port: 1, secure: false },
    });
    expect(res.status, res.text).toBe(201);
    const { page, context } = await openConsole(browser, t.url);
    await signIn(page, 'gina', 'gina-password');
    await openAccount(page, refused);
    await page.getByRole('button', { name: 'Latest mail' }).click();
    const alert = page.getByRole('alert').first();
    await expect.poll(() => alert.textContent(), { timeout: 30_000 }).toMatch(/A server behind this one refused or failed\.|This took too long/);
    expect(await alert.textContent()).not.toContain('{');
    await expect.poll(() => page.getByTestId('last-error').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByTestId('last-error').textContent()).toMatch(/ECONNREFUSED|refused|connect/i);
    await context.close();
    await gina.delete(`/api/mail/accounts/${encodeURIComponent(refused)}`);
  });
});

describe('reading mail and getting a code', () => {
  it('waits for a code with live progress, and shows it as soon as the mail arrives', async () => {
    const { page, context, problems } = await openConsole(browser, t.url, { clipboard: true });
    await signIn(page, 'gina', 'gina-password');
    await openAccount(page, EMAIL);
    await page.getByLabel('Wait (seconds)').fill('40');
    await page.getByRole('button', { name: 'Get code' }).click();
    // Waiting, visibly: the job's state from its event stream and the seconds going by.
    const progress = page.getByTestId('code-progress');
    await progress.waitFor();
    await expect.poll(() => progress.textContent()).toMatch(/Waiting for a code… [1-9]\d* s of 40 s · (Waiting|Running)/);
    expect(await progress.locator('progress').getAttribute('max')).toBe('40');
    await screenshotBoth(page, 'mail-code-waiting');
    const delivered = Date.now();
    await dovecot.deliver(
      EMAIL,
      'INBOX',
      buildMessage({ from: 'Vendor <no-reply@vendor.example>', to: EMAIL, subject: '验证码通知', html: '您的验证码是 <b>7351</b>，5分钟内有效。' }),
    );
    const result = page.getByTestId('code-result');
    await result.waitFor({ timeout: 15_000 });
    const shownAfter = Date.now() - delivered;
    expect(await result.locator('.code').textContent()).toBe('7351');
    expect(await result.textContent()).toContain('验证码通知');
    expect(await result.textContent()).toContain('near “验证码”');
    expect(shownAfter, `the code showed ${shownAfter} ms after the mail arrived`).toBeLessThan(5_000);
    expect(await progress.count()).toBe(0);
    await result.getByRole('button', { name: 'Copy' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('7351');
    // The latest mail, in a frame that runs nothing.
    await page.getByRole('button', { name: 'Latest mail' }).click();
    const view = page.getByTestId('message-view');
    await expect.poll(() => view.locator('h3').textContent(), { timeout: 20_000 }).toBe('验证码通知');
    // Sandboxed with no permission at all (no scripts, an opaque origin), under its own policy that loads nothing remote.
    expect(await view.locator('iframe').getAttribute('sandbox')).toBe('');
    expect(await view.locator('iframe').getAttribute('srcdoc')).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:;`,
    );
    expect(await page.frameLocator('iframe.mail-frame').locator('body').textContent()).toContain('7351');
    await screenshotBoth(page, 'mail-account');
    expectNoProblems(problems);
    await context.close();
  });

  it('renders HTML mail without running its scripts or loading anything remote', async () => {
    await dovecot.deliver(
      EMAIL,
      'INBOX',
      buildMessage({
        from: 'Tracker <news@tracker.example>',
        to: EMAIL,
        subject: 'Newsletter with trackers',
        html: [
          '<html><head>',
          `<meta http-equiv="refresh" content="0;url=${trackerUrl}/refresh">`,
          `<link rel="stylesheet" href="${trackerUrl}/style.css">`,
          '</head><body style="background:#fef3c7">',
          '<h1 style="color:#b45309">Hello</h1>',
          `<img src="${trackerUrl}/pixel.png" width="1" height="1">`,
          `<img src="https://${trackerUrl.slice(7)}/secure.png">`,
          `<div style="background-image:url(${trackerUrl}/bg.png)">bg</div>`,
          `<script>parent.document.title = 'owned'; fetch('${trackerUrl}/script');</script>`,
          `<img src="x" onerror="fetch('${trackerUrl}/onerror')">`,
          `<iframe src="${trackerUrl}/frame"></iframe>`,
          `<form action="${trackerUrl}/form"><input name="a"></form>`,
          `<video src="${trackerUrl}/video.mp4" autoplay></video>`,
          '</body></html>',
        ].join('\n'),
      }),
    );
    const { page, context } = await openConsole(browser, t.url);
    await signIn(page, 'gina', 'gina-password');
    await openAccount(page, EMAIL);
    await page.getByRole('button', { name: 'All mail' }).click();
    const list = page.getByTestId('messages');
    await list.getByRole('button', { name: /Newsletter with trackers/ }).click();
    const frame = page.frameLocator('iframe.mail-frame');
    await expect.poll(() => frame.locator('h1').textContent()).toBe('Hello');
    // Inline styles still apply (the mail keeps its looks).
    expect(await frame.locator('h1').evaluate((el) => getComputedStyle(el).color)).toBe('rgb(180, 83, 9)');
    await page.waitForTimeout(2_000);
    expect(trackerHits, 'requests the mail made from the browser').toEqual([]);
    expect(await page.title()).not.toBe('owned');
    // The frame is still the mail (the refresh did not navigate it away).
    expect(await frame.locator('h1').textContent()).toBe('Hello');
    await context.close();
  });

  it('reads the junk folder, whatever the server calls it', async () => {
    await dovecot.deliver(EMAIL, dovecot.junkName, buildMessage({ from: 'spam@junk.example', to: EMAIL, subject: 'You won a prize', text: 'Claim it now.' }));
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'gina', 'gina-password');
    await openAccount(page, EMAIL);
    await page.getByLabel('Folder').selectOption('Junk');
    await page.getByRole('button', { name: 'Latest mail' }).click();
    const view = page.getByTestId('message-view');
    await expect.poll(() => view.locator('h3').textContent(), { timeout: 20_000 }).toBe('You won a prize');
    expect(await view.textContent()).toContain('Junk');
    expect(await view.locator('pre.mail-text').textContent()).toContain('Claim it now.');
    expectNoProblems(problems);
    await context.close();
  });

  it('empties the inbox only after a confirmation', async () => {
    const before = await dovecot.count(EMAIL, 'INBOX');
    expect(before).toBeGreaterThan(0);
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'gina', 'gina-password');
    await openAccount(page, EMAIL);
    await page.getByRole('button', { name: 'Empty inbox' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain(`Every message in Inbox of ${EMAIL} is deleted on the server.`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForTimeout(500);
    expect(await dovecot.count(EMAIL, 'INBOX')).toBe(before);
    await page.getByRole('button', { name: 'Empty inbox' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete all messages' }).click();
    await expect
      .poll(
        () =>
          page
            .getByRole('status')
            .filter({ hasText: `${before} messages deleted from Inbox.` })
            .count(),
        { timeout: 20_000 },
      )
      .toBe(1);
    expect(await dovecot.count(EMAIL, 'INBOX')).toBe(0);
    await page.getByRole('button', { name: 'Latest mail' }).click();
    await expect.poll(() => page.getByText('This folder is empty.').count(), { timeout: 20_000 }).toBe(1);
    expectNoProblems(problems);
    await context.close();
  });
});

describe('jobs', () => {
  it('follows a running job live until it completes, and shows its result', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'gina', 'gina-password');
    const started = await gina.post('/api/vendor-email/extract-code', { email: EMAIL, wait: 30 }, { prefer: 'respond-async' });
    expect(started.status, started.text).toBe(202);
    await page.locator('#site-nav').getByRole('link', { name: 'Jobs', exact: true }).click();
    const row = page.getByTestId('jobs-table').locator('tbody tr', { hasText: started.body.jobId });
    await expect.poll(() => row.textContent()).toMatch(/mail\.code.*(Waiting|Running)/);
    expect(await page.getByRole('link', { name: 'Open Bull Board' }).count()).toBe(0);
    await screenshotBoth(page, 'jobs');
    await dovecot.deliver(
      EMAIL,
      'INBOX',
      buildMessage({ from: 'no-reply@vendor.example', to: EMAIL, subject: 'Your code', text: 'Your verification code is 482913.' }),
    );
    // No reload: the row turns to done from the job's event stream.
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('Done');
    await row.getByRole('button', { name: 'mail.code' }).click();
    await expect.poll(() => page.locator('tr.detail').textContent()).toContain('482913');
    expectNoProblems(problems);
    await context.close();
  });

  it('gives admins the way to Bull Board', async () => {
    const { page, context } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    await page.goto('/jobs');
    const link = page.getByRole('link', { name: 'Open Bull Board' });
    expect(await link.getAttribute('href')).toBe('/admin/queues');
    await link.click();
    await expect.poll(() => page.title()).toContain('Switchyard queues');
    await context.close();
  });
});
