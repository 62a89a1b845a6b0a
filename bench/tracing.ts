// Traces' cost (docs/operations.md#traces): /v1/embeddings at local-hash-v1 on an API and worker pair with traces off,
// a pair with traces on (every request sampled, OTLP/HTTP protobuf to a sink in the bench process) and a pair sampling
// one request in ten, all started here with the same settings and their own queue prefixes, in alternated rounds of
// the same run (issue 29, section 2).
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpuMs, load } from './load.js';

/** Traces off; on, every request sampled; on, one in ten. */
const CONFIGS = ['off', 'on', 'sampled'] as const;
const ROUNDS = 3;
type Config = (typeof CONFIGS)[number];

export interface TracingBenchContext {
  env: Record<string, string>;
  prefix: string;
  key: string;
  accessToken: string;
  seconds: number;
  spawn: (label: string, args: string[], env: Record<string, string>, watch?: string) => ChildProcess;
  freePort: () => Promise<number>;
  waitHttp: (url: string) => Promise<void>;
  report: (f: { name: string; value: number; unit: string; baseline?: number; ratio?: number; goal: string; pass: boolean; note?: string }) => void;
  log: (msg: string) => void;
}

/** An OTLP/HTTP endpoint that takes every export and keeps only its size: the collector's side costs nothing here. */
async function sink() {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    totals: () => ({ requests, bytes }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export async function tracingBench(c: TracingBenchContext): Promise<void> {
  const collector = await sink();
  const pairs: { name: Config; B: string; api: ChildProcess; worker: ChildProcess }[] = [];
  try {
    for (const name of CONFIGS) {
      const traced: Record<string, string> = name === 'off' ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'switchyard-bench' };
      if (name === 'sampled') Object.assign(traced, { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' });
      const env = { ...c.env, QUEUE_PREFIX: `${c.prefix}-traces-${name}`, ...traced };
      const port = await c.freePort();
      const api = c.spawn(`api-traces-${name}`, ['--max-old-space-size=1024', 'dist/src/server.js', 'api'], { ...env, PORT: String(port) }, 'api');
      const B = `http://127.0.0.1:${port}`;
      await c.waitHttp(`${B}/readyz`);
      const worker = c.spawn(`worker-traces-${name}`, ['--max-old-space-size=1024', 'dist/workers/main.js'], { ...env, WORKER_QUEUES: 'embeddings' }, 'worker');
      for (let i = 0; !(await fetch(`${B}/api/jobs/ping?queue=embeddings`, { method: 'POST', headers: { authorization: c.accessToken } })).ok; i++)
        if (i > 60) throw new Error(`no embeddings worker (traces ${name})`);
      pairs.push({ name, B, api, worker });
    }
    const run = (B: string, durationMs: number) =>
      load({
        url: `${B}/v1/embeddings`,
        method: 'POST',
        headers: { authorization: `Bearer ${c.key}` },
        body: (i) => JSON.stringify({ model: 'local-hash-v1', input: `benchmark sentence number ${i} about queues and embeddings` }),
        connections: 16,
        durationMs,
        warmupMs: 0,
      });
    const rps: Record<Config, number[]> = { off: [], on: [], sampled: [] };
    const cpuPerRequest: Record<Config, number[]> = { off: [], on: [], sampled: [] };
    // Rounds alternate their order (a machine getting busier or quieter weighs on each alike); each configuration's
    // best round is kept: on a shared machine other work only ever takes from a round, never adds to it.
    for (let round = 0; round < ROUNDS; round++) {
      for (const pair of round % 2 === 0 ? pairs : [...pairs].reverse()) {
        c.log(`traces ${pair.name}: /v1/embeddings local-hash-v1, 16 connections (round ${round + 1} of ${ROUNDS})`);
        await run(pair.B, 1_000);
        const before = cpuMs(pair.api.pid!) + cpuMs(pair.worker.pid!);
        const r = await run(pair.B, c.seconds * 1000);
        const cpu = cpuMs(pair.api.pid!) + cpuMs(pair.worker.pid!) - before;
        if (r.errors) throw new Error(`traces ${pair.name}: ${r.errors} errors ${JSON.stringify(r.statuses)}`);
        rps[pair.name].push(r.rps);
        cpuPerRequest[pair.name].push((cpu * 1000) / r.requests);
      }
    }
    // Let the last batch of spans go out before reading what the sink received.
    await new Promise((r) => setTimeout(r, 6_000));
    const sent = collector.totals();
    if (sent.bytes === 0) throw new Error('traces on, but nothing reached the OTLP sink');
    const best = (xs: number[]) => Math.max(...xs);
    const least = (xs: number[]) => Math.min(...xs);
    const rounds = (xs: number[]) => xs.map(Math.round).join('/');
    const ratio = best(rps.on) / best(rps.off);
    c.report({
      name: 'traces_on_local_hash_rps',
      value: best(rps.on),
      unit: 'req/s',
      baseline: best(rps.off),
      ratio,
      goal: '>= 0.95 of traces off (same run, best round of each)',
      pass: ratio >= 0.95,
      note: `rounds off ${rounds(rps.off)}, on ${rounds(rps.on)}; every request sampled; ${sent.requests} OTLP exports, ${Math.round(sent.bytes / 2 ** 20)} MB`,
    });
    c.report({
      name: 'traces_sampled_local_hash_rps',
      value: best(rps.sampled),
      unit: 'req/s',
      baseline: best(rps.off),
      ratio: best(rps.sampled) / best(rps.off),
      goal: 'reported (one request in ten sampled: OTEL_TRACES_SAMPLER=parentbased_traceidratio, 0.1)',
      pass: true,
      note: `rounds ${rounds(rps.sampled)}`,
    });
    c.report({
      name: 'traces_on_cpu_per_request',
      value: least(cpuPerRequest.on),
      unit: 'µs',
      baseline: least(cpuPerRequest.off),
      ratio: least(cpuPerRequest.on) / least(cpuPerRequest.off),
      goal: 'reported (API + worker CPU per /v1/embeddings call, least of the rounds; baseline: traces off)',
      pass: true,
      note: `rounds off ${rounds(cpuPerRequest.off)}, on ${rounds(cpuPerRequest.on)}, one in ten sampled ${rounds(cpuPerRequest.sampled)}`,
    });
  } finally {
    for (const p of pairs) for (const child of [p.api, p.worker]) if (child.exitCode === null) child.kill('SIGTERM');
    await collector.close();
  }
}
