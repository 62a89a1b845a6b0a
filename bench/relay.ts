// The gateway path (issue 12, item 3): relaying to an upstream vs calling it directly, in the same run.
import pg from 'pg';
import { load } from './load.js';

export interface RelayBenchContext {
  /** Switchyard's base URL, an admin access token and an unlimited API key of root's. */
  B: string;
  accessToken: string;
  key: string;
  /** The fake upstream's base URL (bench/fake-upstream.ts, its own process). */
  upstream: string;
  /** A bare proxy in front of it (bench/bare-proxy.ts): what a relay that does nothing costs. */
  bareProxy: string;
  dbUrl: string;
  seconds: number;
  /** local-hash-v1 req/s measured earlier in the same run, for the cache-hit comparison. */
  localHashRps: number;
  report: (f: { name: string; value: number; unit: string; baseline?: number; ratio?: number; goal: string; pass: boolean; note?: string }) => void;
  log: (msg: string) => void;
}

const MODEL = 'bench-relay-model';
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export async function relayBench(c: RelayBenchContext): Promise<void> {
  const created = await fetch(`${c.B}/api/channel/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: c.accessToken },
    body: JSON.stringify({ type: 'openai', name: 'bench-upstream', key: 'sk-bench-upstream', base_url: c.upstream, models: MODEL, price: 1 }),
  });
  if (created.status !== 201) throw new Error(`channel: ${created.status} ${await created.text()}`);
  // Every relayed call costs quota (the channel's price); give root enough for the run.
  const db = new pg.Client({ connectionString: c.dbUrl });
  await db.connect();
  await db.query(`update users set quota = 1000000000000 where username = 'root'`);
  await db.end();

  const run = Date.now().toString(36);
  const direct = (connections: number, ms: number, via = c.upstream) =>
    load({
      url: `${via}/v1/embeddings`,
      method: 'POST',
      headers: { authorization: 'Bearer sk-bench-upstream' },
      body: (i) => JSON.stringify({ model: 'text-embedding-3-small', input: `direct ${run} sentence number ${i} about queues`, encoding_format: 'float' }),
      connections,
      durationMs: ms,
      warmupMs: 1000,
    });
  const relay = (connections: number, ms: number, body: (i: number) => string) =>
    load({ url: `${c.B}/v1/embeddings`, method: 'POST', headers: { authorization: `Bearer ${c.key}` }, body, connections, durationMs: ms, warmupMs: 1000 });
  let seq = 0;
  const unique = () => JSON.stringify({ model: MODEL, input: `relay ${run} sentence number ${seq++} about queues`, encoding_format: 'float' });

  c.log('relay to an upstream vs the upstream directly (16 connections, unique inputs, 1536 floats)');
  const directs: number[] = [];
  const relays: number[] = [];
  const bares: number[] = [];
  for (let round = 0; round < 2; round++) {
    directs.push((await direct(16, c.seconds * 1000)).rps);
    bares.push((await direct(16, c.seconds * 1000, c.bareProxy)).rps);
    const r = await relay(16, c.seconds * 1000, unique);
    if (r.errors) throw new Error(`relay errors: ${JSON.stringify(r.statuses)}`);
    relays.push(r.rps);
  }
  c.report({
    name: 'embeddings_relay_rps',
    value: mean(relays),
    unit: 'req/s',
    baseline: mean(directs),
    ratio: mean(relays) / mean(directs),
    goal: '>= 0.4 of the upstream called directly',
    pass: mean(relays) / mean(directs) >= 0.4,
  });

  c.report({
    name: 'embeddings_relay_bare_proxy_rps',
    value: mean(bares),
    unit: 'req/s',
    baseline: mean(directs),
    ratio: mean(bares) / mean(directs),
    goal: 'none: for comparison, a proxy that only passes bodies through (no auth, quota, cache or parsing)',
    pass: true,
  });

  c.log('relay vs direct at one client (p50)');
  const d1 = await direct(1, c.seconds * 500);
  const r1 = await relay(1, c.seconds * 500, unique);
  c.report({
    name: 'embeddings_relay_p50_one_client',
    value: r1.p50,
    unit: 'ms',
    baseline: d1.p50,
    goal: '<= direct p50 + 3 ms',
    pass: r1.p50 <= d1.p50 + 3,
  });

  c.log('relay cache hits vs local-hash-v1 (16 connections)');
  const hot = Array.from({ length: 64 }, (_, i) => `cached ${run} sentence number ${i}`);
  for (const input of hot) {
    const r = await fetch(`${c.B}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${c.key}` },
      body: JSON.stringify({ model: MODEL, input }),
    });
    if (!r.ok) throw new Error(`warm-up: ${r.status}`);
  }
  const hits = await relay(16, c.seconds * 1000, (i) => JSON.stringify({ model: MODEL, input: hot[i % hot.length], encoding_format: 'float' }));
  if (hits.errors) throw new Error(`cache-hit errors: ${JSON.stringify(hits.statuses)}`);
  c.report({
    name: 'embeddings_cache_hit_rps',
    value: hits.rps,
    unit: 'req/s',
    baseline: c.localHashRps,
    ratio: hits.rps / c.localHashRps,
    goal: '>= 0.8 of local-hash-v1',
    pass: hits.rps / c.localHashRps >= 0.8,
    note: '1536-float vectors, float format',
  });
}
