// The console's layout, measured in the browser: fields side by side share their label line and their control line
// whether or not one has a hint under it; every page's left edge is the header's; a table's text sits on the line of
// its row's buttons; on a phone, tables become blocks of lines (no sideways scroll, a time on one line); uptime in the
// reader's language. In English and Chinese.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, SCREENSHOTS, setLanguage, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
const LANGS = ['en', 'zh-CN'] as const;

beforeAll(async () => {
  [t, browser] = await Promise.all([startTestApp(), launchBrowser()]);
  // Rows for the tables: root's keys (with buttons), and log rows with a date each.
  for (const name of ['laptop', 'server']) expect((await t.root.post('/api/token/', { name, unlimited_quota: true })).status).toBe(201);
  expect((await t.root.post('/api/user/', { username: 'lee', password: 'lee-password', quota: 500 })).status).toBe(201);
  const lee = new HttpClient(t.url);
  await lee.login('lee', 'lee-password');
  expect((await lee.post('/api/token/', { name: 'a key with a long name to wrap', unlimited_quota: true })).status).toBe(201);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const box = async (l: Locator) => (await l.boundingBox())!;
/** The box of a field's label and of its control (by the control's name attribute). */
async function field(scope: Page | Locator, name: string) {
  const control = scope.locator(`[name="${name}"]`);
  const id = await control.getAttribute('id');
  return { label: await box(scope.locator(`label[for="${id}"]`)), control: await box(control) };
}

/** Fields side by side: the same top for their labels, and for their controls. */
async function expectAligned(scope: Page | Locator, names: string[]) {
  const boxes = await Promise.all(names.map((n) => field(scope, n)));
  for (const b of boxes.slice(1)) {
    expect(Math.abs(b.label.y - boxes[0]!.label.y), `labels of ${names.join(', ')}`).toBeLessThan(1);
    expect(Math.abs(b.control.y - boxes[0]!.control.y), `controls of ${names.join(', ')}`).toBeLessThan(1);
  }
}

describe('layout', () => {
  it('lines up labels and controls side by side when one field has a hint (playground, channel form)', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    for (const lang of LANGS) {
      await setLanguage(page, lang);
      await page.goto('/playground');
      await page.locator('[name="dimensions"]').waitFor();
      await expectAligned(page, ['model', 'dimensions']);
      // A button in a row of fields stands beside the controls, not beside the labels.
      const picker = await field(page, 'key');
      const make = await box(page.locator('.key-picker .inline-form > button'));
      expect(Math.abs(make.y - picker.control.y)).toBeLessThan(1);
      await page.goto('/admin/channels');
      await page.getByRole('button', { name: lang === 'en' ? 'New channel' : '新建渠道' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.locator('[name="price"]').waitFor();
      await expectAligned(dialog, ['priority', 'weight', 'price']);
      await page.keyboard.press('Escape');
    }
    expectNoProblems(problems);
    await context.close();
  });

  it("starts every page at the header's left edge, narrow window or wide, in both languages", async () => {
    for (const width of [1280, 1800]) {
      const { page, context, problems } = await openConsole(browser, t.url, { viewport: { width, height: 900 } });
      await signIn(page, 'root', ROOT_PASSWORD);
      for (const lang of LANGS) {
        await setLanguage(page, lang);
        const brand = await box(page.locator('.brand'));
        for (const path of ['/', '/keys', '/playground', '/content', '/logs', '/account', '/admin/users', '/admin/logs']) {
          await page.goto(path);
          const h1 = await box(page.locator('main h1'));
          expect(Math.abs(h1.x - brand.x), `${path} at ${width} px in ${lang}`).toBeLessThan(1);
        }
      }
      expectNoProblems(problems);
      await context.close();
    }
  });

  it("puts a table's text on the line of its row's buttons", async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'root', ROOT_PASSWORD);
    for (const lang of LANGS) {
      await setLanguage(page, lang);
      await page.goto('/keys');
      const row = page.getByTestId('keys-table').locator('tbody tr', { hasText: 'laptop' });
      await row.waitFor();
      // The bottom of the first cell's text and of the text in the row's first button: the same line.
      const [cellText, buttonText] = await row.evaluate((tr) => {
        const textBox = (el: Element) => {
          const range = document.createRange();
          range.selectNodeContents(el);
          return range.getBoundingClientRect();
        };
        return [textBox(tr.querySelector('td')!), textBox(tr.querySelector('td.row-actions button')!)].map((r) => r.bottom);
      });
      expect(Math.abs(cellText! - buttonText!)).toBeLessThan(2);
    }
    expectNoProblems(problems);
    await context.close();
  });

  it('on a phone: no table scrolls sideways, a log time stays on one line, key buttons are on screen', async () => {
    const { page, context, problems } = await openConsole(browser, t.url, { viewport: { width: 390, height: 844 } });
    await signIn(page, 'lee', 'lee-password');
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    for (const lang of LANGS) {
      await setLanguage(page, lang);
      for (const path of ['/logs', '/keys']) {
        await page.goto(path);
        await page.locator('table tbody tr').first().waitFor();
        const overflow = await page.evaluate(() => [
          document.documentElement.scrollWidth - window.innerWidth,
          ...[...document.querySelectorAll('.table-wrap')].map((w) => w.scrollWidth - w.clientWidth),
        ]);
        for (const o of overflow) expect(o, `${path} in ${lang}: sideways overflow`).toBeLessThanOrEqual(0);
      }
      await page.goto('/logs');
      const time = page.getByTestId('logs-table').locator('tbody tr td').first();
      await time.waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, `phone-logs-${lang.toLowerCase()}.png`) });
      const lineHeight = await time.evaluate((td) => Number.parseFloat(getComputedStyle(td).lineHeight));
      // The cell's label (its column's name) and its value side by side: one line.
      expect((await box(time)).height).toBeLessThan(lineHeight * 1.5 + 0.8 * 16);
      await page.goto('/keys');
      const buttons = page.getByTestId('keys-table').locator('tbody tr').first().locator('button');
      await buttons.first().waitFor();
      expect(await buttons.count()).toBeGreaterThan(1);
      for (const b of await buttons.all()) expect((await box(b)).x + (await box(b)).width).toBeLessThanOrEqual(390);
      await page.screenshot({ path: path.join(SCREENSHOTS, `phone-keys-${lang.toLowerCase()}.png`) });
    }
    expectNoProblems(problems);
    await context.close();
  });

  it('says how long the service has run in the reader’s language', async () => {
    const { page, context, problems } = await openConsole(browser, t.url);
    await signIn(page, 'lee', 'lee-password');
    const uptime = page.locator('dl.facts > div', { has: page.locator('dt', { hasText: /^(Running for|已运行)$/ }) }).locator('dd');
    await expect.poll(() => uptime.textContent()).toMatch(/^\d+(m \d+)?s$/);
    await setLanguage(page, 'zh-CN');
    await expect.poll(() => uptime.textContent()).toMatch(/^\d+ (分钟 \d+ )?秒$/);
    expectNoProblems(problems);
    await context.close();
  });
});
