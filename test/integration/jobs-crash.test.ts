// A job's final state is true after crashes (issue 24, part 0): content batches whose payloads travel through Postgres
// (over JOB_INLINE_PAYLOAD_BYTES), workers SIGKILLed before, during and after the commit of a batch and between the
// commit and BullMQ's record of completion. Every row is stored once and every job reads `completed` with its result.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';
import { item } from '../shared/content-suite.js';

let env: TestEnv;
let api: Spawned & { url: string };
let client: HttpClient;
const workers: Spawned[] = [];
let queue: Queue;
let redis: Redis;
let db: pg.Client;
let watch: pg.Client;

async function startWorker(): Promise<Spawned> {
  const w = spawnEntry('worker', [], { ...env.env, LOG_LEVEL: 'info' });
  await w.waitFor(/workers started/);
  workers.push(w);
  return w;
}

const pidOf = (processedBy: string | undefined) => Number(processedBy?.split(':').at(-1));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function finished(jobId: string) {
  return until(
    `job ${jobId} to finish`,
    async () => (await client.get(`/api/jobs/${jobId}`)).body,
    (b) => b.state === 'completed' || b.state === 'failed',
    120_000,
  );
}

/**
 * A backend of this database waits on a lock, in a statement that starts with `prefix`. Read on a connection of its
 * own: inside a transaction (the ones holding rows here) pg_stat_activity is one snapshot.
 */
async function waitingOn(prefix: string, stillRunning: () => Promise<boolean> = async () => true): Promise<boolean> {
  const seen = await until(
    `a statement "${prefix}…" waiting on a lock`,
    async () => {
      const n = (
        await watch.query(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike $1",
          [`${prefix}%`],
        )
      ).rows[0].n as number;
      // The jobs it waits for may have got past the insert before the lock was taken, and ended: nothing will wait.
      return n > 0 ? 'waiting' : (await stillRunning()) ? 'not yet' : 'ended';
    },
    (v) => v !== 'not yet',
    30_000,
  ).catch(async (e) => {
    const act = (await watch.query('select state, wait_event_type, left(query, 80) as q from pg_stat_activity where datname = current_database()')).rows;
    const jobs = await Promise.all(
      (await queue.getJobs(['active', 'waiting', 'completed', 'failed'])).map(async (j) => [j.id, await j.getState(), j.failedReason]),
    );
    const rows = (await watch.query('select job_id from job_payloads')).rows;
    throw new Error(
      `${e.message}\npayloads ${JSON.stringify(rows)}\n${JSON.stringify(act, null, 1)}\n${JSON.stringify(jobs)}\n${workers.map((w) => w.output().slice(-3000)).join('\n---\n')}`,
    );
  });
  return seen === 'waiting';
}

/** Holds the per-source counter row (a new source gets one first): a batch's insert into that source waits for it. */
async function holdSource(source: string): Promise<pg.Client> {
  await client.post('/api/content', item({ source }));
  const holder = new pg.Client({ connectionString: env.dbUrl });
  await holder.connect();
  await holder.query('begin');
  await holder.query('select * from content_stats where source = $1 for update', [source]);
  return holder;
}

/** Holds a job's payload row: reading it goes through, removing it waits (seen in pg_stat_activity). */
async function holdPayload(jobId: string): Promise<void> {
  await db.query('begin');
  expect((await db.query('select job_id from job_payloads where job_id = $1 for update', [jobId])).rowCount).toBe(1);
}

const batchOf = (source: string, n = 100) => Array.from({ length: n }, () => item({ source, content: 'x'.repeat(200) }));

async function activeIn(jobId: string): Promise<Spawned> {
  const job = await until(
    `job ${jobId} to be active`,
    async () => {
      const j = await queue.getJob(jobId);
      return j?.processedBy && (await j.getState()) === 'active' ? j : undefined;
    },
    (j) => j !== undefined,
  );
  return workers.find((w) => w.proc.pid === pidOf(job!.processedBy))!;
}

async function rowsOf(source: string): Promise<{ n: number; urls: number }> {
  return (await db.query('select count(*)::int as n, count(distinct url)::int as urls from content_items where source = $1', [source])).rows[0];
}

beforeAll(async () => {
  env = await createTestEnv({
    env: { JOB_LOCK_MS: '2000', JOB_STALLED_INTERVAL_MS: '1000', CONTENT_CONCURRENCY: '2', JOB_INLINE_PAYLOAD_BYTES: '1024', SHUTDOWN_TIMEOUT_MS: '2000' },
  });
  api = await spawnServer(['api'], env.env);
  client = new HttpClient(api.url);
  await client.login('root', env.env.ROOT_PASSWORD!);
  await Promise.all([startWorker(), startWorker()]);
  redis = new Redis(env.env.REDIS_URL!, { maxRetriesPerRequest: null });
  queue = new Queue('content', { connection: redis, prefix: env.prefix });
  db = new pg.Client({ connectionString: env.dbUrl });
  await db.connect();
  watch = new pg.Client({ connectionString: env.dbUrl });
  await watch.connect();
}, 120_000);

afterAll(async () => {
  await redis?.call('client', 'unpause').catch(() => {});
  await Promise.all([api, ...workers].map((s) => s?.stop('SIGKILL')));
  await queue?.close();
  redis?.disconnect();
  await db?.end();
  await watch?.end();
  await env?.cleanup();
});

