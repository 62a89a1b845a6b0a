// Batches in the console: the key is one made in this tab (a visit makes none); a JSONL file uploaded and started,
// followed to its end without a reload, its counts, its output and error files downloaded; a file that is not a
// valid batch shows its errors by line; a large batch cancelled mid-way ends cancelled.
import fs from 'node:fs';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { expectNoProblems, launchBrowser, openConsole, screenshotBoth, signIn } from './browser.js';

let t: TestApp;
let browser: Browser;
let bea: HttpClient;

const line = (custom_id: string, input: string) =>
  JSON.stringify({ custom_id, method: 'POST', url: '/v1/embeddings', body: { model: 'local-hash-v1', input } });
const tokens = async () => (await bea.get('/api/token/')).body.data as { name: string }[];

beforeAll(async () => {
  // One line per chunk and one chunk at a time: a batch of a few thousand lines runs long enough to be cancelled from the page.
  [t, browser] = await Promise.all([startTestApp({ env: { BATCH_CHUNK_LINES: '1', BATCH_CONCURRENCY: '1' } }), launchBrowser()]);
  expect((await t.root.post('/api/user/', { username: 'bea', password: 'bea-password' })).status).toBe(201);
  bea = new HttpClient(t.url);
  await bea.login('bea', 'bea-password');
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** Chooses a file for the form and starts it; the new batch's id, from the toast that says so. */
async function start(page: Page, name: string, text: string): Promise<string> {
  const toasts = page.locator('.toasts [role=status]');
  const before = await toasts.allTextContents();
  await page.getByLabel('JSONL file').setInputFiles({ name, mimeType: 'application/jsonl', buffer: Buffer.from(text) });
  await page.getByRole('button', { name: 'Upload and start' }).click();
  const said = async () => (await toasts.allTextContents()).find((x) => /^Batch batch_\S+ started\.$/.test(x) && !before.includes(x));
  await expect.poll(said).toBeTruthy();
  return /^Batch (batch_\S+) started/.exec((await said())!)![1]!;
}

/** A download from a button of the row: its suggested name and its lines, parsed. */
async function download(page: Page, row: Locator, button: string): Promise<{ name: string; lines: any[] }> {
  const [file] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: button }).click()]);
  const text = fs.readFileSync((await file.path())!, 'utf8');
  return {
    name: file.suggestedFilename(),
    lines: text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  };
}

