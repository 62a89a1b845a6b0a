// npm run bench: SPEC §9's figures, each against a baseline measured in the same run; one JSON line per figure.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { jobKinds } from '../src/job-kinds.js';
import { createPlatform } from '../src/platform.js';
import { startWorkers } from '../workers/index.js';
import { buildMessage, startDovecot } from '../test/helpers/dovecot.js';
import { clearRedisPrefix } from '../test/helpers/services.js';
import { batchesBench } from './batches.js';
import { providersBench } from './providers.js';
import { idempotencyFigures } from './idempotency.js';
import { relayBench } from './relay.js';
import { useLiteBench } from './use-lite.js';
import { load, percentile } from './load.js';
import { logsBench } from './logs.js';
import { scaleFigures } from './scale.js';
import { startupFigures } from './startup.js';
import { tracingBench } from './tracing.js';
import { webhookFigures } from './webhooks.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/** BENCH_ONLY=relay,providers,use-lite,store,logs,mail,idempotency,webhooks,batches,scale,startup,traces runs only those (and the local-hash figure the others compare with); nothing goes to latest.jsonl then. */
const ONLY = (process.env.BENCH_ONLY ?? '')
  .split(',')
  .map((x) => x.trim())
  .filter(Boolean);
const want = (section: string) => ONLY.length === 0 || ONLY.includes(section);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 1_000_000);

const log = (msg: string) => {
  const rss = [...watched].map(([k, pid]) => `${k.split(':')[0]}=${Math.round(rssOf(pid) / 2 ** 20)}`).join(' ');
  process.stderr.write(
    `[bench ${new Date().toISOString().slice(11, 19)}] ${msg}${rss ? ` (rss MB: ${rss}; peaks: ${[...rssMax].map(([k, v]) => `${k.split(':')[0]}=${Math.round(v / 2 ** 20)}`).join(' ')})` : ''}\n`,
  );
};

interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline: number | null;
  ratio: number | null;
  goal: string;
  pass: boolean;
  note?: string;
}
const figures: Figure[] = [];
function report(f: Omit<Figure, 'value' | 'baseline' | 'ratio'> & { value: number; baseline?: number | null; ratio?: number | null }) {
  const round = (x: number | null | undefined, d = 3) => (x === null || x === undefined ? null : Math.round(x * 10 ** d) / 10 ** d);
  const out: Figure = { ...f, value: round(f.value, 2)!, baseline: round(f.baseline ?? null, 2), ratio: round(f.ratio ?? null) };
  figures.push(out);
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

// ---- processes ---------------------------------------------------------------------------------

const children: ChildProcess[] = [];
const rssMax = new Map<string, number>();
const watched = new Map<string, number>();

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
const sampler = setInterval(() => {
  for (const [label, pid] of watched) rssMax.set(label, Math.max(rssMax.get(label) ?? 0, rssOf(pid)));
}, 250);

function spawnNode(label: string, args: string[], env: Record<string, string>, watch?: string): ChildProcess {
  // BENCH_NODE_FLAGS: V8 flags for the API and worker processes only (e.g. heap limits).
  if (watch && process.env.BENCH_NODE_FLAGS) args = [...process.env.BENCH_NODE_FLAGS.split(' '), ...args];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (b: Buffer) => process.env.BENCH_VERBOSE && process.stderr.write(`[${label}] ${b}`));
  children.push(child);
  if (watch) watched.set(`${watch}:${child.pid}`, child.pid!);
  return child;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitHttp(url: string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
  });
}

// ---- the run -----------------------------------------------------------------------------------

