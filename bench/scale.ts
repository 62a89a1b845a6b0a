// Scale-out figures (issue 15): content ingest and job round trip on a 3-master Redis Cluster vs one Redis, and
// through PgBouncer (transaction mode) vs straight to Postgres, measured in the same run. `npm run bench` calls
// scaleFigures(); `npx tsx bench/scale.ts` runs these figures alone.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { parseConfig } from '../src/config.js';
import { createDb, migrateLatest } from '../src/db.js';
import { createLogger } from '../src/log.js';
import { jobKinds } from '../src/job-kinds.js';
import { createPlatform, type Platform } from '../src/platform.js';
import { startWorkers, type WorkerSet } from '../workers/index.js';
import { startPgBouncer } from '../test/helpers/pgbouncer.js';
import { startRedisCluster } from '../test/helpers/redis-cluster.js';
import { clearRedisPrefix } from '../test/helpers/services.js';
import { percentile } from './load.js';

export interface ScaleFigure {
  name: string;
  value: number;
  unit: string;
  baseline: number;
  ratio: number;
  goal: string;
  pass: boolean;
  note?: string;
}

export interface ScaleOptions {
  /** A Postgres superuser URL (a database of its own is created and dropped). */
  adminUrl: string;
  /** The single Redis. */
  redisUrl: string;
  /** Seconds per ingest measurement (taken twice per setup, alternating). */
  seconds: number;
  log: (msg: string) => void;
}

interface Setup {
  label: string;
  platform: Platform;
  workers: WorkerSet;
  ingest: number[];
  roundTrip: number[];
  /** Round trips of a job that writes one row (content.batch of one item). */
  writeTrip: number[];
}

