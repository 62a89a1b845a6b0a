// Jobs failed for good outside their handler are announced too, exactly once across worker processes (issue 24, part
// 3): one whose payload is gone before it runs, one failed by a process that did not announce it (as one killed right
// after would leave it: the sweeps find it), and one whose workers were SIGKILLed more often than maxStalledCount
// (BullMQ fails it: "job stalled more than allowable limit"). A job its handler failed still makes one event. Two
// worker processes run throughout, each sweeping the failed jobs: each end reaches the loopback receiver once, and is
// announced by one process only (the log says who announced an end outside a handler).
import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { spawnEntry, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { item } from '../shared/content-suite.js';

let t: TestApp;
let receiver: Receiver;
/** Every worker started, killed ones included (their output is kept). */
const started: Spawned[] = [];
let live: Spawned[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pidOf = (processedBy: string | undefined) => Number(processedBy?.split(':').at(-1));
/** Past the sweeps' grace (10 s) and a few of their rounds (JOB_STALLED_INTERVAL_MS 1 s): time enough for a second announcement to show. */
const SWEEPS_MS = 14_000;

async function startWorker(): Promise<Spawned> {
  const w = spawnEntry('worker', [], { ...t.testEnv.env, LOG_LEVEL: 'info' });
  started.push(w);
  live.push(w);
  await w.waitFor(/workers started/);
  return w;
}

const received = (jobId: string) => receiver.requests.filter((r) => JSON.parse(r.body).data.id === jobId);
/** The log lines, across every worker process, of an end announced outside its handler. */
const announcedOutside = (jobId: string) =>
  started.flatMap((w) => w.output().split('\n')).filter((l) => l.includes('failed outside its handler') && l.includes(`"jobId":"${jobId}"`));

async function oneFailedEvent(jobId: string, path: string) {
  await until(
    'the job.failed delivery',
    async () => received(jobId).length,
    (n) => n > 0,
    90_000,
  );
  return { request: received(jobId)[0]!, event: JSON.parse(received(jobId)[0]!.body), path };
}

async function expectOnce(jobId: string, path: string) {
  const got = received(jobId);
  expect(got.length, `${jobId}: one delivery`).toBe(1);
  expect(got[0]!.path).toBe(path);
  const events = await t.platform.db('webhook_events').where('body', 'like', `%${jobId}%`);
  expect(events.length, `${jobId}: one event`).toBe(1);
  expect(events[0].type).toBe('job.failed');
  const ok = await t.platform.db('webhook_deliveries').where({ event_id: events[0].id, ok: true });
  expect(ok.length, `${jobId}: delivered once`).toBe(1);
}

beforeAll(async () => {
  t = await startTestApp({
    workers: false,
    env: {
      JOB_LOCK_MS: '2000',
      JOB_STALLED_INTERVAL_MS: '1000',
      JOB_INLINE_PAYLOAD_BYTES: '1024',
      WEBHOOK_BACKOFF_MS: '100',
      WEBHOOK_BACKOFF_MAX_MS: '500',
      SHUTDOWN_TIMEOUT_MS: '2000',
    },
  });
  receiver = await startReceiver('127.0.0.1');
  expect((await t.root.post('/api/webhooks', { url: `${receiver.url}/root`, event_types: ['job.failed', 'job.completed'] })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((w) => w.stop('SIGKILL')));
  await receiver?.close();
  await t?.close();
});

describe('a job failed for good outside its handler', () => {
  it('payload gone before it ran, or failed by a process that died before announcing it: one job.failed each; failed by its handler: one, by the handler only', async () => {
    // Before any worker runs: a process takes a job and fails it without announcing it, as one killed right after would.
    const orphan = (await t.root.post('/api/content/batch', [item({ source: 'orphan' })], { prefer: 'respond-async' })).body.jobId as string;
    const connection = new Redis(t.testEnv.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const taker = new Worker('content', null, { connection, prefix: t.platform.keys.queuePrefix('content'), autorun: false });
    try {
      const taken = await taker.getNextJob('orphan-token');
      expect(taken?.id).toBe(orphan);
      await taken!.moveToFailed(new UnrecoverableError('failed by a process that died before announcing it'), 'orphan-token');
    } finally {
      await taker.close();
      connection.disconnect();
    }
    // Before any worker runs: a batch whose payload travels through Postgres loses it.
    const big = Array.from({ length: 3 }, () => item({ source: 'gone', content: 'x'.repeat(600) }));
    const gone = (await t.root.post('/api/content/batch', big, { prefer: 'respond-async' })).body.jobId as string;
    expect((await t.platform.jobs.getJob(gone))!.data.payloadRef).toBe(gone);
    expect(await t.platform.db('job_payloads').where({ job_id: gone }).delete()).toBe(1);
    // And a batch of a user disabled before it runs: its handler fails it (403, not retried) and announces it.
    expect((await t.root.post('/api/user/', { username: 'dave', password: 'dave-password' })).status).toBeLessThan(300);
    const dave = new HttpClient(t.url);
    await dave.login('dave', 'dave-password');
    expect((await dave.post('/api/webhooks', { url: `${receiver.url}/dave`, event_types: ['job.failed'] })).status).toBe(201);
    const refused = (await dave.post('/api/content/batch', [item({ source: 'dave' })], { prefer: 'respond-async' })).body.jobId as string;
    await t.platform.db('users').where({ username: 'dave' }).update({ status: 2 });

    await Promise.all([startWorker(), startWorker()]);
    const before = await oneFailedEvent(gone, '/root');
    expect(before.event).toMatchObject({
      type: 'job.failed',
      data: { id: gone, kind: 'content.batch', state: 'failed', error: { status: 410, code: 'payload_missing' } },
    });
    expect(before.event.data.error).toEqual((await t.root.get(`/api/jobs/${gone}`)).body.error);
    // Announced by the sweep of one of the two worker processes (neither failed it).
    const swept = await oneFailedEvent(orphan, '/root');
    expect(swept.event).toMatchObject({ type: 'job.failed', data: { id: orphan, state: 'failed', error: { status: 500, code: 'job_failed' } } });
    expect(swept.event.data.error.message).toContain('failed by a process that died before announcing it');
    const handler = await oneFailedEvent(refused, '/dave');
    expect(handler.event).toMatchObject({ type: 'job.failed', data: { id: refused, state: 'failed', error: { status: 403, code: 'user_disabled' } } });

    await sleep(SWEEPS_MS);
    await expectOnce(gone, '/root');
    await expectOnce(orphan, '/root');
    expect(announcedOutside(orphan).length, 'one sweep of the two announced it').toBe(1);
    await expectOnce(refused, '/dave');
    expect(announcedOutside(gone).length, 'one process announced the job failed before its handler ran').toBe(1);
    expect(announcedOutside(refused).length, 'the handler announced its own failure, nobody else').toBe(0);
  }, 120_000);

  it('its workers SIGKILLed more often than maxStalledCount (BullMQ fails it): one job.failed, announced by one process', async () => {
    while (live.length < 2) await startWorker();
    // A batch whose insert waits on a held row stays active until its worker is killed.
    await t.root.post('/api/content', item({ source: 'stall' }));
    const holder = new pg.Client({ connectionString: t.testEnv.dbUrl });
    await holder.connect();
    await holder.query('begin');
    await holder.query('select * from content_stats where source = $1 for update', ['stall']);
    const queue = t.platform.jobs.queues.get('content')!;
    try {
      const jobId = (await t.root.post('/api/content/batch', [item({ source: 'stall' })], { prefer: 'respond-async' })).body.jobId as string;
      // maxStalledCount is 2: the third stall fails it, by the next worker that takes it.
      for (let kill = 1; kill <= 3; kill++) {
        const job = await until(
          `job ${jobId} active in a live worker (kill ${kill})`,
          async () => {
            const j = await queue.getJob(jobId);
            return j && (await j.getState()) === 'active' && live.some((w) => w.proc.pid === pidOf(j.processedBy)) ? j : undefined;
          },
          (j) => j !== undefined,
          60_000,
        );
        const victim = live.find((w) => w.proc.pid === pidOf(job!.processedBy))!;
        expect((await victim.stop('SIGKILL')).signal).toBe('SIGKILL');
        live = live.filter((w) => w !== victim);
        await startWorker();
      }
      const failed = await until(
        'the job to fail',
        async () => (await t.root.get(`/api/jobs/${jobId}`)).body,
        (b) => b.state === 'failed',
        60_000,
      );
      expect(failed.error.message).toContain('job stalled more than allowable limit');
      const { event } = await oneFailedEvent(jobId, '/root');
      expect(event).toMatchObject({ type: 'job.failed', data: { id: jobId, kind: 'content.batch', state: 'failed', error: failed.error } });

      await sleep(SWEEPS_MS);
      await expectOnce(jobId, '/root');
      expect(announcedOutside(jobId).length, 'one process of the two announced it').toBe(1);
      expect(live.length).toBe(2);
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
  }, 180_000);
});
