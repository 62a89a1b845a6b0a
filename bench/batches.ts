// The Batch API (docs/batches.md) measured against baselines of the same run: use-lite through a batch of 10,000
// sentences vs the raw model at its best batch size; a batch through a relayed channel vs the fake upstream called
// directly with the batch's concurrency; interactive /v1/embeddings p50 while a batch runs vs idle; a 50,000-line
// file uploaded, validated and finished with the processes' memory watched (run.ts reports the peaks).
import { load, percentile } from './load.js';
import { benchSentence, measureRawUseLite } from './use-lite-raw.js';

interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  goal: string;
  pass: boolean;
  note?: string;
}

export interface BatchesBenchContext {
  B: string;
  key: string;
  accessToken: string;
  /** The fake upstream's base URL (bench/fake-upstream.ts, its own process). */
  upstream: string;
  /** The same fake holding each answer farLatencyMs, as a provider across the internet does. */
  farUpstream: string;
  farLatencyMs: number;
  seconds: number;
  /** The batch worker's calls at once to a channel (BATCH_CHANNEL_CONCURRENCY) and lines per chunk (BATCH_CHUNK_LINES). */
  chunks: number;
  chunkLines: number;
  report: (f: Figure) => void;
  log: (msg: string) => void;
}

const MODEL = 'bench-batch-relay-model';
const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

