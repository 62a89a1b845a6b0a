// use-lite through the HTTP API and its workers vs the raw model in one process, in the same run (issue 12, item 4).
import { percentile, load } from './load.js';
import { benchSentence, measureRawUseLite } from './use-lite-raw.js';

export interface UseLiteBenchContext {
  B: string;
  key: string;
  seconds: number;
  /** Starts one more worker process on the embeddings queue; resolves to a stop function. */
  addWorker: () => Promise<() => Promise<void>>;
  report: (f: { name: string; value: number; unit: string; baseline?: number; ratio?: number; goal: string; pass: boolean; note?: string }) => void;
  log: (msg: string) => void;
}

/** Waits until /readyz says `n` worker processes have use-lite loaded. */
async function workersReady(B: string, n: number) {
  const want = `loaded by ${n} worker process${n === 1 ? '' : 'es'}`;
  for (let i = 0; i < 600; i++) {
    const r = (await (await fetch(`${B}/readyz`)).json()) as { models?: Record<string, string> };
    if (r.models?.['use-lite'] === want) return;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error(`use-lite never ${want}`);
}

export async function useLiteBench(c: UseLiteBenchContext): Promise<void> {
  c.log('use-lite: the raw model in this process (batch sizes 1–64)');
  const raw = await measureRawUseLite({ seconds: Math.max(2, c.seconds / 3) });
  c.log(`use-lite raw: ${raw.sentencesPerSec.toFixed(0)} sentences/s at batch ${raw.bestBatch}, one sentence ${raw.singleMs.toFixed(1)} ms`);
  await workersReady(c.B, 1);

  let seq = 0;
  const one = async () => {
    const started = performance.now();
    const r = await fetch(`${c.B}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${c.key}` },
      body: JSON.stringify({ model: 'use-lite', input: benchSentence(100_000 + seq++), encoding_format: 'base64' }),
    });
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`use-lite: ${r.status}`);
    return performance.now() - started;
  };
  for (let i = 0; i < 5; i++) await one();
  const idle: number[] = [];
  for (let i = 0; i < 40; i++) idle.push(await one());
  idle.sort((a, b) => a - b);
  const p50 = percentile(idle, 50);
  c.report({
    name: 'use_lite_p50_one_sentence_idle',
    value: p50,
    unit: 'ms',
    baseline: raw.singleMs,
    goal: '<= raw single-sentence latency + 5 ms',
    pass: p50 <= raw.singleMs + 5,
  });

  const through = () =>
    load({
      url: `${c.B}/v1/embeddings`,
      method: 'POST',
      headers: { authorization: `Bearer ${c.key}` },
      body: () => JSON.stringify({ model: 'use-lite', input: benchSentence(seq++), encoding_format: 'base64' }),
      connections: 16,
      durationMs: c.seconds * 1000,
      warmupMs: 1500,
    });
  c.log('use-lite through HTTP, 1 API + 1 worker, 16 clients, one sentence per request');
  const one1 = await through();
  if (one1.errors) throw new Error(`use-lite errors: ${JSON.stringify(one1.statuses)}`);
  c.report({
    name: 'use_lite_http_vs_raw',
    value: one1.rps,
    unit: 'sentences/s',
    baseline: raw.sentencesPerSec,
    ratio: one1.rps / raw.sentencesPerSec,
    goal: '>= 0.8 of the raw model at its best batch size',
    pass: one1.rps / raw.sentencesPerSec >= 0.8,
    note: `raw best batch ${raw.bestBatch}`,
  });

  c.log('use-lite through HTTP with a second worker process');
  const stop = await c.addWorker();
  try {
    await workersReady(c.B, 2);
    const two = await through();
    if (two.errors) throw new Error(`use-lite errors: ${JSON.stringify(two.statuses)}`);
    c.report({
      name: 'use_lite_two_workers_vs_one',
      value: two.rps,
      unit: 'sentences/s',
      baseline: one1.rps,
      ratio: two.rps / one1.rps,
      goal: '>= 1.6x with 2 worker processes',
      pass: two.rps / one1.rps >= 1.6,
      note: 'on 2 cores shared with the API, Postgres, Redis and the load generator',
    });
  } finally {
    await stop();
  }
}
