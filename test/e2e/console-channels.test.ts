// The channel page: a type selector listing every registered provider, the settings of the chosen type (in English and
// Chinese) saved into the channel's config, a direct test per channel (its time and when in the list), and "Test all".
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDERS } from '../../src/channels/providers/registry.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { type ConsolePage, expectNoProblems, launchBrowser, openConsole, screenshotBoth, setLanguage, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let upstream: FakeOpenAI;
let refusing: FakeOpenAI;
let admin: ConsolePage;

beforeAll(async () => {
  [t, browser, upstream, refusing] = await Promise.all([startTestApp({ workers: false }), launchBrowser(), new FakeOpenAI().start(), new FakeOpenAI().start()]);
  refusing.behaviour = { kind: 'status', status: 401, message: 'Invalid key for this test' };
  admin = await openConsole(browser, t.url);
  await signIn(admin.page, 'root', ROOT_PASSWORD);
});
afterAll(async () => {
  await admin?.context.close();
  await browser?.close();
  await t?.close();
  await upstream?.stop();
  await refusing?.stop();
});

describe('the channel form', () => {
  it('offers every registered provider as a type, shows the chosen type’s settings in both languages, and saves them into config', async () => {
    const { page, problems } = admin;
    await page.goto('/admin/channels');
    await page.getByRole('button', { name: 'New channel' }).click();
    const dialog = page.getByRole('dialog');
    const type = dialog.getByLabel('Type', { exact: true });
    await expect
      .poll(async () => (await type.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).join())
      .toBe(PROVIDERS.map((p) => p.type).join());
    expect(await type.locator('option').allTextContents()).toEqual(PROVIDERS.map((p) => p.label));
    expect(await type.inputValue()).toBe('openai');
    const settings = dialog.getByTestId('config-fields');
    expect(await settings.locator('label').allTextContents()).toEqual(['Endpoint path (default /v1/embeddings)', 'Extra headers (JSON object)']);

    // Another type shows its own settings (and the base URL's default), not openai's.
    for (const other of PROVIDERS.filter((p) => p.type !== 'openai')) {
      await type.selectOption(other.type);
      const labels = other.configFields.map((f) => f.label);
      await expect
        .poll(async () => (labels.length ? await settings.locator('label').allTextContents() : await settings.count()))
        .toEqual(labels.length ? labels : 0);
      expect((await dialog.getByLabel('Base URL').getAttribute('placeholder')) || null).toBe(other.defaultBaseUrl);
    }
    await type.selectOption('openai');

    // In Chinese: the types and the settings are translated.
    await setLanguage(page, 'zh-CN');
    await expect.poll(() => dialog.getByLabel('类型', { exact: true }).locator('option:checked').textContent()).toBe('OpenAI 兼容');
    expect(await settings.locator('label').allTextContents()).toEqual(['接口路径（默认 /v1/embeddings）', '额外请求头（JSON 对象）']);
    await screenshotBoth(page, 'admin-channel-form');
    await setLanguage(page, 'en');

    await dialog.getByLabel('Name').fill('with-settings');
    await dialog.getByLabel('Base URL').fill(upstream.url);
    await dialog.getByLabel('Upstream key').fill('sk-form-upstream-key');
    await dialog.getByLabel('Endpoint path (default /v1/embeddings)').fill('/custom/v1/embeddings');
    // Not JSON: refused in words before anything is sent.
    await dialog.getByLabel('Extra headers (JSON object)').fill('{"X-Test": ');
    await dialog.getByLabel('Models').fill('form-model');
    expect(await dialog.getByLabel('Groups').inputValue()).toBe('default');
    await dialog.getByLabel('Groups').fill('default, vip');
    await dialog.getByRole('button', { name: 'New channel' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toContain('Extra headers (JSON object): not valid JSON.');
    await dialog.getByLabel('Extra headers (JSON object)').fill('{"X-Test": "from-the-form"}');
    await dialog.getByRole('button', { name: 'New channel' }).click();
    const row = page.getByTestId('channels-table').locator('tbody tr', { hasText: 'with-settings' });
    await expect.poll(() => row.getByTestId('channel-type').textContent()).toBe('OpenAI-compatible');
    const saved = (await t.root.get('/api/channel/search?keyword=with-settings')).body.data[0];
    expect(saved).toMatchObject({ type: 'openai', group: 'default,vip', config: { path: '/custom/v1/embeddings', headers: { 'X-Test': 'from-the-form' } } });

    // Editing shows the saved settings; emptying one removes it from config.
    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('dialog');
    expect(await edit.getByLabel('Endpoint path (default /v1/embeddings)').inputValue()).toBe('/custom/v1/embeddings');
    expect(JSON.parse(await edit.getByLabel('Extra headers (JSON object)').inputValue())).toEqual({ 'X-Test': 'from-the-form' });
    expect(await edit.getByLabel('Groups').inputValue()).toBe('default,vip');
    await edit.getByLabel('Extra headers (JSON object)').fill('');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect((await t.root.get(`/api/channel/${saved.id}`)).body.data.config).toEqual({ path: '/custom/v1/embeddings' });
    expectNoProblems(problems);
  });
});

describe('testing channels from the list', () => {
  it('“Test” asks that channel directly (root, with no quota) and the list shows its response time and when', async () => {
    const { page, problems } = admin;
    await page.goto('/admin/channels');
    const row = page.getByTestId('channels-table').locator('tbody tr', { hasText: 'with-settings' });
    expect(await row.textContent()).toContain('never');
    upstream.behaviour = { kind: 'ok', reportUsage: true, delayMs: 120 };
    const before = upstream.calls.length;
    await row.getByRole('button', { name: 'Test' }).click();
    await expect.poll(() => page.locator('.toast.ok', { hasText: 'with-settings answered the test.' }).count()).toBe(1);
    upstream.behaviour = { kind: 'ok', reportUsage: true };
    // The channel's own settings reached the upstream: its path and header, its key.
    const call = upstream.calls.slice(before);
    expect(call.map((c) => [c.path, c.headers['x-test'], c.authorization, c.body.model])).toEqual([
      ['/custom/v1/embeddings', undefined, 'Bearer sk-form-upstream-key', 'form-model'],
    ]);
    await expect.poll(() => row.getByTestId('response-time').textContent()).toMatch(/^\d+ ms$/);
    expect(Number((await row.getByTestId('response-time').textContent())!.replace(/\D/g, ''))).toBeGreaterThanOrEqual(120);
    expect(await row.getByTestId('test-time').textContent()).toMatch(/\d/);
    expectNoProblems(problems);
  });

  it('“Test all” tests every enabled channel and says how many answered; a refused one is disabled with its reason', async () => {
    const { page, problems } = admin;
    const made = await t.root.post('/api/channel/', {
      name: 'refused-one',
      base_url: refusing.url,
      key: 'sk-refused-0123456789',
      models: 'refused-model',
      price: 0,
    });
    expect(made.status, made.text).toBe(201);
    await page.goto('/admin/channels');
    const refusedRow = page.getByTestId('channels-table').locator('tbody tr', { hasText: 'refused-one' });
    await expect.poll(() => refusedRow.textContent()).toContain('Enabled');
    const [refusedBefore, okBefore] = [refusing.calls.length, upstream.calls.length];
    await page.getByRole('button', { name: 'Test all' }).click();
    await expect.poll(() => page.locator('.toast.error').textContent()).toBe('Tested 2 channels: 1 answered, 1 failed.');
    expect([refusing.calls.length - refusedBefore, upstream.calls.length - okBefore]).toEqual([1, 1]);
    await expect.poll(() => refusedRow.textContent()).toContain('Disabled automatically');
    expect(await refusedRow.getByTestId('status-reason').textContent()).toContain('Invalid key for this test');
    expect(await refusedRow.getByTestId('response-time').textContent()).toMatch(/^\d+ ms$/);
    expectNoProblems(problems);
  });
});
