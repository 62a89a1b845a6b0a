// One user cannot take the built-in models (issue 22 item 2): the workers share model calls fairly between callers, and
// drop the texts of a caller who has gone before they reach the model, and the model never stalls the process's main
// thread. Real Postgres and Redis; the use-lite model runs in a thread of this process's workers (one thread here: with
// two, the other user's calls would go to the second and never wait in line at all).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useLiteBatcher } from '../../src/embeddings/use-lite-worker.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let flooder: HttpClient;
let other: HttpClient;

/** An English input of more than 128 pieces (the model's most), distinct per `i`. */
const longText = (i: number) => `Report ${i}: ${'the quick brown fox jumps over the lazy dog near the quiet river bank today, '.repeat(12)}`;

async function userKey(name: string): Promise<string> {
  if (name !== 'root') expect((await t.root.post('/api/user/', { username: name, password: `${name}-password` })).status).toBe(201);
  const c = name === 'root' ? t.root : new HttpClient(t.url);
  if (name !== 'root') await c.login(name, `${name}-password`);
  return (await c.post('/api/token/', { name: `${name}-key`, unlimited_quota: true })).body.data.key as string;
}

beforeAll(async () => {
  t = await startTestApp({ env: { USE_LITE_THREADS: '1' } });
  flooder = t.anon.withAuth(`Bearer ${await userKey('root')}`);
  other = t.anon.withAuth(`Bearer ${await userKey('bob')}`);
  // Load the model before anything is measured.
  expect((await other.post('/v1/embeddings', { model: 'use-lite', input: 'warm up' })).status).toBe(200);
}, 90_000);
afterAll(async () => {
  await t?.close();
});

describe('use-lite shares its model calls between users', () => {
  it("another user's one sentence is in the next model call or so, however many long requests one user has queued", async () => {
    const batcher = useLiteBatcher();
    const calls0 = batcher.calls;
    // Five requests of eight 128-piece inputs: each fills a model call (1,024 pieces).
    const flood = Array.from({ length: 5 }, (_, r) =>
      flooder.post('/v1/embeddings', { model: 'use-lite', input: Array.from({ length: 8 }, (__, i) => longText(r * 8 + i)) }),
    );
    // Once the first of the flood's calls is under way.
    while (batcher.calls === calls0) await new Promise((r) => setTimeout(r, 2));
    const sentAt = batcher.texts;
    const mine = await other.post('/v1/embeddings', { model: 'use-lite', input: 'Is my one sentence stuck behind all of that?' });
    const embeddedMeanwhile = batcher.texts - sentAt - 1;
    expect(mine.status).toBe(200);
    // The flood's call under way, the next one (beside this sentence) and, on a slow turn, one more: at most 3 × 8 texts
    // of the flood; waiting for all five requests would be 32 more.
    expect(embeddedMeanwhile, `${embeddedMeanwhile} of the flood's texts embedded while one sentence waited`).toBeLessThanOrEqual(24);
    for (const res of await Promise.all(flood)) expect(res.status).toBe(200);
  }, 120_000);

  it('drops the texts of a caller who disconnected: they never reach the model', async () => {
    const batcher = useLiteBatcher();
    const calls0 = batcher.calls;
    const flood = flooder.post('/v1/embeddings', { model: 'use-lite', input: Array.from({ length: 24 }, (_, i) => longText(100 + i)) });
    while (batcher.calls === calls0) await new Promise((r) => setTimeout(r, 2));
    const [texts0, dropped0] = [batcher.texts, batcher.dropped];
    // A request from another user that is given up on while it waits its turn: the client closes the connection.
    const body = JSON.stringify({ model: 'use-lite', input: Array.from({ length: 8 }, (_, i) => longText(200 + i)) });
    const req = http.request(`${t.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: other.authorization!, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.end(body);
    // Its job reaches the worker's line (the flood's first call, eight long texts, is still under way), then the client leaves.
    await new Promise((r) => setTimeout(r, 150));
    req.destroy();
    expect((await flood).status).toBe(200);
    expect(batcher.dropped - dropped0).toBe(1);
    // Only the flood's 24 texts were embedded after the first of its calls: none of the 8 of the request given up on.
    expect(batcher.texts - texts0).toBeLessThanOrEqual(24);
  }, 120_000);

  it("runs the model off the process's main thread: the event loop keeps turning through a long model call", async () => {
    const gaps: number[] = [];
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      gaps.push(now - last);
      last = now;
    }, 5);
    const started = performance.now();
    // Eight 128-piece inputs: one model call of ~1 s of CPU that never yields.
    const res = await other.post('/v1/embeddings', { model: 'use-lite', input: Array.from({ length: 8 }, (_, i) => longText(300 + i)) });
    const took = performance.now() - started;
    clearInterval(ticker);
    expect(res.status).toBe(200);
    // On the main thread the call would be one gap as long as most of the request.
    expect(Math.max(...gaps), `longest stall ${Math.max(...gaps).toFixed(0)} ms of a ${took.toFixed(0)} ms request`).toBeLessThan(took / 3);
  }, 60_000);
});
