// Signing in and out, one's own account, language and theme, keyboard use, a phone-sized screen, and what a common
// user may not see (the server refusing it as well).
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, SCREENSHOTS, screenshotBoth, setLanguage, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;

beforeAll(async () => {
  [t, browser] = await Promise.all([startTestApp({ workers: false }), launchBrowser()]);
  const made = await t.root.post('/api/user/', { username: 'carol', password: 'carol-password', display_name: 'Carol' });
  expect(made.status, made.text).toBe(201);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('signing in', () => {
  it('refuses a wrong password in words, not JSON, then signs in and out', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await page.goto('/keys');
    // Signed out: the sign-in page, which remembers where we were going.
    await expect.poll(() => new URL(page.url()).pathname).toBe('/login');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/keys');
    await screenshotBoth(page, 'login');
    await page.getByLabel('Username').fill('carol');
    await page.getByLabel(/^Password$/).fill('wrong-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('Not signed in, or the credentials were not accepted.');
    const text = (await alert.textContent()) ?? '';
    expect(text).not.toMatch(/[{}]|"success"|"message"/);
    await page.getByLabel(/^Password$/).fill('carol-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where we were going, signed in.
    await expect.poll(() => new URL(page.url()).pathname).toBe('/keys');
    await expect.poll(() => page.locator('header.top .who').textContent()).toBe('Carol');
    // The session cookie is HttpOnly, and nothing secret sits in storage.
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === 'sy_session')?.httpOnly).toBe(true);
    expect(await page.evaluate(() => Object.keys(localStorage).filter((k) => !['switchyard.lang', 'switchyard.theme'].includes(k)))).toEqual([]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/login');
    // The session is gone on the server too.
    expect((await page.request.get('/api/user/self')).status()).toBe(401);
    await page.goto('/account');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/login');
    expectNoProblems(problems);
    await context.close();
  });

  it('works with the keyboard alone: sign in, move through the menu, open and close a dialog', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await page.goto('/login');
    await page.getByLabel('Username').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('username');
    await page.keyboard.type('carol');
    await page.keyboard.press('Tab');
    await page.keyboard.type('carol-password');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('header.top .who').textContent()).toBe('Carol');
    // The first Tab reaches the skip link, which jumps to the page itself.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    // Tab along to the API keys link and follow it with Enter.
    let onKeysLink = false;
    for (let i = 0; i < 20 && !onKeysLink; i++) {
      await page.keyboard.press('Tab');
      onKeysLink = await page.evaluate(() => document.activeElement?.textContent === 'API keys');
    }
    expect(onKeysLink).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/keys');
    // Focus moves to the new page's heading.
    await expect.poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    // A visible focus ring on focused controls.
    await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).not.toBe('none');
    await page.getByRole('button', { name: 'New key' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await page.evaluate(() => !!document.activeElement?.closest('dialog'))).toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('New key');
    expectNoProblems(problems);
    await context.close();
  });
});

describe('your account', () => {
  it('changes the display name and the password', async () => {
    await t.root.post('/api/user/', { username: 'dave', password: 'dave-password' });
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'dave', 'dave-password');
    await page.getByRole('link', { name: 'dave' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/account');
    await page.getByLabel('Display name').fill('Dave D.');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('header.top .who').textContent()).toBe('Dave D.');
    expect((await t.root.get('/api/user/search?keyword=dave')).body.data[0].display_name).toBe('Dave D.');

    // A wrong current password is refused in words.
    await page.getByLabel('Current password').fill('not-it-at-all');
    await page.getByLabel('New password', { exact: true }).fill('dave-new-password');
    await page.getByLabel('New password again').fill('dave-new-password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('that is not your current password');
    await page.getByLabel('Current password').fill('dave-password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Password changed.' }).count()).toBe(1);
    await screenshotBoth(page, 'account');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, 'dave', 'dave-new-password');
    await expect.poll(() => page.locator('header.top .who').textContent()).toBe('Dave D.');
    expectNoProblems(problems);
    await context.close();
  });
});

describe('language and theme', () => {
  it('switches to Chinese and to the dark theme, and remembers both after a reload', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'carol', 'carol-password');
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en');
    expect(await page.locator('#site-nav').textContent()).toContain('Dashboard');
    await page.getByTestId('lang').selectOption('zh-CN');
    await expect.poll(() => page.locator('#site-nav').textContent()).toContain('仪表盘');
    expect(await page.locator('h1').textContent()).toBe('仪表盘');
    const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.getByRole('button', { name: '深色主题' }).click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    const dark = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(dark).not.toBe(light);
    await page.reload();
    await expect.poll(() => page.locator('#site-nav').textContent()).toContain('仪表盘');
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('zh-CN');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await page.getByRole('button', { name: '深色主题' }).getAttribute('aria-pressed')).toBe('true');
    await page.locator('.tiles').waitFor();
    await page.screenshot({ path: `${SCREENSHOTS}/dashboard-dark-zh-cn.png` });
    expectNoProblems(problems);
    await context.close();
  });

  it('starts in Chinese for a browser that prefers it', async () => {
    const { page, context } = await openConsole(browser, t.url, { locale: 'zh-CN' });
    await page.goto('/login');
    await expect.poll(() => page.getByRole('button', { name: '登录' }).count()).toBe(1);
    await context.close();
  });
});

