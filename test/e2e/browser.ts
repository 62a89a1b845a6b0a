// Chromium for the browser tests (Debian's, driven by playwright-core), pages that record console errors, and screenshots.
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/**
 * Where screenshots go: docs/screenshots/ (the README links them) with `npm run screenshots`; otherwise a scratch
 * folder, so that a test run leaves the work tree as it found it.
 */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
  : path.join(os.tmpdir(), 'switchyard-screenshots');

/** A headless Chromium with a fresh profile (Playwright makes a temporary one per launch). */
export function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface ConsolePage {
  page: Page;
  context: BrowserContext;
  /** Console errors, uncaught exceptions and CSP violations seen so far. */
  problems: string[];
}

/** A new browser context (own cookies and storage) on the app, English unless told otherwise. */
export async function openConsole(
  browser: Browser,
  baseUrl: string,
  opts: { locale?: string; viewport?: { width: number; height: number }; clipboard?: boolean } = {},
): Promise<ConsolePage> {
  const context = await browser.newContext({
    baseURL: baseUrl,
    locale: opts.locale ?? 'en-US',
    viewport: opts.viewport ?? { width: 1280, height: 860 },
    timezoneId: 'UTC',
    colorScheme: 'light',
  });
  if (opts.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on('console', (m) => {
    // Failed requests the test provokes (401, 403, 404 …) are logged by Chromium as console errors: not the console's fault.
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { page, context, problems };
}

/** Signs in through the form and waits for the dashboard (or the page asked for). */
export async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel(/Username|用户名/).fill(username);
  await page.getByLabel(/^(Password|密码)$/).fill(password);
  await page.getByRole('button', { name: /^(Sign in|登录)$/ }).click();
  await page.waitForURL((url) => url.pathname !== '/login');
  await page.locator('header.top').waitFor();
}

export async function setLanguage(page: Page, lang: 'en' | 'zh-CN'): Promise<void> {
  await page.getByTestId('lang').first().selectOption(lang);
  await expect.poll(() => page.evaluate(() => document.documentElement.lang)).toBe(lang);
}

/**
 * Writes `<name>-en.png` and `<name>-zh-cn.png` into SCREENSHOTS: the
 * page as it is, in English and then in Chinese (switched in place, so the page keeps its state), and
 * leaves it in English.
 */
export async function screenshotBoth(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  for (const lang of ['en', 'zh-CN'] as const) {
    await setLanguage(page, lang);
    // Toasts come and go: leave them out of the pictures.
    await page.addStyleTag({ content: '.toasts{display:none!important}' }).catch(() => {});
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${lang.toLowerCase()}.png`), animations: 'disabled' });
  }
  await setLanguage(page, 'en');
}

export function expectNoProblems(problems: string[]): void {
  expect(problems, 'console errors, uncaught exceptions or CSP violations in the page').toEqual([]);
}
