// A schedule every 2 s across two worker processes for 20 s, with the API process replaced half way (a restart: the new
// one re-syncs every schedule's job scheduler at start): each tick runs once, none is skipped, each makes one job.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';

let env: TestEnv;
let dovecot: DovecotServer;
const procs: Spawned[] = [];
let redis: Redis;
let db: pg.Client;

async function api(): Promise<{ proc: Spawned; client: HttpClient }> {
  const proc = await spawnServer(['api'], env.env);
  procs.push(proc);
  const client = new HttpClient(proc.url);
  await client.login('root', env.env.ROOT_PASSWORD!);
  return { proc, client };
}

async function worker(): Promise<Spawned> {
  const w = spawnEntry('worker', [], { ...env.env, LOG_LEVEL: 'info' });
  procs.push(w);
  await w.waitFor(/workers started/);
  return w;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  dovecot = await startDovecot();
  env = await createTestEnv({ env: { SCHEDULE_MIN_INTERVAL_MS: '1000', SHUTDOWN_TIMEOUT_MS: '5000', MAIL_TIMEOUT_MS: '5000' } });
  redis = new Redis(env.env.REDIS_URL!, { maxRetriesPerRequest: null });
  db = new pg.Client({ connectionString: env.dbUrl });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop('SIGKILL')));
  await db?.end();
  redis?.disconnect();
  await env?.cleanup();
  await dovecot?.stop();
});

describe('a schedule every 2 s, two workers, the API replaced half way', () => {
  it('runs each tick once over 20 s: ticks 2 s apart with none missing, each counted once, each one job that completed once', async () => {
    const first = await api();
    await Promise.all([worker(), worker()]);
    const { email } = await addPasswordAccount(first.client, dovecot, `every2s-${process.pid}@example.test`);
    const created = await first.client.post('/api/schedules', {
      name: 'every 2 s',
      kind: 'mail.purge',
      params: { email, mailbox: 'Junk' },
      interval_ms: 2_000,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as number;
    const createdAt = Date.now();
    await sleep(9_000);
    // A restart: a new API process starts (re-syncing the scheduler: an upsert of the same one), the old one stops.
    const second = await api();
    await first.proc.stop('SIGTERM');
    await sleep(Math.max(0, createdAt + 20_000 - Date.now()));
    expect((await second.client.request('PATCH', `/api/schedules/${id}`, { enabled: false })).status).toBe(200);
    const pausedAt = Date.now();
    // The last tick's job finishes.
    await sleep(3_000);

    const { rows: runs } = await db.query('select tick_at::bigint as t, outcome, job_id, runs from schedule_runs where schedule_id = $1 order by tick_at', [
      id,
    ]);
    const ticks = runs.map((r) => Number(r.t));
    // About one per 2 s while it was enabled (the first at once): ~10.
    const expected = (pausedAt - createdAt) / 2_000;
    expect(ticks.length).toBeGreaterThanOrEqual(Math.floor(expected) - 1);
    expect(ticks.length).toBeLessThanOrEqual(Math.ceil(expected) + 1);
    // None twice: every tick's job ran once (a second run of a tick counts up `runs`)…
    expect(runs.filter((r) => r.runs !== 1)).toEqual([]);
    // …and none skipped: each tick 2 s after the one before.
    expect(ticks.slice(1).map((t, i) => t - ticks[i]!)).toEqual(ticks.slice(1).map(() => 2_000));
    expect(runs.every((r) => r.outcome === 'queued')).toBe(true);
    // One mail job per tick, recorded for its owner, each completed on its first attempt.
    const jobIds = runs.map((r) => r.job_id as string);
    expect(jobIds).toEqual(ticks.map((t) => `mail-s${id}-${t}`));
    const { rows: owners } = await db.query('select job_id from job_owners where job_id like $1 order by job_id', [`mail-s${id}-%`]);
    expect(owners.map((o) => o.job_id).sort()).toEqual([...jobIds].sort());
    const mail = new Queue('mail', { connection: redis, prefix: env.prefix });
    for (const jobId of jobIds) {
      const job = await mail.getJob(jobId);
      expect([jobId, await job?.getState(), job?.attemptsMade]).toEqual([jobId, 'completed', 1]);
    }
    // Every tick job of the scheduler, as BullMQ kept them: one per tick, taken by the two workers.
    const schedules = new Queue('schedules', { connection: redis, prefix: env.prefix });
    const tickJobs = (await schedules.getJobs(['completed'], 0, 1000)).filter((j) => j.repeatJobKey === `schedule-${id}`);
    // (A tick that came as the schedule was being paused found it paused and did nothing.)
    const working = tickJobs.filter((j) => j.returnvalue?.outcome !== 'paused');
    expect(working.map((j) => j.id).sort()).toEqual(ticks.map((t) => `repeat:schedule-${id}:${t}`).sort());
    expect(tickJobs.every((j) => j.attemptsMade === 1)).toBe(true);
    expect(tickJobs.length - working.length).toBeLessThanOrEqual(1);
    await Promise.all([mail.close(), schedules.close()]);
  }, 120_000);
});
