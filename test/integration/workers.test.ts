// API and workers as separate processes on shared Postgres and Redis: load sharing and SIGKILL recovery.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';
import { item } from '../shared/content-suite.js';

let env: TestEnv;
let api: Spawned & { url: string };
let client: HttpClient;
const workers: Spawned[] = [];
let queue: Queue;
let redis: Redis;

async function startWorker(): Promise<Spawned> {
  const w = spawnEntry('worker', [], { ...env.env, LOG_LEVEL: 'info' });
  await w.waitFor(/workers started/);
  workers.push(w);
  return w;
}

const pidOf = (processedBy: string | undefined) => Number(processedBy?.split(':').at(-1));

async function waitForJob(jobId: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await queue.getJob(jobId);
    const state = job ? await job.getState() : 'missing';
    if (state === 'completed' || state === 'failed') return job!;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  env = await createTestEnv({ env: { JOB_LOCK_MS: '2000', JOB_STALLED_INTERVAL_MS: '1000', CONTENT_CONCURRENCY: '2', SHUTDOWN_TIMEOUT_MS: '5000' } });
  api = await spawnServer(['api'], env.env);
  client = new HttpClient(api.url);
  await client.login('root', env.env.ROOT_PASSWORD!);
  await Promise.all([startWorker(), startWorker()]);
  redis = new Redis(env.env.REDIS_URL!, { maxRetriesPerRequest: null });
  queue = new Queue('content', { connection: redis, prefix: env.prefix });
});

afterAll(async () => {
  await Promise.all([api, ...workers].map((s) => s?.stop('SIGKILL')));
  await queue?.close();
  redis?.disconnect();
  await env?.cleanup();
});

describe('separate API and worker processes', () => {
  it('complete batches submitted to the API, and two workers share the load', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, () =>
        client.post(
          '/api/content/batch',
          Array.from({ length: 25 }, () => item({ source: 'shared' })),
        ),
      ),
    );
    for (const r of results) expect(r.body).toMatchObject({ success: 25, failed: 0 });
    const completed = await queue.getJobs(['completed'], 0, 1000);
    const byWorker = new Map<number, number>();
    for (const j of completed) byWorker.set(pidOf(j.processedBy), (byWorker.get(pidOf(j.processedBy)) ?? 0) + 1);
    const pids = workers.map((w) => w.proc.pid!);
    expect([...byWorker.keys()].sort()).toEqual([...pids].sort());
    for (const pid of pids) expect(byWorker.get(pid)!).toBeGreaterThanOrEqual(5);
    expect((await client.get('/api/stats')).body.bySource.shared).toBe(1000);
  });
});

/** Waits until a backend of this database waits on a lock inside an insert into content_items (a batch held by hold()). */
async function insertBlocked(db: pg.Client) {
  for (let i = 0; i < 200; i++) {
    // `db` holds the lock in a transaction, where pg_stat_activity is otherwise one snapshot taken at its first read.
    await db.query('select pg_stat_clear_snapshot()');
    const { rows } = await db.query(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike 'insert into \"content_items\"%'",
    );
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no insert into content_items is waiting on the held lock');
}

describe('a worker killed with SIGKILL in the middle of a batch', () => {
  it('after its attempt committed the rows but before the job completed: another worker re-runs it, same ids, no extra rows', async () => {
    const db = new pg.Client({ connectionString: env.dbUrl });
    await db.connect();
    try {
      await client.post('/api/content', item({ source: 'held' }));
      // Hold the per-source counter row: the batch's insert (one statement, its counter trigger inside) waits for it.
      await db.query('begin');
      await db.query("select * from content_stats where source = 'held' for update");
      const batch = Array.from({ length: 100 }, () => item({ source: 'held' }));
      const { jobId } = (await client.post('/api/content/batch', batch, { prefer: 'respond-async' })).body;
      const others = await Promise.all(
        Array.from({ length: 10 }, () =>
          client.post(
            '/api/content/batch',
            Array.from({ length: 10 }, () => item({ source: 'during' })),
            { prefer: 'respond-async' },
          ),
        ),
      );

      let victimPid = 0;
      for (let i = 0; i < 100 && !victimPid; i++) {
        const job = await queue.getJob(jobId);
        if (job?.processedBy && (await job.getState()) === 'active') victimPid = pidOf(job.processedBy);
        else await new Promise((r) => setTimeout(r, 50));
      }
      expect(victimPid).toBeGreaterThan(0);
      const victim = workers.find((w) => w.proc.pid === victimPid)!;
      await insertBlocked(db);
      // Freeze the worker, let its insert go through (Postgres commits it on its own: autocommit), then kill it
      // before it can hear back and complete the job.
      victim.proc.kill('SIGSTOP');
      await db.query('rollback');
      let committed: { id: string; url: string }[] = [];
      for (let i = 0; i < 100 && committed.length < 101; i++) {
        committed = (await db.query("select id, url from content_items where source = 'held'")).rows;
        if (committed.length < 101) await new Promise((r) => setTimeout(r, 50));
      }
      expect(committed, 'attempt 1 committed its 100 rows').toHaveLength(101);
      expect(await (await queue.getJob(jobId))!.getState()).toBe('active');
      expect((await victim.stop('SIGKILL')).signal).toBe('SIGKILL');

      const job = await waitForJob(jobId);
      expect(await job.getState()).toBe('completed');
      expect(pidOf(job.processedBy)).not.toBe(victimPid);
      expect(job.returnvalue).toMatchObject({ success: 100, failed: 0 });
      // The re-run wrote the same rows: every item keeps the id attempt 1 gave it.
      const idByUrl = new Map(committed.map((r) => [r.url, r.id]));
      const created = job.returnvalue.created as { index: number; id: string; url: string }[];
      expect(created.map((c) => c.url)).toEqual(batch.map((b) => b.url));
      for (const c of created) expect(c.id, c.url).toBe(idByUrl.get(c.url));
      for (const o of others) expect(await (await waitForJob(o.body.jobId)).getState()).toBe('completed');

      const after = (await db.query("select id, url from content_items where source = 'held'")).rows;
      expect(new Map(after.map((r) => [r.url, r.id]))).toEqual(idByUrl);
      const counts = await db.query("select source, count(*)::int as n from content_items where source in ('held', 'during') group by source order by source");
      expect(counts.rows).toEqual([
        { source: 'during', n: 100 },
        { source: 'held', n: 101 },
      ]);
      const stats = (await client.get('/api/stats')).body.bySource;
      expect([stats.held, stats.during]).toEqual([101, 100]);
    } finally {
      await db.end();
    }
  });
});