async function api<T>(c: BatchesBenchContext, path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${c.B}${path}`, { ...init, headers: { authorization: `Bearer ${c.key}`, ...(init.headers ?? {}) } });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Uploads `lines` (a JSONL file, sent as a stream of parts), runs it as a batch; answers lines/s from create to completed. */
async function runBatch(c: BatchesBenchContext, lines: (i: number) => unknown, n: number, during?: () => Promise<void>) {
  const text = Array.from({ length: n }, (_, i) => JSON.stringify(lines(i))).join('\n');
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([text]), 'bench.jsonl');
  const file = await api<{ id: string }>(c, '/v1/files', { method: 'POST', body: form });
  const started = performance.now();
  const batch = await api<{ id: string }>(c, '/v1/batches', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' }),
  });
  const side = during ? during().then(() => undefined) : undefined;
  type Seen = { status: string; request_counts: { completed: number; failed: number } } & Record<
    'created_at' | 'in_progress_at' | 'finalizing_at' | 'completed_at',
    number
  >;
  let b = { status: 'validating', request_counts: { completed: 0, failed: 0 } } as Seen;
  while (!ENDED.includes(b.status)) {
    await new Promise((r) => setTimeout(r, 100));
    b = await api(c, `/v1/batches/${batch.id}`);
  }
  const seconds = (performance.now() - started) / 1000;
  await side;
  if (b.status !== 'completed' || b.request_counts.failed) throw new Error(`batch ${batch.id}: ${b.status}, ${JSON.stringify(b.request_counts)}`);
  // Where the time went, to the second (the batch's own times).
  const phases = `validating ${b.in_progress_at - b.created_at} s, running ${b.finalizing_at - b.in_progress_at} s, finalizing ${b.completed_at - b.finalizing_at} s`;
  return { linesPerSec: n / seconds, seconds, id: batch.id, phases };
}

/** p50 of one-sentence /v1/embeddings calls, one after another, until `until()` says stop (at least `min` calls). */
async function interactiveP50(c: BatchesBenchContext, model: string, until: () => boolean, min = 30): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; ms.length < min || !until(); i++) {
    const started = performance.now();
    await api(c, '/v1/embeddings', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: benchSentence(900_000 + i + Math.floor(Math.random() * 50_000)), encoding_format: 'base64' }),
    });
    ms.push(performance.now() - started);
    if (ms.length > 2000) break;
  }
  return percentile(
    ms.sort((a, b) => a - b),
    50,
  );
}

const line = (model: string, input: string) => ({
  custom_id: input,
  method: 'POST',
  url: '/v1/embeddings',
  body: { model, input, encoding_format: 'base64' },
});

export async function batchesBench(c: BatchesBenchContext): Promise<void> {
  // 1. use-lite: a batch of 10,000 sentences vs the raw model at its best batch size (this process, same run).
  c.log('batches: the raw use-lite model in this process (batch sizes 1–64)');
  const raw = await measureRawUseLite({ seconds: Math.max(2, c.seconds / 3), firstSentence: 500_000 });
  // A small batch first: the batch worker loads the model on its first use-lite line.
  await runBatch(c, (i) => line('use-lite', benchSentence(400_000 + i)), 64);
  c.log('batches: use-lite, a batch of 10,000 sentences');
  const useLite = await runBatch(c, (i) => line('use-lite', benchSentence(200_000 + i)), 10_000);
  c.report({
    name: 'batch_use_lite_vs_raw',
    value: useLite.linesPerSec,
    unit: 'sentences/s',
    baseline: raw.sentencesPerSec,
    ratio: useLite.linesPerSec / raw.sentencesPerSec,
    goal: '>= 0.85 of the raw model at its best batch size',
    pass: useLite.linesPerSec / raw.sentencesPerSec >= 0.85,
    note: `10,000 lines from create to completed in ${useLite.seconds.toFixed(1)} s (${useLite.phases}); raw best batch ${raw.bestBatch}`,
  });

  c.log('batches: interactive use-lite calls, idle, then while a 3,000-line use-lite batch runs');
  const idleP50 = await interactiveP50(c, 'use-lite', () => true, 40);
  let running = true;
  let busyP50 = 0;
  await runBatch(
    c,
    (i) => line('use-lite', benchSentence(300_000 + i)),
    3_000,
    async () => {
      await new Promise((r) => setTimeout(r, 1500));
      busyP50 = await interactiveP50(c, 'use-lite', () => !running);
    },
  ).finally(() => {
    running = false;
  });
  c.report({
    name: 'interactive_p50_during_batch',
    value: busyP50,
    unit: 'ms',
    baseline: idleP50,
    ratio: busyP50 / idleP50,
    goal: '<= 2x the idle p50',
    pass: busyP50 <= 2 * idleP50,
    note: 'one-sentence use-lite /v1/embeddings calls (the embeddings worker), one at a time, while a use-lite batch ran (the batches worker), vs idle',
  });

  // 2. a batch through a relayed channel vs the fake upstream called directly with the batch's concurrency: once with
  // an upstream that answers at once (what our own path costs per line), once with one that takes c.farLatencyMs.
  await relayVsDirect(c, { name: 'batch_relay_vs_direct', model: MODEL, upstream: c.upstream, latencyMs: 0 });
  await relayVsDirect(c, { name: 'batch_relay_vs_direct_far', model: `${MODEL}-far`, upstream: c.farUpstream, latencyMs: c.farLatencyMs });

  // 3. 50,000 lines: upload, validation, chunks and finalizing, with memory watched by run.ts.
  c.log('batches: a 50,000-line local-hash-v1 file (memory watched)');
  const big = await runBatch(c, (i) => line('local-hash-v1', `line ${i} of the big file`), 50_000);
  c.report({
    name: 'batch_50k_lines_per_s',
    value: big.linesPerSec,
    unit: 'lines/s',
    goal: 'finishes (memory: api_rss_max and worker_rss_max below)',
    pass: true,
    note: `50,000 lines in ${big.seconds.toFixed(1)} s (${big.phases})`,
  });
}

/** A batch of 10,000 one-input lines through a channel on `upstream` vs that upstream called directly with the batch's traffic. */
async function relayVsDirect(c: BatchesBenchContext, o: { name: string; model: string; upstream: string; latencyMs: number }) {
  const made = await fetch(`${c.B}/api/channel/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: c.accessToken },
    body: JSON.stringify({ type: 'openai', name: `bench-${o.model}`, key: 'sk-bench-upstream', base_url: o.upstream, models: o.model, price: 0 }),
  });
  if (made.status !== 201) throw new Error(`channel: ${made.status} ${await made.text()}`);
  // The batch's upstream traffic: `chunks` calls at once (one per chunk running), each with a chunk's inputs.
  c.log(`batches: the fake upstream (answering in ${o.latencyMs} ms) directly, ${c.chunks} connections, ${c.chunkLines} inputs per call`);
  const direct = await load({
    url: `${o.upstream}/v1/embeddings`,
    method: 'POST',
    headers: { authorization: 'Bearer sk-bench-upstream' },
    body: (i) =>
      JSON.stringify({
        model: 'text-embedding-3-small',
        input: Array.from({ length: c.chunkLines }, (_, k) => `direct batch sentence ${i}.${k}`),
        encoding_format: 'base64',
      }),
    connections: c.chunks,
    durationMs: c.seconds * 1000,
    warmupMs: 1000,
  });
  const directLines = direct.rps * c.chunkLines;
  c.log(`batches: a batch of 10,000 lines through the relayed channel (upstream answering in ${o.latencyMs} ms)`);
  const stamp = Date.now();
  const relayed = await runBatch(c, (i) => line(o.model, `relayed batch sentence ${i} ${stamp}`), 10_000);
  c.report({
    name: o.name,
    value: relayed.linesPerSec,
    unit: 'lines/s',
    baseline: directLines,
    ratio: relayed.linesPerSec / directLines,
    goal: '>= 0.8 of the upstream called directly',
    pass: relayed.linesPerSec / directLines >= 0.8,
    note: `upstream answers in ${o.latencyMs} ms; 10,000 one-input lines in ${relayed.seconds.toFixed(1)} s (${relayed.phases}); direct: the same calls (${c.chunks} at once, ${c.chunkLines} inputs each, base64)`,
  });
}