export async function scaleFigures(opts: ScaleOptions): Promise<ScaleFigure[]> {
  const id = crypto.randomBytes(4).toString('hex');
  const dbName = `switchyard_scale_${id}`;
  const admin = new pg.Client({ connectionString: opts.adminUrl });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  await admin.end();
  const direct = new URL(opts.adminUrl);
  direct.pathname = `/${dbName}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-scale-'));
  opts.log('scale-out: starting a Redis Cluster (3 masters, 3 replicas) and PgBouncer (transaction mode)');
  const [cluster, pgbouncer] = await Promise.all([startRedisCluster(), startPgBouncer({ poolSize: 20 })]);
  const prefixes: string[] = [];
  const setups: Setup[] = [];
  try {
    const migrator = await createDb(parseConfig({ DATABASE_URL: direct.toString() }));
    await migrateLatest(migrator);
    await migrator.destroy();
    const base = {
      DATABASE_URL: direct.toString(),
      REDIS_URL: opts.redisUrl,
      SECRET_KEY: 'bench-secret-key-0123456789abcdef0123456789',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      REDIS_AUTOSTART: 'false',
      WORKER_QUEUES: 'content',
    };
    const setup = async (label: string, env: Record<string, string>) => {
      const prefix = `{syscale-${id}-${setups.length}}`;
      prefixes.push(prefix);
      const config = parseConfig({ ...base, QUEUE_PREFIX: prefix, ...env });
      const platform = await createPlatform(config, createLogger('silent'), { listenForJobs: true, jobs: jobKinds });
      const workers = await startWorkers(platform, ['content']);
      setups.push({ label, platform, workers, ingest: [], roundTrip: [], writeTrip: [] });
    };
    await setup('single Redis, direct Postgres', {});
    await setup('Redis Cluster', { REDIS_URL: cluster.url, REDIS_CLUSTER_NODES: cluster.seeds });
    await setup('PgBouncer', { DATABASE_URL: pgbouncer.url(dbName), DATABASE_STATEMENT_TIMEOUT_MS: '0' });
    const [single, clustered, pooled] = setups as [Setup, Setup, Setup];

    let seq = 0;
    const batch = (n = 100) =>
      Array.from({ length: n }, () => {
        const n = ++seq;
        return {
          source: 'scale',
          url: `https://scale.example/${id}/${n}`,
          title: `Scale item ${n}`,
          summary: `A summary of scale bench item ${n}, about as long as an analyzer would write it.`,
          content: `Full text of scale bench item ${n}. `.padEnd(1000, 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '),
          score: (n % 101) / 10,
        };
      });
    // Content ingest: four producers, each enqueueing a 100-item batch and waiting for it, for `seconds`.
    const ingest = async (s: Setup) => {
      let items = 0;
      const until = performance.now() + opts.seconds * 1000;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (performance.now() < until) {
            const r = await s.platform.jobs.run('content.batch', { items: batch() }, { owner: null, waitMs: 30_000 });
            if (!r.done || r.result.failed) throw new Error(`${s.label}: a batch did not complete`);
            items += 100;
          }
        }),
      );
      s.ingest.push(items / ((performance.now() - started) / 1000));
    };
    // Job round trip, one at a time: a no-op job (Redis only), and a job that writes one row (Redis and Postgres).
    const p50 = async (label: string, run: () => Promise<boolean>) => {
      const lat: number[] = [];
      for (let i = 0; i < 330; i++) {
        const t = performance.now();
        if (!(await run())) throw new Error(`${label}: a job did not finish`);
        if (i >= 30) lat.push(performance.now() - t);
      }
      return percentile(
        lat.sort((a, b) => a - b),
        50,
      );
    };
    const roundTrip = async (s: Setup) => {
      s.roundTrip.push(await p50(s.label, async () => (await s.platform.jobs.run('content.ping', {}, { owner: null, waitMs: 5_000 })).done));
      if (s === clustered) return;
      const one = async () => (await s.platform.jobs.run('content.batch', { items: batch(1) }, { owner: null, waitMs: 5_000 })).done;
      s.writeTrip.push(await p50(s.label, one));
    };
    // Alternated (ingest twice, the shorter round trips five times), so no setup gets the machine's quieter moments.
    for (let round = 0; round < 5; round++) {
      for (const s of setups) {
        if (round < 2) {
          opts.log(`scale-out ingest round ${round + 1}: ${s.label}`);
          await ingest(s);
        }
        await roundTrip(s);
      }
    }
    const best = (xs: number[]) => Math.max(...xs);
    const fastest = (xs: number[]) => Math.min(...xs);
    const ingestFigure = (name: string, s: Setup, against: string, note: string): ScaleFigure => {
      const ratio = best(s.ingest) / best(single.ingest);
      return { name, value: best(s.ingest), unit: 'items/s', baseline: best(single.ingest), ratio, goal: `>= 0.8 of ${against}`, pass: ratio >= 0.8, note };
    };
    const roundTripFigure = (name: string, s: Setup, trips: 'roundTrip' | 'writeTrip', against: string, note: string): ScaleFigure => {
      const ratio = fastest(s[trips]) / fastest(single[trips]);
      return {
        name,
        value: fastest(s[trips]),
        unit: 'ms',
        baseline: fastest(single[trips]),
        ratio,
        goal: `<= 1.25x ${against} (>= 0.8 of its speed)`,
        pass: ratio <= 1.25,
        note,
      };
    };
    const where = 'API and worker in one process, CONTENT_CONCURRENCY=4, 4 producers of 100-item batches';
    return [
      ingestFigure('content_ingest_redis_cluster', clustered, 'one Redis', `3 masters + 3 replicas on this machine; ${where}`),
      roundTripFigure(
        'job_round_trip_p50_redis_cluster',
        clustered,
        'roundTrip',
        'one Redis',
        '3 masters + 3 replicas on this machine; sequential content.ping',
      ),
      ingestFigure('content_ingest_pgbouncer', pooled, 'direct Postgres', `PgBouncer 1.18, pool_mode=transaction, default_pool_size=20; ${where}`),
      roundTripFigure(
        'job_round_trip_p50_pgbouncer',
        pooled,
        'writeTrip',
        'direct Postgres',
        'PgBouncer 1.18, pool_mode=transaction; sequential content.batch of one item (one upsert)',
      ),
    ];
  } finally {
    for (const s of setups) {
      await s.workers.close(5_000).catch(() => {});
      await s.platform.close().catch(() => {});
    }
    for (const p of prefixes) await clearRedisPrefix(p, opts.redisUrl).catch(() => {});
    await Promise.all([cluster.stop(), pgbouncer.stop()]);
    const c = new pg.Client({ connectionString: opts.adminUrl });
    await c.connect().catch(() => {});
    await c.query(`drop database if exists ${dbName} with (force)`).catch(() => {});
    await c.end().catch(() => {});
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// Run alone: npx tsx bench/scale.ts
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const figures = await scaleFigures({
    adminUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    seconds: Number(process.env.BENCH_SECONDS ?? 8),
    log: (msg) => process.stderr.write(`[scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`),
  });
  for (const f of figures) {
    const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;
    process.stdout.write(`${JSON.stringify({ ...f, value: round(f.value, 2), baseline: round(f.baseline, 2), ratio: round(f.ratio, 3) })}\n`);
  }
}