describe('a common user', () => {
  it('never sees the admin pages, and the server refuses them anyway', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'carol', 'carol-password');
    const nav = (await page.locator('#site-nav').textContent()) ?? '';
    for (const word of ['Admin', 'Users', 'Channels', 'Redemption codes', 'All logs', 'Queues']) expect(nav).not.toContain(word);
    for (const path of ['/admin/users', '/admin/channels', '/admin/redemptions', '/admin/logs']) {
      await page.goto(path);
      await expect.poll(() => page.locator('h1').textContent(), { message: path }).toBe('Not available');
      expect(await page.locator('table').count(), path).toBe(0);
    }
    await screenshotBoth(page, 'not-available');
    // The same requests the admin pages make, from this browser session: refused by the server.
    for (const api of ['/api/user/', '/api/channel/', '/api/redemption/', '/api/log/']) {
      const res = await page.request.get(api);
      expect(res.status(), api).toBe(403);
      expect((await res.json()).success).toBe(false);
    }
    expect((await page.request.post('/api/user/', { data: { username: 'mallory', password: 'mallory-password' } })).status()).toBe(403);
    expect((await page.request.get('/admin/queues')).status()).toBe(403);
    expect((await page.request.get('/api/jobs?user=1')).status()).toBe(403);
    expectNoProblems(problems);
    await context.close();
  });

  it('an admin sees them all', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    const nav = (await page.locator('#site-nav').textContent()) ?? '';
    for (const word of ['Admin', 'Users', 'Channels', 'Redemption codes', 'All logs', 'Queues (Bull Board)']) expect(nav).toContain(word);
    expectNoProblems(problems);
    await context.close();
  });
});

describe('an address that is no page', () => {
  it("shows the console's Page not found (answered 404), in both languages; an API path stays the API's JSON", async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'carol', 'carol-password');
    const res = await page.goto('/keys/old-address');
    expect(res!.status()).toBe(404);
    await expect.poll(() => page.locator('main h1').textContent()).toBe('Page not found');
    // The menu is there to find one's way.
    expect(await page.locator('#site-nav').getByRole('link', { name: 'API keys' }).count()).toBe(1);
    await screenshotBoth(page, 'not-found');
    await setLanguage(page, 'zh-CN');
    await expect.poll(() => page.locator('main h1').textContent()).toBe('页面不存在');
    await setLanguage(page, 'en');
    const api = await page.goto('/api/nothing');
    expect(api!.status()).toBe(404);
    expect(await api!.headerValue('content-type')).toMatch(/application\/json/);
    expectNoProblems(problems);
    await context.close();
  });
});

describe('on a phone', () => {
  it('fits the screen on every page, with the menu behind a button', async () => {
    const { page, context, problems } = await openConsole(browser, t.url, { viewport: { width: 390, height: 844 } });
    await signIn(page, 'root', ROOT_PASSWORD);
    const nav = page.locator('#site-nav');
    expect(await nav.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Menu' }).click();
    expect(await nav.isVisible()).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}/phone-menu-en.png` });
    await nav.getByRole('link', { name: 'Content' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/content');
    expect(await nav.isVisible()).toBe(false);
    for (const path of [
      '/',
      '/keys',
      '/playground',
      '/content',
      '/mail',
      '/jobs',
      '/logs',
      '/account',
      '/admin/users',
      '/admin/channels',
      '/admin/redemptions',
      '/admin/logs',
    ]) {
      await page.goto(path);
      await page.locator('h1').waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      // What sticks out, if anything: the outermost elements past the right edge.
      const culprits = await page.evaluate(() =>
        [...document.querySelectorAll('body *')]
          .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.parentElement?.closest('.table-wrap'))
          .slice(0, 5)
          .map((el) => `${el.tagName.toLowerCase()}.${el.className}`),
      );
      expect(overflow, `${path} is wider than the screen by ${overflow}px: ${culprits.join(', ')}`).toBeLessThanOrEqual(0);
    }
    await page.goto('/');
    await page.locator('h1').waitFor();
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: `${SCREENSHOTS}/phone-dashboard-en.png` });
    expectNoProblems(problems);
    await context.close();
  });
});
