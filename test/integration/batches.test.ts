// The Files and Batch APIs for /v1/embeddings with the official openai client, against real Postgres and Redis and
// the worker in this process: upload, create, poll, download; bad lines; validation failures; cancel; ownership.
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { until } from '../helpers/until.js';

let t: TestApp;
let alice: HttpClient;
let bob: HttpClient;

async function keyOf(c: HttpClient, body: Record<string, unknown> = { unlimited_quota: true }) {
  return (await c.post('/api/token/', { name: 'k', ...body })).body.data.key as string;
}
const oa = (key: string) => new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
const jsonl = (lines: unknown[]) => `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;
const line = (custom_id: string, body: Record<string, unknown>) => ({ custom_id, method: 'POST', url: '/v1/embeddings', body });

async function upload(client: OpenAI, text: string, name = 'input.jsonl') {
  return client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });
}

async function ended(client: OpenAI, id: string) {
  return until(
    `batch ${id} to end`,
    () => client.batches.retrieve(id),
    (b) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status),
    60_000,
  );
}

const outputLines = async (client: OpenAI, fileId: string | null | undefined) =>
  fileId
    ? (await (await client.files.content(fileId)).text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
    : [];

beforeAll(async () => {
  // local-hash-v1 at 1 quota per token (1000 per 1K), so a charge is the tokens it is for.
  t = await startTestApp({ env: { BATCH_CHUNK_LINES: '4', JOB_BACKOFF_MS: '50', LOCAL_MODEL_PRICE: '1000' } });
  for (const name of ['alice', 'bob']) await t.root.post('/api/user/', { username: name, password: `${name}-password`, quota: 1e9 });
  alice = new HttpClient(t.url);
  await alice.login('alice', 'alice-password');
  bob = new HttpClient(t.url);
  await bob.login('bob', 'bob-password');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('a batch of /v1/embeddings requests, with the openai client', () => {
  it('files.create → batches.create → retrieve until completed → files.content: one line per custom_id, vectors equal to /v1/embeddings', async () => {
    const client = oa(await keyOf(alice));
    const texts = Array.from({ length: 10 }, (_, i) => `sentence number ${i} for the batch`);
    const input = jsonl(
      texts.map((text, i) => line(`req-${i}`, { model: 'local-hash-v1', input: [text, `${text} again`], encoding_format: 'float', dimensions: 32 })),
    );
    const file = await upload(client, input);
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', bytes: Buffer.byteLength(input), filename: 'input.jsonl' });
    expect(file.id).toMatch(/^file-/);
    expect(await (await client.files.content(file.id)).text()).toBe(input);

    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h', metadata: { run: 'one' } });
    expect(created).toMatchObject({ object: 'batch', status: 'validating', endpoint: '/v1/embeddings', input_file_id: file.id, metadata: { run: 'one' } });
    const done = await ended(client, created.id);
    expect(done.status).toBe('completed');
    expect(done.request_counts).toEqual({ total: 10, completed: 10, failed: 0 });
    expect(done.error_file_id).toBeNull();
    for (const at of ['in_progress_at', 'finalizing_at', 'completed_at'] as const) expect(done[at]).toBeGreaterThan(0);

    const out = await outputLines(client, done.output_file_id);
    expect(out.map((o) => o.custom_id).sort()).toEqual(texts.map((_, i) => `req-${i}`).sort());
    for (const o of out) {
      const i = Number(o.custom_id.slice(4));
      expect(o.id).toMatch(/^batch_req_/);
      expect(o.error).toBeNull();
      expect(o.response.status_code).toBe(200);
      const direct = await client.embeddings.create({
        model: 'local-hash-v1',
        input: [texts[i]!, `${texts[i]} again`],
        encoding_format: 'float',
        dimensions: 32,
      });
      expect(o.response.body).toEqual(JSON.parse(JSON.stringify(direct)));
    }
    const outFile = await client.files.retrieve(done.output_file_id!);
    expect(outFile.expires_at! - outFile.created_at).toBeGreaterThan(29 * 86_400);
    expect(outFile).toMatchObject({ purpose: 'batch_output', filename: `${done.id}_output.jsonl` });
    const bytes = Buffer.from(await (await client.files.content(outFile.id)).arrayBuffer());
    expect(outFile.bytes).toBe(bytes.length);
  });

  it('a line refused as /v1/embeddings would refuse it lands in the error file; the rest complete', async () => {
    const client = oa(await keyOf(alice));
    const input = jsonl([
      line('good-1', { model: 'local-hash-v1', input: 'one' }),
      line('bad-empty', { model: 'local-hash-v1', input: '' }),
      line('bad-dims', { model: 'local-hash-v1', input: 'two', dimensions: 99999 }),
      line('good-2', { model: 'local-hash-v1', input: 'three' }),
    ]);
    const b = await client.batches.create({ input_file_id: (await upload(client, input)).id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const done = await ended(client, b.id);
    expect(done.status).toBe('completed');
    expect(done.request_counts).toEqual({ total: 4, completed: 2, failed: 2 });
    expect((await outputLines(client, done.output_file_id)).map((o) => o.custom_id)).toEqual(['good-1', 'good-2']);
    const errors = await outputLines(client, done.error_file_id);
    expect(errors.map((o) => o.custom_id)).toEqual(['bad-empty', 'bad-dims']);
    expect(errors[0].response.status_code).toBe(400);
    expect(errors[0].response.body.error).toMatchObject({ type: 'invalid_request_error', param: 'input' });
    expect(errors[1].response.body.error.param).toBe('dimensions');
    // The output file is the batch's outcome lines: deleted, its lines go; the error file's stay.
    await client.files.delete(done.output_file_id!);
    await expect(client.files.content(done.output_file_id!)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await t.platform.db('batch_results').where({ batch_id: b.id, ok: true }).first()).toBeUndefined();
    expect((await outputLines(client, done.error_file_id)).map((o) => o.custom_id)).toEqual(['bad-empty', 'bad-dims']);
  });

  it('a file that fails validation fails the batch with errors naming the lines', async () => {
    const client = oa(await keyOf(alice));
    const input = jsonl([
      line('a', { model: 'local-hash-v1', input: 'x' }),
      '{not json',
      line('a', { model: 'local-hash-v1', input: 'y' }),
      { custom_id: 'c', method: 'GET', url: '/v1/embeddings', body: { model: 'local-hash-v1', input: 'z' } },
      line('d', { model: 'use-lite', input: 'w' }),
    ]);
    const b = await client.batches.create({ input_file_id: (await upload(client, input)).id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const done = await ended(client, b.id);
    expect(done.status).toBe('failed');
    expect(done.failed_at).toBeGreaterThan(0);
    expect(done.errors?.data?.map((e) => [e.line, e.code])).toEqual([
      [2, 'invalid_json_line'],
      [3, 'duplicate_custom_id'],
      [4, 'invalid_value'],
      [5, 'mismatched_model'],
    ]);
    expect(done.output_file_id).toBeNull();
  });

  it('expires_after sets an upload’s expiry (a wrong one is 400); output_expires_after sets its results’', async () => {
    const client = oa(await keyOf(alice));
    const text = jsonl([line('e', { model: 'local-hash-v1', input: 'x' })]);
    const file = await client.files.create({
      file: await toFile(Buffer.from(text), 'e.jsonl'),
      purpose: 'batch',
      expires_after: { anchor: 'created_at', seconds: 3600 },
    });
    expect(file.expires_at! - file.created_at).toBeGreaterThanOrEqual(3599);
    expect(file.expires_at! - file.created_at).toBeLessThanOrEqual(3601);
    await expect(
      client.files.create({ file: await toFile(Buffer.from(text), 'e.jsonl'), purpose: 'batch', expires_after: { anchor: 'created_at', seconds: 60 } }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const b = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
      output_expires_after: { anchor: 'created_at', seconds: 7200 },
    });
    const done = await ended(client, b.id);
    const out = await client.files.retrieve(done.output_file_id!);
    expect(Math.abs(out.expires_at! - out.created_at - 7200)).toBeLessThanOrEqual(2);
  });

  it("another user's file and batch are 404, and missing from their lists", async () => {
    const client = oa(await keyOf(alice));
    const file = await upload(client, jsonl([line('only', { model: 'local-hash-v1', input: 'x' })]));
    const b = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const other = oa(await keyOf(bob));
    await expect(other.files.retrieve(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.files.content(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.files.delete(file.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.batches.retrieve(b.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.batches.cancel(b.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const theirs = [];
    for await (const f of other.files.list()) theirs.push(f.id);
    expect(theirs).not.toContain(file.id);
    const mine = [];
    for await (const x of client.batches.list({ limit: 2 })) mine.push(x.id);
    expect(mine).toContain(b.id);
    await ended(client, b.id);
  });

  it('is charged for the tokens of the lines that completed, with consume rows that say so; lines short of quota fail and cost nothing', async () => {
    await t.root.post('/api/user/', { username: 'carol', password: 'carol-password', quota: 1e6 });
    const carol = new HttpClient(t.url);
    const carolId = (await carol.login('carol', 'carol-password')).body.data.id as number;
    const client = oa(await keyOf(carol));
    const input = jsonl(Array.from({ length: 9 }, (_, i) => line(`c${i}`, { model: 'local-hash-v1', input: `words to be counted, line ${i}` })));
    const b = await ended(
      client,
      (await client.batches.create({ input_file_id: (await upload(client, input)).id, endpoint: '/v1/embeddings', completion_window: '24h' })).id,
    );
    expect(b.request_counts).toEqual({ total: 9, completed: 9, failed: 0 });
    const tokens = (await outputLines(client, b.output_file_id)).reduce((n, o) => n + o.response.body.usage.prompt_tokens, 0);
    expect(tokens).toBeGreaterThan(0);
    expect(b.usage?.input_tokens).toBe(tokens);
    expect((await carol.get('/api/user/self')).body.data.quota).toBe(1e6 - tokens);
    const rows = await t.platform.db('logs').where({ user_id: carolId, type: 2 }).select('quota', 'prompt_tokens');
    expect(rows.reduce((n, r) => n + Number(r.quota), 0)).toBe(tokens);
    expect(rows.reduce((n, r) => n + Number(r.prompt_tokens), 0)).toBe(tokens);

    // Too little quota for a chunk: its lines fail with insufficient_quota, and nothing is taken.
    await t.root.post('/api/user/', { username: 'dave', password: 'dave-password', quota: 3 });
    const dave = new HttpClient(t.url);
    await dave.login('dave', 'dave-password');
    const poor = oa(await keyOf(dave));
    const short = await ended(
      poor,
      (await poor.batches.create({ input_file_id: (await upload(poor, input)).id, endpoint: '/v1/embeddings', completion_window: '24h' })).id,
    );
    expect(short.status).toBe('completed');
    expect(short.request_counts).toEqual({ total: 9, completed: 0, failed: 9 });
    expect(short.output_file_id).toBeNull();
    const errors = await outputLines(poor, short.error_file_id);
    expect(errors.map((e) => e.response.body.error.code)).toEqual(Array(9).fill('insufficient_quota'));
    expect((await dave.get('/api/user/self')).body.data.quota).toBe(3);
  });

  it('cancel mid-way: cancelling at once, then cancelled; completed lines in the output file, the rest batch_cancelled in the error file, charged only for what completed', async () => {
    const client = oa(await keyOf(alice));
    const before = (await alice.get('/api/user/self')).body.data.quota as number;
    const n = 3000;
    const input = jsonl(Array.from({ length: n }, (_, i) => line(`x${i}`, { model: 'local-hash-v1', input: `a line to cancel, number ${i}` })));
    const b = await client.batches.create({ input_file_id: (await upload(client, input)).id, endpoint: '/v1/embeddings', completion_window: '24h' });
    await until(
      'the batch to run some lines',
      () => client.batches.retrieve(b.id),
      (x) => x.request_counts!.completed > 0,
      60_000,
    );
    const cancelling = await client.batches.cancel(b.id);
    expect(cancelling.status).toBe('cancelling');
    expect(cancelling.cancelling_at).toBeGreaterThan(0);
    const done = await ended(client, b.id);
    expect(done.status).toBe('cancelled');
    expect(done.cancelled_at).toBeGreaterThan(0);
    const { total, completed, failed } = done.request_counts!;
    expect(total).toBe(n);
    expect(completed).toBeGreaterThan(0);
    expect(completed).toBeLessThan(n);
    expect(completed + failed).toBe(n);
    const out = await outputLines(client, done.output_file_id);
    const errors = await outputLines(client, done.error_file_id);
    expect(out).toHaveLength(completed);
    expect(errors).toHaveLength(failed);
    expect(new Set([...out, ...errors].map((o) => o.custom_id)).size).toBe(n);
    expect(errors.every((e) => e.response === null && e.error.code === 'batch_cancelled')).toBe(true);
    const charged = out.reduce((s, o) => s + o.response.body.usage.prompt_tokens, 0);
    expect(before - ((await alice.get('/api/user/self')).body.data.quota as number)).toBe(charged);
    // Over: cancelling again is a 409.
    await expect(client.batches.cancel(b.id)).rejects.toBeInstanceOf(OpenAI.ConflictError);
  }, 120_000);
});
