// Batches beyond the happy path, against real Postgres and Redis: a batch through a relayed channel whose upstream
// fails for a while; a worker process SIGKILLed mid-batch; the batch.completed webhook; expiry; the limits; the
// retention of files; an Idempotency-Key on create; the texts sealed at rest.
import http from 'node:http';
import OpenAI, { toFile } from 'openai';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireFiles } from '../../src/batches/service.js';
import { FakeOpenAI, fakeVector } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { spawnEntry, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

let t: TestApp;
let up: FakeOpenAI;
let receiver: Receiver;
let alice: HttpClient;
let aliceId: number;
let key: string;
const workers: Spawned[] = [];

const oa = () => new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
const jsonl = (lines: unknown[]) => `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;
const line = (custom_id: string, body: Record<string, unknown>) => ({ custom_id, method: 'POST', url: '/v1/embeddings', body });
const upload = async (text: string) => oa().files.create({ file: await toFile(Buffer.from(text), 'in.jsonl'), purpose: 'batch' });
const create = async (text: string) => oa().batches.create({ input_file_id: (await upload(text)).id, endpoint: '/v1/embeddings', completion_window: '24h' });
const ended = (id: string, ms = 90_000) =>
  until(
    `batch ${id} to end`,
    () => oa().batches.retrieve(id),
    (b) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status),
    ms,
  );
const linesOf = async (fileId: string | null | undefined) =>
  fileId
    ? (await (await oa().files.content(fileId)).text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
    : [];
const quota = async () => (await alice.get('/api/user/self')).body.data.quota as number;

async function startWorker(env: Record<string, string> = {}): Promise<Spawned> {
  const w = spawnEntry('worker', [], { ...t.testEnv.env, WORKER_QUEUES: 'batches,embeddings,webhooks', LOG_LEVEL: 'info', ...env });
  await w.waitFor(/workers started/);
  workers.push(w);
  return w;
}

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  receiver = await startReceiver();
  // No workers in this process: the worker processes are spawned, and killed, by the tests.
  t = await startTestApp({
    workers: false,
    env: {
      BATCH_CHUNK_LINES: '8',
      JOB_BACKOFF_MS: '50',
      LOCAL_MODEL_PRICE: '1000',
      // A killed worker's reservations come back within seconds (the sweep), not 35 s.
      SYNC_WAIT_MS: '2000',
      QUOTA_RESERVATION_TTL_MS: '3000',
      JOB_LOCK_MS: '2000',
      JOB_STALLED_INTERVAL_MS: '1000',
      BATCH_MAX_FILE_BYTES: '4096',
      BATCH_MAX_REQUESTS: '5000',
      BATCH_MAX_INPUTS: '5000',
      FILES_PER_USER: '40',
      BATCHES_RUNNING_PER_USER: '3',
    },
  });
  await t.root.post('/api/user/', { username: 'alice', password: 'alice-password', quota: 1e9 });
  alice = new HttpClient(t.url);
  aliceId = (await alice.login('alice', 'alice-password')).body.data.id;
  key = (await alice.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
  const ch = await t.root.post('/api/channel/', {
    type: 'openai',
    name: 'up',
    key: 'sk-up',
    base_url: up.url,
    models: 'up-model',
    price: 1000,
    priority: 0,
    weight: 1,
  });
  expect(ch.status, ch.text).toBe(201);
}, 60_000);

afterAll(async () => {
  for (const w of workers) await w.stop('SIGKILL').catch(() => {});
  await t?.close();
  await up?.stop();
  await receiver?.close();
});

describe('batches that meet trouble', () => {
  it('run through a relayed channel, a chunk’s lines packed into one upstream call: an upstream failing twice is tried again, every line completes with its own vectors', async () => {
    const w = await startWorker();
    try {
      up.behaviour = { kind: 'status', status: 503, times: 2 };
      const inputsOf = (i: number) => Array.from({ length: (i % 3) + 1 }, (_, k) => `upstream text ${i}.${k}`);
      const calls = up.calls.length;
      const cached = async () => Number((await t.platform.db('embedding_cache').count<{ n: string }[]>({ n: '*' }))[0]!.n);
      const cachedBefore = await cached();
      const b = await create(jsonl(Array.from({ length: 5 }, (_, i) => line(`u${i}`, { model: 'up-model', input: inputsOf(i), encoding_format: 'float' }))));
      const done = await ended(b.id);
      expect(done.request_counts).toEqual({ total: 5, completed: 5, failed: 0 });
      const out = await linesOf(done.output_file_id);
      for (const o of out) {
        const data = o.response.body.data as { index: number; embedding: number[] }[];
        expect(data.map((d) => d.embedding.map(Math.fround))).toEqual(inputsOf(Number(o.custom_id.slice(1))).map((t) => fakeVector(t).map(Math.fround)));
        expect(data.map((d) => d.index)).toEqual(data.map((_, k) => k));
      }
      // Two refused calls, then one that carried the chunk's nine inputs.
      expect(up.calls.length - calls).toBe(3);
      expect(up.calls.at(-1)!.body.input).toHaveLength(9);
      // A batch's lines run once: they do not fill the vector cache.
      expect(await cached()).toBe(cachedBefore);
    } finally {
      up.behaviour = { kind: 'ok', reportUsage: true };
      await w.stop('SIGTERM');
    }
  }, 120_000);

  it('a batch’s chunks beyond BATCH_CHANNEL_CONCURRENCY wait their turn for the channel: at most that many of its calls at once', async () => {
    // BATCH_CONCURRENCY (8 here) chunks run at once in the worker; 2 calls at once reach the channel.
    const w = await startWorker({ BATCH_CONCURRENCY: '8', BATCH_CHANNEL_CONCURRENCY: '2' });
    try {
      up.behaviour = { kind: 'ok', reportUsage: true, delayMs: 300 };
      up.maxInFlight = 0;
      const calls = up.calls.length;
      const b = await create(jsonl(Array.from({ length: 40 }, (_, i) => line(`s${i}`, { model: 'up-model', input: `x${i}` }))));
      const done = await ended(b.id);
      expect(done.request_counts).toEqual({ total: 40, completed: 40, failed: 0 });
      // Five chunks of eight lines, one call each: with the chunks all running, two at a time reached the channel.
      expect(up.calls.length - calls).toBe(5);
      expect(up.maxInFlight).toBe(2);
    } finally {
      up.behaviour = { kind: 'ok', reportUsage: true };
      await w.stop('SIGTERM');
    }
  }, 120_000);

  it('an upstream that keeps failing: after the chunk’s last attempt its lines are in the error file and the batch completes', async () => {
    const w = await startWorker();
    try {
      up.behaviour = { kind: 'status', status: 503, times: 1000 };
      const b = await create(jsonl([line('f1', { model: 'up-model', input: 'never' }), line('f2', { model: 'up-model', input: 'answered' })]));
      const done = await ended(b.id, 120_000);
      expect(done.status).toBe('completed');
      expect(done.request_counts).toEqual({ total: 2, completed: 0, failed: 2 });
      expect((await linesOf(done.error_file_id)).map((e) => e.response.status_code)).toEqual([502, 502]);
    } finally {
      up.behaviour = { kind: 'ok', reportUsage: true };
      await w.stop('SIGTERM');
    }
  }, 150_000);

  it('a worker SIGKILLed mid-batch loses no line and charges none twice: every custom_id once, the charge is the output lines’ tokens', async () => {
    const n = 4000;
    const before = await quota();
    const first = await startWorker();
    const text = jsonl(Array.from({ length: n }, (_, i) => line(`k${i}`, { model: 'local-hash-v1', input: `x${i}` })));
    const file = await bigUpload(text);
    const b = await oa().batches.create({ input_file_id: file, endpoint: '/v1/embeddings', completion_window: '24h' });
    await until(
      'some lines to complete',
      () => oa().batches.retrieve(b.id),
      (x) => (x.request_counts?.completed ?? 0) > 200,
      60_000,
    );
    await first.stop('SIGKILL');
    const mid = await oa().batches.retrieve(b.id);
    expect(mid.status).toBe('in_progress');
    expect(mid.request_counts!.completed).toBeLessThan(n);
    await startWorker();
    const done = await ended(b.id, 120_000);
    expect(done.status).toBe('completed');
    expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
    const out = await linesOf(done.output_file_id);
    expect(out).toHaveLength(n);
    expect(new Set(out.map((o) => o.custom_id)).size).toBe(n);
    const tokens = out.reduce((s, o) => s + o.response.body.usage.prompt_tokens, 0);
    // What the killed worker had reserved for the chunks it was running comes back with the sweep (an error row each);
    // then the charge is exactly the output's tokens, each in a consume row.
    await until(
      'the killed worker’s reservations to come back',
      async () => (await t.platform.ledger.sweep(), before - (await quota())),
      (charged) => charged === tokens,
      30_000,
    );
    // (The only local-hash-v1 calls of this file so far are this batch's.)
    const consumed = await t.platform.db('logs').where({ user_id: aliceId, type: 2, model_name: 'local-hash-v1' }).sum<{ q: string }[]>({ q: 'quota' });
    expect(Number(consumed[0]!.q)).toBe(tokens);
  }, 240_000);

  it('tells its owner’s webhook endpoint batch.completed, shaped as OpenAI’s and verified by openai webhooks.unwrap()', async () => {
    const made = await alice.post('/api/webhooks', { url: `${receiver.url}/batches`, event_types: ['batch.completed'] });
    expect(made.status, made.text).toBe(201);
    const ep = made.body;
    const b = await create(jsonl([line('w1', { model: 'local-hash-v1', input: 'hook' })]));
    await ended(b.id);
    const [req] = await until(
      'the delivery',
      async () => receiver.requests.filter((r) => r.path === '/batches'),
      (rs) => rs.length > 0,
    );
    const event = (await new OpenAI({ apiKey: 'x' }).webhooks.unwrap(req!.body, req!.headers, ep.secret)) as unknown as Record<string, unknown>;
    expect(event).toMatchObject({ object: 'event', type: 'batch.completed', data: { id: b.id } });
    expect(String(event.id)).toMatch(/^evt_/);
    expect(new Webhook(ep.secret).verify(req!.body, req!.headers)).toEqual(event);
  }, 120_000);

  it('past its 24 h window a batch runs nothing more and ends expired, each unrun line batch_expired; its texts are sealed at rest meanwhile', async () => {
    for (const w of workers.splice(0)) await w.stop('SIGTERM');
    const b = await create(jsonl([line('e1', { model: 'local-hash-v1', input: 'a secret sentence to expire' })]));
    // No worker yet: it waits validating. A worker validates it, then its window is over before the chunk runs.
    await t.platform
      .db('batches')
      .where({ id: b.id })
      .update({ expires_at: new Date(Date.now() + 1500) });
    const w = await startWorker();
    await until(
      'the batch to be validated',
      () => oa().batches.retrieve(b.id),
      (x) => x.status !== 'validating',
    );
    const stored = await t.platform.db('batch_requests').where({ batch_id: b.id }).select('request');
    for (const r of stored) expect(r.request).not.toContain('secret sentence');
    const done = await ended(b.id);
    if (done.status === 'expired') {
      const errors = await linesOf(done.error_file_id);
      expect(errors.map((e) => e.error.code)).toEqual(['batch_expired']);
      expect(done.expired_at).toBeGreaterThan(0);
    } else expect(done.status).toBe('completed'); // the chunk beat the window on a fast machine
    await w.stop('SIGTERM');
  }, 120_000);

  it('a batch whose window passed before any chunk ran expires with every line batch_expired and nothing charged', async () => {
    const before = await quota();
    const b = await create(jsonl([line('x1', { model: 'local-hash-v1', input: 'late' }), line('x2', { model: 'local-hash-v1', input: 'later' })]));
    await t.platform
      .db('batches')
      .where({ id: b.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const w = await startWorker();
    const done = await ended(b.id);
    expect(done.status).toBe('expired');
    expect(done.request_counts).toEqual({ total: 2, completed: 0, failed: 2 });
    expect((await linesOf(done.error_file_id)).map((e) => [e.custom_id, e.error.code])).toEqual([
      ['x1', 'batch_expired'],
      ['x2', 'batch_expired'],
    ]);
    expect(await quota()).toBe(before);
    await w.stop('SIGTERM');
  }, 120_000);
});

/** A file larger than this app's BATCH_MAX_FILE_BYTES, stored as an upload would store it (the limit is tested below). */
async function bigUpload(text: string): Promise<string> {
  const { createFile, addPart, finishFile, newFileId } = await import('../../src/batches/store.js');
  const id = newFileId();
  await createFile(t.platform.db, { id, ownerId: aliceId, filename: 'big.jsonl', purpose: 'batch', expiresAt: null });
  await addPart(t.platform.db, id, 0, Buffer.from(text));
  await finishFile(t.platform.db, id, Buffer.byteLength(text), 'batch');
  return id;
}

describe('limits and housekeeping', () => {
  it('an upload over BATCH_MAX_FILE_BYTES is 413 and keeps nothing; a purpose other than batch is 400 and keeps nothing', async () => {
    const files = async () => Number((await t.platform.db('files').where({ owner_id: aliceId }).count<{ n: string }[]>({ n: '*' }))[0]!.n);
    const had = await files();
    await expect(oa().files.create({ file: await toFile(Buffer.alloc(5000, 97), 'big.jsonl'), purpose: 'batch' })).rejects.toMatchObject({ status: 413 });
    await expect(oa().files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'fine-tune' })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    expect(await files()).toBe(had);
  });

  it('FILES_PER_USER files at most: one more upload is 429', async () => {
    const have = Number((await t.platform.db('files').where({ owner_id: aliceId }).count<{ n: string }[]>({ n: '*' }))[0]!.n);
    for (let i = have; i < 40; i++) await upload('{}\n');
    await expect(upload('{}\n')).rejects.toMatchObject({ status: 429 });
    for await (const f of oa().files.list({ purpose: 'batch' })) if (f.bytes === 3) await oa().files.delete(f.id);
  });

  it('a file with too many requests, or none, fails validation', async () => {
    const w = await startWorker();
    const many = await oa().batches.create({
      input_file_id: await bigUpload(jsonl(Array.from({ length: 5001 }, (_, i) => line(`m${i}`, { model: 'local-hash-v1', input: 'm' })))),
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const empty = await create('\n\n');
    expect((await ended(many.id)).errors?.data?.map((e) => e.code)).toEqual(['too_many_requests']);
    expect((await ended(empty.id)).errors?.data?.map((e) => e.code)).toEqual(['empty_file']);
    await w.stop('SIGTERM');
  }, 120_000);

  it('a NUL in a custom_id, or more inputs than BATCH_MAX_INPUTS, fails validation (the batch does not hang); chunks end at a bound on their floats', async () => {
    const w = await startWorker();
    const nul = await create(jsonl([line('a\u0000b', { model: 'local-hash-v1', input: 'x' })]));
    const fromFile = async (text: string) =>
      oa().batches.create({ input_file_id: await bigUpload(text), endpoint: '/v1/embeddings', completion_window: '24h' });
    const many = await fromFile(jsonl([0, 1, 2].map((i) => line(`i${i}`, { model: 'local-hash-v1', input: Array(2000).fill('w') }))));
    const heavy = await fromFile(jsonl([0, 1].map((i) => line(`h${i}`, { model: 'local-hash-v1', input: Array(1100).fill('h'), dimensions: 1024 }))));
    expect((await ended(nul.id)).errors?.data?.map((e) => [e.code, e.param])).toEqual([['invalid_value', 'custom_id']]);
    expect((await ended(many.id)).errors?.data?.map((e) => e.code)).toEqual(['too_many_inputs']);
    const done = await ended(heavy.id);
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    // 2 × 1100 × 1024 floats is more than one request's 2,097,152: two chunks, though BATCH_CHUNK_LINES is 8.
    expect((await t.platform.db('batches').where({ id: heavy.id }).first()).chunks).toBe(2);
    await w.stop('SIGTERM');
  }, 120_000);

  it('a batch job cannot be cancelled through DELETE /api/jobs (409: cancel the batch); a malformed list cursor is an empty page, not an error', async () => {
    const b = await create(jsonl([line('d1', { model: 'local-hash-v1', input: 'x' })]));
    const res = await alice.delete(`/api/jobs/batches-${b.id}-run`);
    expect(res.status).toBe(409);
    expect(JSON.stringify(res.body)).toContain('/v1/batches/{id}/cancel');
    const v1 = t.anon.withAuth(`Bearer ${key}`);
    for (const path of ['/v1/files?after=a%3Fb', '/v1/batches?after=a%3Fb%27']) {
      const page = await v1.get(path);
      expect(page.status, path).toBe(200);
      expect(page.body.data).toEqual([]);
    }
  });

  it('an input file that loses its bytes while it is checked (deleted meanwhile) fails the batch instead of running part of it', async () => {
    const w = await startWorker();
    const text = jsonl([line('c1', { model: 'local-hash-v1', input: 'x' }), line('c2', { model: 'local-hash-v1', input: 'y' })]);
    const id = await bigUpload(text);
    // As if the parts after the first had gone: the row says more bytes than there are.
    await t.platform
      .db('files')
      .where({ id })
      .update({ bytes: Buffer.byteLength(text) + 1024 * 1024 });
    const b = await oa().batches.create({ input_file_id: id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const done = await ended(b.id);
    expect(done.status).toBe('failed');
    expect(done.errors?.data?.map((e) => e.code)).toEqual(['invalid_file']);
    await w.stop('SIGTERM');
  }, 60_000);

  it('files past their expiry are deleted by files.expire, with their bytes', async () => {
    const f = await upload('{}\n');
    await t.platform
      .db('files')
      .where({ id: f.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const { deleted } = await expireFiles(t.platform);
    expect(deleted).toBeGreaterThanOrEqual(1);
    await expect(oa().files.retrieve(f.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await t.platform.db('file_parts').where({ file_id: f.id }).first()).toBeUndefined();
  });

  it('an upload the client abandons mid-way keeps nothing', async () => {
    const uploading = async () =>
      Number((await t.platform.db('files').where({ owner_id: aliceId, status: 'uploading' }).count<{ n: string }[]>({ n: '*' }))[0]!.n);
    const url = new URL(`${t.url}/v1/files`);
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=XyZ', 'content-length': '100000' },
    });
    req.on('error', () => {});
    req.write('--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n');
    req.write('{"custom_id":"a"}\n'.repeat(100));
    await until('the upload to begin', uploading, (n) => n === 1, 10_000);
    req.destroy();
    await until('the abandoned upload to be dropped', uploading, (n) => n === 0, 10_000);
  });

  it('BATCHES_RUNNING_PER_USER batches that have not ended at most: one more is 429 too_many_batches', async () => {
    // No worker runs now: each batch stays validating.
    await t.root.post('/api/user/', { username: 'zed', password: 'zed-password', quota: 0 });
    const zed = new HttpClient(t.url);
    await zed.login('zed', 'zed-password');
    const zedKey = (await zed.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key as string;
    const client = new OpenAI({ apiKey: zedKey, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const file = await client.files.create({
      file: await toFile(Buffer.from(jsonl([line('z', { model: 'local-hash-v1', input: 'z' })])), 'z.jsonl'),
      purpose: 'batch',
    });
    const body = { input_file_id: file.id, endpoint: '/v1/embeddings' as const, completion_window: '24h' as const };
    // Six at once: three pass.
    const tries = await Promise.allSettled(Array.from({ length: 6 }, () => client.batches.create(body)));
    expect(tries.filter((x) => x.status === 'fulfilled')).toHaveLength(3);
    for (const x of tries.filter((r) => r.status === 'rejected'))
      expect((x as PromiseRejectedResult).reason).toMatchObject({ status: 429, code: 'too_many_batches' });
    // openai-node is told not to retry it (it would answer the same).
    const again = await t.anon.withAuth(`Bearer ${zedKey}`).post('/v1/batches', body);
    expect(again.status).toBe(429);
    expect(again.headers.get('x-should-retry')).toBe('false');
    expect(Number((await t.platform.db('batches').where({ input_file_id: file.id }).count<{ n: string }[]>({ n: '*' }))[0]!.n)).toBe(3);
  });

  it("a user's count-and-insert steps (files, batches) run one after another: a second waits while the first holds the user", async () => {
    const { asOwner } = await import('../../src/batches/store.js');
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const first = asOwner(t.platform.db, aliceId, () => held);
    await new Promise((r) => setTimeout(r, 100));
    let secondRan = false;
    const second = asOwner(t.platform.db, aliceId, async () => {
      secondRan = true;
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(secondRan).toBe(false);
    release();
    await Promise.all([first, second]);
    expect(secondRan).toBe(true);
  });

  it('the same create with the same Idempotency-Key is one batch; its jobs are the owner’s in GET /api/jobs', async () => {
    const file = await upload(jsonl([line('i1', { model: 'local-hash-v1', input: 'once' })]));
    const body = { input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' };
    const v1 = t.anon.withAuth(`Bearer ${key}`);
    const a = await v1.post('/v1/batches', body, { 'idempotency-key': 'batch-once' });
    const b = await v1.post('/v1/batches', body, { 'idempotency-key': 'batch-once' });
    expect(a.status).toBe(200);
    expect(b.body.id).toBe(a.body.id);
    expect(Number((await t.platform.db('batches').where({ input_file_id: file.id }).count<{ n: string }[]>({ n: '*' }))[0]!.n)).toBe(1);
    const jobs = (await alice.get('/api/jobs')).body;
    expect(JSON.stringify(jobs)).toContain(`batches-${a.body.id}-run`);
  });
});

describe('a chunk run again', () => {
  it('after its outcomes were committed (its completion lost), or twice at once: each line written once, charged once', async () => {
    // No worker runs here: the batch's jobs are run by hand, as a worker would run them.
    for (const w of workers.splice(0)) await w.stop('SIGTERM');
    const { finalizeBatch, runBatch, runChunk } = await import('../../src/batches/run.js');
    const b = await create(jsonl(Array.from({ length: 16 }, (_, i) => line(`r${i}`, { model: 'local-hash-v1', input: `run me again ${i}` }))));
    await runBatch(t.platform, b.id);
    const before = await quota();
    const job = { opts: { attempts: 5 }, attemptsMade: 0 } as never;
    const chunk0 = { batchId: b.id, chunk: 0, from: 0, to: 8 };
    const chunk1 = { batchId: b.id, chunk: 1, from: 8, to: 16 };
    const first = await runChunk(t.platform, chunk0, { job });
    expect(first.completed).toBe(8);
    const again = await runChunk(t.platform, chunk0, { job });
    expect(again.completed).toBe(0);
    const both = await Promise.all([runChunk(t.platform, chunk1, { job }), runChunk(t.platform, chunk1, { job })]);
    expect(both[0].completed + both[1].completed).toBe(8);
    await finalizeBatch(t.platform, b.id);
    const done = await oa().batches.retrieve(b.id);
    expect(done.request_counts).toEqual({ total: 16, completed: 16, failed: 0 });
    const out = await linesOf(done.output_file_id);
    expect(new Set(out.map((o) => o.custom_id)).size).toBe(16);
    const tokens = out.reduce((s, o) => s + o.response.body.usage.prompt_tokens, 0);
    expect(before - (await quota())).toBe(tokens);
  });

  it('a chunk re-checks that the key may still use the model: narrowed since the batch was checked, its lines are refused', async () => {
    const { runBatch, runChunk } = await import('../../src/batches/run.js');
    await t.root.post('/api/user/', { username: 'uma', password: 'uma-password', quota: 1e6 });
    const uma = new HttpClient(t.url);
    await uma.login('uma', 'uma-password');
    const token = (await uma.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data as { id: number; key: string };
    const client = new OpenAI({ apiKey: token.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const file = await client.files.create({
      file: await toFile(Buffer.from(jsonl([line('m1', { model: 'local-hash-v1', input: 'x' })])), 'm.jsonl'),
      purpose: 'batch',
    });
    const b = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
    await runBatch(t.platform, b.id);
    await t.platform.db('tokens').where({ id: token.id }).update({ models: 'use-lite' });
    const r = await runChunk(t.platform, { batchId: b.id, chunk: 0, from: 0, to: 1 }, { job: { opts: { attempts: 5 }, attemptsMade: 0 } as never });
    expect(r).toMatchObject({ completed: 0, failed: 1 });
    const row = await t.platform.db('batch_results').where({ batch_id: b.id, line: 0 }).first();
    expect(JSON.parse(row.output).response.body.error.code).toBe('model_not_allowed');
  });

  it('a batch an hour past its window that never ended (its finalizing failed for good, or it never left validating) is ended by the hourly repair', async () => {
    const { repairBatches } = await import('../../src/batches/service.js');
    const { finalizeBatch, runBatch } = await import('../../src/batches/run.js');
    // A user of its own (alice has batches waiting for a worker that this file no longer runs).
    await t.root.post('/api/user/', { username: 'yan', password: 'yan-password', quota: 1e6 });
    const yan = new HttpClient(t.url);
    await yan.login('yan', 'yan-password');
    const client = new OpenAI({
      apiKey: (await yan.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key,
      baseURL: `${t.url}/v1`,
      maxRetries: 0,
    });
    const make = async (text: string) =>
      client.batches.create({
        input_file_id: (await client.files.create({ file: await toFile(Buffer.from(text), 'y.jsonl'), purpose: 'batch' })).id,
        endpoint: '/v1/embeddings',
        completion_window: '24h',
      });
    // Others' batches an hour past their window are ended too: leave none here.
    await t.platform.db('batches').update({ expires_at: new Date(Date.now() + 86_400_000) });
    const stuck = await make(jsonl([line('s1', { model: 'local-hash-v1', input: 'stuck' })]));
    await runBatch(t.platform, stuck.id);
    const never = await make(jsonl([line('n1', { model: 'local-hash-v1', input: 'never checked' })]));
    const past = new Date(Date.now() - 2 * 3_600_000);
    await t.platform.db('batches').where({ id: stuck.id }).update({ status: 'finalizing', expires_at: past });
    await t.platform.db('batches').where({ id: never.id }).update({ expires_at: past });
    expect(await repairBatches(t.platform)).toBe(2);
    expect((await client.batches.retrieve(never.id)).status).toBe('failed');
    const queued = await t.platform.jobs.queues.get('batches')!.getJobs(['waiting', 'delayed']);
    expect(queued.some((j) => j.id?.startsWith(`batches-${stuck.id}-finalize-repair-`))).toBe(true);
    // What that job runs (no worker here):
    await finalizeBatch(t.platform, stuck.id);
    const done = await client.batches.retrieve(stuck.id);
    expect(done.status).toBe('expired');
    const errors = (await (await client.files.content(done.error_file_id!)).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(errors.map((e) => e.error.code)).toEqual(['batch_expired']);
    expect(await repairBatches(t.platform)).toBe(0);
  });
});
