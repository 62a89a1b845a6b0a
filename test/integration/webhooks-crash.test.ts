// A worker SIGKILLed while it delivers webhooks (and runs the jobs they announce) neither loses nor doubles a
// delivery: another worker takes over, every job's end reaches the receiver under one webhook-id, and each event is
// logged delivered exactly once. (A request the receiver answered just before the kill may come again, with the same
// webhook-id: at least once, as the spec says.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { spawnEntry, type Spawned } from '../helpers/spawn.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { item } from '../shared/content-suite.js';

const JOBS = 24;
let t: TestApp;
let receiver: Receiver;
const workers: Spawned[] = [];

async function startWorker(): Promise<Spawned> {
  const w = spawnEntry('worker', [], { ...t.testEnv.env, LOG_LEVEL: 'info' });
  workers.push(w);
  await w.waitFor(/workers started/);
  return w;
}

beforeAll(async () => {
  t = await startTestApp({
    workers: false,
    env: { JOB_LOCK_MS: '2000', JOB_STALLED_INTERVAL_MS: '1000', WEBHOOK_BACKOFF_MS: '100', WEBHOOK_BACKOFF_MAX_MS: '500', SHUTDOWN_TIMEOUT_MS: '3000' },
  });
  // Each answer takes 300 ms: a worker killed now has deliveries in flight.
  receiver = await startReceiver('127.0.0.1', { delayMs: 300 });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await receiver?.close();
  await t?.close();
});

describe('a worker killed (SIGKILL) in the middle of webhook deliveries', () => {
  it('loses none and doubles none: one webhook-id per job, every one received, each logged delivered once', async () => {
    const victim = await startWorker();
    const created = await t.root.post('/api/webhooks', { url: `${receiver.url}/crash` });
    expect(created.status).toBe(201);
    const endpointId = created.body.id as number;
    const jobIds: string[] = [];
    for (let i = 0; i < JOBS; i++) jobIds.push((await t.root.post('/api/content/batch', [item()], { prefer: 'respond-async' })).body.jobId);
    for (let i = 0; i < 400 && receiver.requests.length < 3; i++) await new Promise((r) => setTimeout(r, 25));
    expect(receiver.requests.length, 'deliveries under way before the kill').toBeGreaterThan(0);
    expect((await victim.stop('SIGKILL')).signal).toBe('SIGKILL');
    const before = receiver.requests.length;
    await startWorker();

    const jobOf = (body: string) => JSON.parse(body).data.id as string;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const got = new Set(receiver.requests.map((r) => jobOf(r.body)));
      if (jobIds.every((id) => got.has(id))) break;
      if (Date.now() > deadline) throw new Error(`received ${got.size} of ${JOBS} jobs' events`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(before, 'the kill came before every delivery was made').toBeLessThan(JOBS);
    // Give a doubled delivery (a second event for a job, a retry of a delivered one) time to show.
    await new Promise((r) => setTimeout(r, 1_500));

    const idsByJob = new Map<string, Set<string>>();
    for (const r of receiver.requests) {
      const set = idsByJob.get(jobOf(r.body)) ?? new Set();
      set.add(r.headers['webhook-id']!);
      idsByJob.set(jobOf(r.body), set);
    }
    expect([...idsByJob.keys()].sort()).toEqual([...jobIds].sort());
    for (const [job, ids] of idsByJob) expect(ids.size, `${job} under one webhook-id`).toBe(1);
    const rows: { event_id: string; ok: boolean }[] = await t.platform.db('webhook_deliveries').where({ endpoint_id: endpointId });
    const ok = rows.filter((r) => r.ok).map((r) => r.event_id);
    expect(ok.length, 'each event logged delivered once').toBe(JOBS);
    expect(new Set(ok).size).toBe(JOBS);
    // Only what was in flight at the kill may have come twice (at most the endpoint's concurrency).
    expect(receiver.requests.length - JOBS).toBeLessThanOrEqual(t.config.WEBHOOK_ENDPOINT_CONCURRENCY);
  }, 120_000);
});