describe('a content batch whose worker is SIGKILLed', () => {
  it('keeps its stored payload until BullMQ has recorded its completion', async () => {
    const stats = await holdSource('order');
    const { jobId } = (await client.post('/api/content/batch', batchOf('order'), { prefer: 'respond-async' })).body;
    expect((await queue.getJob(jobId))!.data.payloadRef).toBe(jobId);
    await waitingOn('insert into "content_items"');
    await holdPayload(jobId);
    await stats.query('rollback');
    await stats.end();
    try {
      await waitingOn('delete from "job_payloads"');
      // The worker is removing the payload: by now the job must be on record as completed.
      expect(await (await queue.getJob(jobId))!.getState()).toBe('completed');
    } finally {
      await db.query('rollback');
    }
    expect((await finished(jobId)).result).toMatchObject({ success: 100, failed: 0 });
    await until(
      'the payload row to go',
      async () => (await db.query('select 1 from job_payloads where job_id = $1', [jobId])).rowCount,
      (n) => n === 0,
    );
  }, 120_000);

  it('after the commit and the payload row went, before completion reached Redis: the job reads completed, not a 410', async () => {
    const stats = await holdSource('window');
    const { jobId } = (await client.post('/api/content/batch', batchOf('window'), { prefer: 'respond-async' })).body;
    const victim = await activeIn(jobId);
    // Hold the payload row until the worker removes it; then freeze what it tells Redis, let the removal through, and
    // kill it before it is heard from: a worker that removed the payload before completion was recorded ran the
    // job again without it (the 410 of issue 24).
    await waitingOn('insert into "content_items"');
    await holdPayload(jobId);
    await stats.query('rollback');
    await stats.end();
    await waitingOn('delete from "job_payloads"');
    await redis.call('client', 'pause', '20000', 'WRITE');
    try {
      await db.query('rollback');
      await until(
        'the payload row to go',
        async () => (await db.query('select 1 from job_payloads where job_id = $1', [jobId])).rowCount,
        (n) => n === 0,
      );
      expect(await rowsOf('window')).toEqual({ n: 101, urls: 101 });
      expect((await victim.stop('SIGKILL')).signal).toBe('SIGKILL');
    } finally {
      await redis.call('client', 'unpause');
    }
    workers.splice(workers.indexOf(victim), 1);
    await startWorker();
    const done = await finished(jobId);
    expect(done.error).toBeNull();
    expect(done.state).toBe('completed');
    expect(done.result).toMatchObject({ success: 100, failed: 0, total: 100 });
    expect(await rowsOf('window')).toEqual({ n: 101, urls: 101 });
  }, 120_000);

  it('before, during and after the commit of 30 batches, many times: every row stored once, every job completed with its result', async () => {
    const sources = ['storm0', 'storm1', 'storm2'];
    for (const source of sources) await client.post('/api/content', item({ source }));
    // The counter rows of the three sources are held between kills: batches reach their insert and wait there.
    const holder = new pg.Client({ connectionString: env.dbUrl });
    await holder.connect();
    const hold = async () => {
      await holder.query('begin');
      await holder.query('select * from content_stats where source = any($1) for update', [sources]);
    };
    await hold();
    const batches = Array.from({ length: 30 }, (_, i) => batchOf(sources[i % 3]!, 100));
    const ids: string[] = [];
    for (const b of batches) ids.push((await client.post('/api/content/batch', b, { prefer: 'respond-async' })).body.jobId);
    // Kill a worker running a batch at a point that moves on each round: while its insert waits (before the commit),
    // a few ms after the rows are let go (as the commit lands), and later (after it, around completion).
    const killsOf = new Map<string, number>();
    for (let round = 0; round < 9; round++) {
      const running = new Map<number, string[]>();
      for (const id of ids) {
        const j = await queue.getJob(id);
        if (j?.processedBy && (await j.getState()) === 'active') running.set(pidOf(j.processedBy), [...(running.get(pidOf(j.processedBy)) ?? []), id]);
      }
      // A job is killed at most twice (maxStalledCount 2: a third stall fails it, and BullMQ says why).
      const victim = workers.find((w) => running.get(w.proc.pid!)?.every((id) => (killsOf.get(id) ?? 0) < 2));
      if (!victim) {
        await holder.query('rollback');
        await sleep(500);
        await hold();
        continue;
      }
      const point = round % 3;
      const victimJobs = running.get(victim.proc.pid!)!;
      const anyActive = async () => (await Promise.all(victimJobs.map(async (id) => (await queue.getJob(id))?.getState()))).includes('active');
      if (point === 0 && !(await waitingOn('insert into "content_items"', anyActive))) {
        // Its jobs ended before the lock held them (a quick machine): no kill this round.
        await holder.query('rollback');
        await hold();
        continue;
      }
      await holder.query('rollback');
      if (point === 1) await sleep(3 + round);
      if (point === 2) await sleep(30 * round);
      for (const id of running.get(victim.proc.pid!)!) killsOf.set(id, (killsOf.get(id) ?? 0) + 1);
      await victim.stop('SIGKILL');
      workers.splice(workers.indexOf(victim), 1);
      await startWorker();
      await hold();
    }
    await holder.query('rollback');
    await holder.end();
    expect([...killsOf.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    for (const [i, id] of ids.entries()) {
      const done = await finished(id);
      expect(done.error, id).toBeNull();
      expect(done.state, id).toBe('completed');
      expect(done.result.success, id).toBe(100);
      expect(done.result.created.map((c: { url: string }) => c.url)).toEqual(batches[i]!.map((b) => b.url));
    }
    for (const source of sources) expect(await rowsOf(source)).toEqual({ n: 1001, urls: 1001 });
  }, 300_000);
});