const id = crypto.randomBytes(4).toString('hex');
const dbName = `switchyard_bench_${id}`;
const prefix = `{sybench-${id}}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-bench-'));
const dbUrl = (() => {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const env: Record<string, string> = {
  DATABASE_URL: dbUrl,
  REDIS_URL,
  QUEUE_PREFIX: prefix,
  SECRET_KEY: 'bench-secret-key-0123456789abcdef0123456789',
  ROOT_PASSWORD: 'bench-root-password',
  LOG_LEVEL: 'warn',
  DATA_DIR: dataDir,
  REDIS_AUTOSTART: 'false',
  HOST: '127.0.0.1',
  // The bench's Dovecot (behind its delay proxy) is on loopback, which the outbound policy refuses.
  OUTBOUND_ALLOWLIST: '127.0.0.1',
};

let itemSeq = 0;
function benchItem(source = 'bench') {
  const n = ++itemSeq;
  return {
    source,
    url: `https://bench.example/${id}/${n}`,
    title: `Bench item ${n}: what the queue taught us`,
    summary: `A summary of about a hundred and fifty characters for bench item ${n}, written the way an analyzer model would write it for a reader.`,
    content: `Full text of bench item ${n}. `.padEnd(1000, 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, 这是基准测试的中文内容。'),
    score: (n % 101) / 10,
    analyzedBy: 'bench-model',
  };
}