describe('batches', () => {
  it('uploads and starts a batch, follows it to completed, downloads its files, shows validation errors, and cancels a large batch', async () => {
    const { page, problems } = await openConsole(browser, t.url);
    await signIn(page, 'bea', 'bea-password');

    // No key in this tab yet: the page asks for one, and makes none by being visited. Loaded directly, it is the console's page.
    await page.goto(`${t.url}/batches`);
    await expect.poll(() => page.getByText('Choose or paste an API key to see your batches.').count()).toBe(1);
    await page.getByRole('link', { name: 'Batches' }).click();
    await expect.poll(() => page.getByText('Choose or paste an API key to see your batches.').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Upload and start' }).isDisabled()).toBe(true);
    expect(await tokens()).toHaveLength(0);

    // A key made on the Keys page is offered (kept in the tab's memory); visiting again makes no other.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'New key' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('for batches');
    await page.getByRole('dialog').getByRole('button', { name: 'New key' }).click();
    const key = (await page.getByTestId('new-key').textContent())!.trim();
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('link', { name: 'Batches' }).click();
    await expect.poll(() => page.getByLabel('API key').inputValue()).toBe(key);
    await expect.poll(() => page.getByText('No batches yet.').count()).toBe(1);
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('link', { name: 'Batches' }).click();
    await expect.poll(() => page.getByText('No batches yet.').count()).toBe(1);
    expect((await tokens()).map((k) => k.name)).toEqual(['for batches']);

    // Four lines and one whose request is refused (an empty input): followed to its end without a reload.
    const small = [line('doc-1', 'the first text'), line('doc-2', 'the second text'), line('doc-bad', ''), line('doc-3', 'third'), line('doc-4', 'fourth')];
    const id = await start(page, 'small.jsonl', `${small.join('\n')}\n`);
    const row = page.getByTestId('batches-table').locator('tbody tr', { hasText: id });
    await expect.poll(() => row.textContent(), { timeout: 60_000 }).toContain('Completed');
    expect(await row.getByTestId('batch-counts').textContent()).toBe('4 done, 1 failed of 5');
    expect(await row.locator('progress').getAttribute('value')).toBe('5');
    expect(await row.locator('progress').getAttribute('max')).toBe('5');
    expect(await row.textContent()).toContain('100%');
    expect(await row.textContent()).toContain('local-hash-v1');
    expect(await row.getByRole('button', { name: 'Cancel batch' }).count()).toBe(0);

    // Its files, downloaded from the row: every custom_id once, the refused one in the error file.
    const output = await download(page, row, 'Download output');
    expect(output.name).toBe(`${id}_output.jsonl`);
    expect(output.lines.map((l) => l.custom_id)).toEqual(['doc-1', 'doc-2', 'doc-3', 'doc-4']);
    expect(output.lines[0].response.status_code).toBe(200);
    expect(output.lines[0].response.body.data[0].embedding.length).toBeGreaterThan(0);
    const errors = await download(page, row, 'Download errors');
    expect(errors.name).toBe(`${id}_error.jsonl`);
    expect(errors.lines.map((l) => [l.custom_id, l.response.status_code])).toEqual([['doc-bad', 400]]);
    // The same bytes the API gives for the batch's output file.
    const batch = await (await fetch(`${t.url}/v1/batches/${id}`, { headers: { authorization: `Bearer ${key}` } })).json();
    const api = await (await fetch(`${t.url}/v1/files/${batch.output_file_id}/content`, { headers: { authorization: `Bearer ${key}` } })).text();
    expect(
      api
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).custom_id),
    ).toEqual(['doc-1', 'doc-2', 'doc-3', 'doc-4']);

    // A file that is not a valid batch: failed, nothing ran, each error with its line, code and message.
    const brokenId = await start(page, 'broken.jsonl', `${line('a', 'fine')}\nthis is not json\n${line('a', 'the same custom_id again')}\n`);
    const broken = page.getByTestId('batches-table').locator('tbody tr', { hasText: brokenId });
    await expect.poll(() => broken.textContent(), { timeout: 30_000 }).toContain('Failed');
    const listed = page.getByTestId('batch-errors');
    await listed.waitFor();
    const items = await listed.locator('li').allTextContents();
    expect(items[0]).toMatch(/^Line 2 · invalid_json_line · \S/);
    expect(items[1]).toMatch(/^Line 3 · duplicate_custom_id · \S/);
    expect(await broken.getByTestId('batch-counts').textContent()).toBe('0 done, 0 failed of 0');
    expect(await broken.textContent()).toContain('none');

    // A large batch, cancelled while it runs (after a confirmation): it ends cancelled, part done, the rest in the error file.
    const n = 3000;
    const largeId = await start(page, 'large.jsonl', `${Array.from({ length: n }, (_, i) => line(`x${i}`, `a line to cancel, number ${i}`)).join('\n')}\n`);
    const large = page.getByTestId('batches-table').locator('tbody tr', { hasText: largeId });
    await expect.poll(() => large.textContent(), { timeout: 60_000 }).toContain('In progress');
    await expect.poll(async () => Number(await large.locator('progress').getAttribute('value')), { timeout: 60_000 }).toBeGreaterThan(0);
    await large.getByRole('button', { name: 'Cancel batch' }).click();
    const ask = page.getByRole('dialog');
    expect(await ask.textContent()).toContain(largeId);
    await ask.getByRole('button', { name: 'Cancel batch' }).click();
    await expect.poll(() => large.textContent(), { timeout: 60_000 }).toContain('Cancelled');
    expect(await large.getByRole('button', { name: 'Cancel batch' }).count()).toBe(0);
    const [, completed, failed, total] = /^(\d[\d,]*) done, (\d[\d,]*) failed of (\d[\d,]*)$/
      .exec((await large.getByTestId('batch-counts').textContent())!)!
      .map((x) => Number(x.replace(/,/g, '')));
    expect(total).toBe(n);
    expect(completed! + failed!).toBe(n);
    expect(completed).toBeGreaterThan(0);
    expect(completed).toBeLessThan(n);
    const unrun = await download(page, large, 'Download errors');
    expect(unrun.lines).toHaveLength(failed!);
    expect(unrun.lines.every((l) => l.error?.code === 'batch_cancelled')).toBe(true);

    await screenshotBoth(page, 'batches');
    expectNoProblems(problems);
  });
});