async function main() {
  const started = Date.now();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  await admin.end();
  log(`database ${dbName}, queue prefix ${prefix}`);

  const apiPort = await freePort();
  // The same V8 settings as npm run api / npm run worker.
  const api = spawnNode('api', ['--enable-source-maps', '--max-old-space-size=1024', 'dist/src/server.js', 'api'], { ...env, PORT: String(apiPort) }, 'api');
  const B = `http://127.0.0.1:${apiPort}`;
  await waitHttp(`${B}/readyz`);
  spawnNode('worker', ['--max-old-space-size=1024', 'dist/workers/main.js'], { ...env, WORKER_QUEUES: 'content,embeddings' }, 'worker');
  const helloPort = await freePort();
  spawnNode('hello', ['--import', 'tsx', 'bench/hello.ts'], { PORT: String(helloPort) });
  await waitHttp(`http://127.0.0.1:${helloPort}/`);

  const login = await fetch(`${B}/api/user/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'root', password: env.ROOT_PASSWORD }),
  });
  const cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const accessToken = ((await (await fetch(`${B}/api/user/token`, { headers: { cookie } })).json()) as { data: string }).data;
  const created = (await (
    await fetch(`${B}/api/token/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: accessToken },
      body: JSON.stringify({ name: 'bench', unlimited_quota: true }),
    })
  ).json()) as { data: { key: string } };
  const key = created.data.key;
  // Wait until the worker consumes both queues.
  for (const q of ['content', 'embeddings']) {
    for (let i = 0; ; i++) {
      const r = await fetch(`${B}/api/jobs/ping?queue=${q}`, { method: 'POST', headers: { authorization: accessToken } });
      if (r.ok) break;
      if (i > 60) throw new Error(`no ${q} worker`);
    }
  }

  // 1. embeddings vs Koa hello world, alternated twice to even out a noisy machine.
  log('embeddings local-hash-v1 vs Koa hello world (16 connections)');
  const hellos: number[] = [];
  const embeds: number[] = [];
  for (let round = 0; round < 2; round++) {
    hellos.push((await load({ url: `http://127.0.0.1:${helloPort}/`, connections: 16, durationMs: SECONDS * 1000, warmupMs: 1000 })).rps);
    const e = await load({
      url: `${B}/v1/embeddings`,
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: (i) => JSON.stringify({ model: 'local-hash-v1', input: `benchmark sentence number ${i} about queues and embeddings` }),
      connections: 16,
      durationMs: SECONDS * 1000,
      warmupMs: 1000,
    });
    if (e.errors) throw new Error(`embeddings errors: ${JSON.stringify(e.statuses)}`);
    embeds.push(e.rps);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  report({
    name: 'embeddings_local_hash_rps',
    value: mean(embeds),
    unit: 'req/s',
    baseline: mean(hellos),
    ratio: mean(embeds) / mean(hellos),
    goal: '>= 0.25 of Koa hello world',
    pass: mean(embeds) / mean(hellos) >= 0.25,
  });

  if (want('traces')) {
    // 1a. traces (OpenTelemetry) on vs off, each on an API and worker pair of its own (bench/tracing.ts).
    await tracingBench({ env, prefix, key, accessToken, seconds: SECONDS, spawn: spawnNode, freePort, waitHttp, report, log });
  }

  if (want('relay')) {
    // 1b. the gateway path: relaying to an upstream (its own process) vs calling it directly.
    const upstreamPort = await freePort();
    spawnNode('upstream', ['--import', 'tsx', 'bench/fake-upstream.ts'], { PORT: String(upstreamPort) });
    await waitHttp(`http://127.0.0.1:${upstreamPort}/`);
    const proxyPort = await freePort();
    spawnNode('bare-proxy', ['--import', 'tsx', 'bench/bare-proxy.ts'], { PORT: String(proxyPort), UPSTREAM: `http://127.0.0.1:${upstreamPort}` });
    await waitHttp(`http://127.0.0.1:${proxyPort}/`);
    await relayBench({
      B,
      accessToken,
      key,
      upstream: `http://127.0.0.1:${upstreamPort}`,
      bareProxy: `http://127.0.0.1:${proxyPort}`,
      dbUrl,
      seconds: SECONDS,
      localHashRps: mean(embeds),
      report,
      log,
    });
  }

  if (want('providers')) {
    // 1b'. each provider adapter's CPU per call in the API process (bench/providers.ts).
    await providersBench({ B, key, accessToken, apiPid: api.pid!, seconds: SECONDS, report, log });
  }

  if (want('use-lite')) {
    // 1c. the trained model: through HTTP and the workers vs the raw model, and with a second worker.
    await useLiteBench({
      B,
      key,
      seconds: SECONDS,
      addWorker: async () => {
        const w = spawnNode('worker2', ['--max-old-space-size=1024', 'dist/workers/main.js'], { ...env, WORKER_QUEUES: 'embeddings' }, 'worker2');
        return () => stop(w);
      },
      report,
      log,
    });
  }

  if (want('store')) {
    // 2. content batch ingest vs raw multi-row INSERT of the same rows, 4 clients each.
    log('content batch ingest vs raw multi-row INSERT (4 clients, 100 items per batch)');
    const pool = new pg.Pool({ connectionString: dbUrl, max: 4 });
    await pool.query('create table bench_raw_items (like content_items including all)');
    const cols = ['id', 'source', 'url', 'title', 'summary', 'content', 'score', 'analyzed_by', 'analyzed_at', 'created_at', 'updated_at'];
    let rawItems = 0;
    let stopRaw = false;
    const rawStart = performance.now();
    const rawTimer = setTimeout(() => (stopRaw = true), SECONDS * 1000);
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stopRaw) {
          const rows = Array.from({ length: 100 }, () => benchItem());
          const values: unknown[] = [];
          const tuples = rows.map((r, i) => {
            const now = new Date();
            values.push(crypto.randomUUID(), r.source, r.url, r.title, r.summary, r.content, r.score, r.analyzedBy, now, now, now);
            return `(${cols.map((_, j) => `$${i * cols.length + j + 1}`).join(',')})`;
          });
          await pool.query(`insert into bench_raw_items (${cols.join(',')}) values ${tuples.join(',')}`, values);
          rawItems += 100;
        }
      }),
    );
    clearTimeout(rawTimer);
    const rawRate = rawItems / ((performance.now() - rawStart) / 1000);
    await pool.query('drop table bench_raw_items');
    const ingest = await load({
      url: `${B}/api/content/batch`,
      method: 'POST',
      headers: { authorization: accessToken },
      body: () => JSON.stringify(Array.from({ length: 100 }, () => benchItem())),
      connections: 4,
      durationMs: SECONDS * 1000,
      warmupMs: 1000,
    });
    if (ingest.errors) throw new Error(`ingest errors: ${JSON.stringify(ingest.statuses)}`);
    const ingestRate = ingest.rps * 100;
    report({
      name: 'content_batch_ingest_items_per_s',
      value: ingestRate,
      unit: 'items/s',
      baseline: rawRate,
      ratio: ingestRate / rawRate,
      goal: '>= 0.5 of raw multi-row INSERT',
      pass: ingestRate / rawRate >= 0.5,
    });

    // 3. job round trip p50: the platform's run() of a no-op vs raw BullMQ add + waitUntilFinished.
    log('job round trip p50 vs raw BullMQ (sequential, in this process)');
    const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const rawPrefix = `${prefix}-raw`;
    const rq = new Queue('raw', { connection: conn, prefix: rawPrefix });
    const rqe = new QueueEvents('raw', { connection: conn, prefix: rawPrefix });
    const rw = new Worker('raw', async () => ({ ok: true }), { connection: conn, prefix: rawPrefix, concurrency: 4 });
    await Promise.all([rqe.waitUntilReady(), rw.waitUntilReady()]);
    const roundTrips = async (fn: () => Promise<unknown>) => {
      for (let i = 0; i < 50; i++) await fn();
      const lat: number[] = [];
      for (let i = 0; i < 500; i++) {
        const t = performance.now();
        await fn();
        lat.push(performance.now() - t);
      }
      return percentile(
        lat.sort((a, b) => a - b),
        50,
      );
    };
    // A queue prefix of its own: only this process's worker takes these jobs, as only raw's takes raw's.
    const config = parseConfig({ ...env, QUEUE_PREFIX: `${prefix}-rt`, LOG_LEVEL: 'silent', WORKER_QUEUES: 'content' });
    const platform = await createPlatform(config, createLogger('silent'), { listenForJobs: true, jobs: jobKinds });
    const ourWorkers = await startWorkers(platform, ['content']);
    // Alternate the two, twice, so neither gets the quieter moment of the machine.
    const rawP50s: number[] = [];
    const ourP50s: number[] = [];
    for (let round = 0; round < 2; round++) {
      rawP50s.push(await roundTrips(async () => (await rq.add('noop', { n: 1 }, { removeOnComplete: true })).waitUntilFinished(rqe, 5_000)));
      ourP50s.push(
        await roundTrips(async () => {
          const r = await platform.jobs.run('content.ping', {}, { owner: null, waitMs: 5_000 });
          if (!r.done) throw new Error('ping did not finish');
        }),
      );
    }
    await ourWorkers.close(5_000);
    await platform.close();
    await rw.close();
    await rqe.close();
    await rq.obliterate({ force: true });
    await rq.close();
    conn.disconnect();
    const rawP50 = Math.min(...rawP50s);
    const ourP50 = Math.min(...ourP50s);
    report({
      name: 'job_round_trip_p50',
      value: ourP50,
      unit: 'ms',
      baseline: rawP50,
      ratio: ourP50 / rawP50,
      goal: '<= 1.5x raw BullMQ',
      pass: ourP50 / rawP50 <= 1.5,
    });

    // 4. list and stats latency at ITEMS items.
    log(`seeding ${ITEMS} items (generate_series; the trigram index is built after the load)`);
    const seedStart = Date.now();
    const seed = new pg.Client({ connectionString: dbUrl });
    await seed.connect();
    await seed.query('drop index content_items_search_trgm');
    const have = Number((await seed.query('select count(*) from content_items')).rows[0].count);
    await seed.query(
      `insert into content_items (id, source, url, title, summary, content, score, analyzed_by, analyzed_at, created_at, updated_at)
       select gen_random_uuid(), (array['twitter','xiaohongshu','linuxdo','hackernews'])[1 + g % 4],
         'https://seed.example/item/' || g, 'Item ' || g || ' 关于数据的标题',
         'A summary of seeded item ' || g || ' about queues, embeddings and 中文内容 ' || (g % 997),
         'Content of item ' || g || ': lorem ipsum dolor sit amet, 这是第' || g || '条内容 ' || md5(g::text),
         round(((g::bigint * 7919) % 1001) / 100.0, 2), 'seed', now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval, now()
       from generate_series(1, $1::int) g`,
      [Math.max(0, ITEMS - have)],
    );
    await seed.query(
      `create index content_items_search_trgm on content_items using gin ((coalesce(title, '') || E'\\x1f' || summary || E'\\x1f' || content) gin_trgm_ops)`,
    );
    await seed.query('analyze content_items');
    const total = Number((await seed.query('select sum(count) as n from content_stats')).rows[0].n);
    await seed.end();
    log(`seeded in ${Math.round((Date.now() - seedStart) / 1000)} s; ${total} items`);
    const latency = async (p: string, n = 300) => {
      const lat: number[] = [];
      for (let i = 0; i < n + 20; i++) {
        const t = performance.now();
        const r = await fetch(`${B}${p}`, { headers: { authorization: accessToken } });
        await r.arrayBuffer();
        if (!r.ok) throw new Error(`${p}: ${r.status}`);
        if (i >= 20) lat.push(performance.now() - t);
      }
      return percentile(
        lat.sort((a, b) => a - b),
        95,
      );
    };
    const listP95 = await latency('/api/content?limit=100');
    report({ name: 'content_list_p95_at_1m', value: listP95, unit: 'ms', goal: '<= 20 ms', pass: listP95 <= 20, note: `${total} items` });
    const statsP95 = await latency('/api/stats');
    report({ name: 'stats_p95_at_1m', value: statsP95, unit: 'ms', goal: '<= 5 ms', pass: statsP95 <= 5, note: `${total} items` });
  }

  if (want('logs')) {
    // 4b. usage logs: /api/log/self and /api/log/stat p95 at 5,000,000 rows, logging's share of local-hash-v1 (bench/logs.ts).
    await logsBench({ base: B, dbUrl, accessToken, key, report, log });
  }

  // 5. mail fetch jobs/s with one, then two, worker processes, against Dovecot behind a delay.
  if (want('mail')) {
    log('mail fetch scaling: 1 vs 2 worker processes (Dovecot behind a 20 ms each-way delay)');
    report(await mailScaling(B, accessToken));
  }
  // 5b. Idempotency-Key: a keyed job submission and item create against the same without a key (bench/idempotency.ts).
  if (want('idempotency')) for (const f of await idempotencyFigures({ base: B, accessToken, log })) report(f);
  if (want('webhooks')) {
    // Deliveries on a worker of their own (the bench's first worker takes content and embeddings).
    spawnNode('worker-webhooks', ['--max-old-space-size=1024', 'dist/workers/main.js'], { ...env, WORKER_QUEUES: 'webhooks' });
    for (let i = 0; !(await fetch(`${B}/api/jobs/ping?queue=webhooks`, { method: 'POST', headers: { authorization: accessToken } })).ok; i++)
      if (i > 60) throw new Error('no webhooks worker');
    for (const f of await webhookFigures({ base: B, accessToken, log })) report(f);
  }
  if (want('batches')) {
    // The Batch API on a worker of its own (batches queue only), with a fake upstream for the relayed batch.
    // BENCH_BATCH_THREADS: the batches worker's use-lite threads (USE_LITE_THREADS; each holds a copy of the model).
    const threads: Record<string, string> = process.env.BENCH_BATCH_THREADS ? { USE_LITE_THREADS: process.env.BENCH_BATCH_THREADS } : {};
    spawnNode('worker-batches', ['--max-old-space-size=1024', 'dist/workers/main.js'], { ...env, WORKER_QUEUES: 'batches', ...threads }, 'worker');
    for (let i = 0; !(await fetch(`${B}/api/jobs/ping?queue=batches`, { method: 'POST', headers: { authorization: accessToken } })).ok; i++)
      if (i > 60) throw new Error('no batches worker');
    const upstreamPort = await freePort();
    spawnNode('upstream-batches', ['--import', 'tsx', 'bench/fake-upstream.ts'], { PORT: String(upstreamPort) });
    await waitHttp(`http://127.0.0.1:${upstreamPort}/`);
    // A provider across the internet: a 64-input embeddings call answered in 150 ms (an assumption, stated in docs/benchmarks.md).
    const farPort = await freePort();
    const farLatencyMs = 150;
    spawnNode('upstream-batches-far', ['--import', 'tsx', 'bench/fake-upstream.ts'], { PORT: String(farPort), LATENCY_MS: String(farLatencyMs) });
    await waitHttp(`http://127.0.0.1:${farPort}/`);
    await batchesBench({
      B,
      key,
      accessToken,
      upstream: `http://127.0.0.1:${upstreamPort}`,
      farUpstream: `http://127.0.0.1:${farPort}`,
      farLatencyMs,
      seconds: SECONDS,
      chunks: 4,
      chunkLines: 64,
      report,
      log,
    });
  }
  if (want('scale')) for (const f of await scaleFigures({ adminUrl: ADMIN_URL, redisUrl: REDIS_URL, seconds: SECONDS, log })) report(f);
  if (want('startup')) for (const f of await startupFigures({ redisUrl: REDIS_URL, log })) report(f);

  // 6. memory under the load above.
  const max = (kind: string) => Math.max(0, ...[...rssMax].filter(([k]) => k.startsWith(`${kind}:`)).map(([, v]) => v)) / 1024 / 1024;
  report({ name: 'api_rss_max', value: max('api'), unit: 'MB', goal: '<= 200 MB', pass: max('api') <= 200 });
  // The worker loads use-lite at start (USE_LITE_PRELOAD): issue 12 allows 400 MB with the model loaded.
  const workers = Math.max(max('worker'), max('worker2'));
  report({ name: 'worker_rss_max', value: workers, unit: 'MB', goal: '<= 400 MB (use-lite loaded)', pass: workers <= 400 });

  void api;
  log(
    `done in ${Math.round((Date.now() - started) / 1000)} s on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
  );
}

/** A TCP relay that holds every chunk `delayMs` in each direction: Dovecot as if it were far away. */
function delayProxy(targetPort: number, delayMs: number): Promise<{ port: number; close(): void }> {
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const relay = (from: net.Socket, to: net.Socket) => {
      from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
      from.on('end', () => setTimeout(() => to.end(), delayMs));
      from.on('error', () => to.destroy());
    };
    relay(client, upstream);
    relay(upstream, client);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as net.AddressInfo).port, close: () => server.close() })),
  );
}

async function mailScaling(B: string, accessToken: string): Promise<Parameters<typeof report>[0]> {
  const dovecot = await startDovecot();
  const proxy = await delayProxy(dovecot.port, 20);
  const mailboxes = 24;
  const accounts: string[] = [];
  try {
    for (let i = 0; i < mailboxes; i++) {
      const email = `bench${i}-${id}@bench.test`;
      await dovecot.addUser(email, 'bench-password');
      for (let m = 0; m < 10; m++) {
        await dovecot.deliver(
          email,
          'INBOX',
          buildMessage({ from: 'News <news@bench.test>', to: email, subject: `Message ${m}`, text: `Body of message ${m} `.repeat(20) }),
        );
      }
      const r = await fetch(`${B}/api/mail/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: accessToken },
        body: JSON.stringify({ email, auth: { type: 'password', password: 'bench-password' }, imap: { host: '127.0.0.1', port: proxy.port, secure: false } }),
      });
      if (!r.ok) throw new Error(`account: ${await r.text()}`);
      accounts.push(email);
    }
    const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue('mail', { connection: conn, prefix });
    // One user owns every bench mailbox: lift the per-user cap (MAIL_USER_CONCURRENCY, 4) that would
    // otherwise bound the run at 4 jobs whatever the workers; this figure is about worker scaling.
    const workerEnv = { ...env, WORKER_QUEUES: 'mail', MAIL_CONCURRENCY: '4', MAIL_USER_CONCURRENCY: '1000' };
    const round = async () => {
      const jobs = accounts.length * 4;
      const before = await queue.getJobCounts('completed', 'failed');
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: jobs }, async (_, i) => {
          const r = await fetch(`${B}/api/mail-all`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: accessToken, prefer: 'respond-async' },
            body: JSON.stringify({ email: accounts[i % accounts.length], limit: 10 }),
          });
          if (r.status !== 202) throw new Error(`mail-all: ${r.status} ${await r.text()}`);
        }),
      );
      for (;;) {
        const c = await queue.getJobCounts('completed', 'failed');
        if (c.failed! > before.failed!) throw new Error('a mail job failed');
        if (c.completed! - before.completed! >= jobs) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      return jobs / ((performance.now() - t0) / 1000);
    };
    const one = spawnNode('mail-worker-1', ['--max-old-space-size=1024', 'dist/workers/main.js'], workerEnv, 'worker');
    await waitForMailWorker(B, accessToken);
    await round(); // warm-up
    const rate1 = await round();
    const two = spawnNode('mail-worker-2', ['--max-old-space-size=1024', 'dist/workers/main.js'], workerEnv, 'worker');
    await new Promise((r) => setTimeout(r, 3_000));
    await round();
    const rate2 = await round();
    await Promise.all([stop(one), stop(two)]);
    await queue.close();
    conn.disconnect();
    return {
      name: 'mail_fetch_scaling',
      value: rate2,
      unit: 'jobs/s',
      baseline: rate1,
      ratio: rate2 / rate1,
      goal: '>= 1.8x with 2 worker processes',
      pass: rate2 / rate1 >= 1.8,
      note: `MAIL_CONCURRENCY=4 per process, MAIL_USER_CONCURRENCY=1000, ${mailboxes} mailboxes of one user, 20 ms each way to Dovecot`,
    };
  } finally {
    proxy.close();
    await dovecot.stop();
  }
}

async function waitForMailWorker(B: string, accessToken: string) {
  for (let i = 0; i < 60; i++) {
    const r = await fetch(`${B}/api/jobs/ping?queue=mail`, { method: 'POST', headers: { authorization: accessToken } });
    if (r.ok) return;
  }
  throw new Error('no mail worker');
}

async function cleanup() {
  clearInterval(sampler);
  await Promise.all(children.map(stop));
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect().catch(() => {});
  await admin.query(`drop database if exists ${dbName} with (force)`).catch(() => {});
  await admin.end().catch(() => {});
  for (const p of [prefix, `${prefix}-raw`, `${prefix}-rt`]) await clearRedisPrefix(p, REDIS_URL).catch(() => {});
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/**
 * The run, traceable: one JSON line describing the machine, commit and settings, then the figures,
 * in bench/results/<time>.jsonl and bench/results/latest.jsonl (the README links the latter).
 */
function saveResults(): string {
  const dir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    if (execFileSync('git', ['status', '--porcelain', '--', 'src', 'workers', 'bench', ':!bench/results'], { cwd: ROOT, encoding: 'utf8' }).trim())
      commit += '+dirty';
  } catch {
    // not a git checkout
  }
  const run = {
    run: {
      at: new Date().toISOString(),
      commit,
      command: `BENCH_SECONDS=${SECONDS} BENCH_ITEMS=${ITEMS} npm run bench`,
      node: process.version,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.cpus().length,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    },
  };
  const text = `${[run, ...figures].map((x) => JSON.stringify(x)).join('\n')}\n`;
  const file = path.join(dir, `${run.run.at.replace(/[:.]/g, '-')}.jsonl`);
  fs.writeFileSync(file, text);
  // A partial run (BENCH_ONLY) is kept under its timestamp only.
  if (ONLY.length === 0) fs.writeFileSync(path.join(dir, 'latest.jsonl'), text);
  return path.relative(ROOT, file);
}

try {
  await main();
  const failed = figures.filter((f) => !f.pass).map((f) => f.name);
  log(failed.length ? `below goal: ${failed.join(', ')}` : 'every figure meets its goal');
  const saved = saveResults();
  log(`results written to ${saved}${ONLY.length === 0 ? ' and bench/results/latest.jsonl' : ' (a partial run: latest.jsonl left as it was)'}`);
} catch (err) {
  log(`failed: ${(err as Error).stack}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
