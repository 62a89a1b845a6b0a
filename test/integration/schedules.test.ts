// Schedules (issue 24): what the API refuses, who sees what, what a tick does for its owner and when it refuses, and
// the job schedulers kept in step with the rows. Real Postgres, Redis, Dovecot; workers in this process.
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { checkTiming } from '../../src/schedules/schema.js';
import { repairSchedulers, schedulerId, syncSchedulers, upsertScheduler } from '../../src/schedules/service.js';
import { insertSchedule } from '../../src/schedules/store.js';
import { runTick } from '../../src/schedules/tick.js';

let t: TestApp;
let dovecot: DovecotServer;
let alice: HttpClient;
let bob: HttpClient;
let aliceId: number;
let n = 0;
const address = (label: string) => `${label}-${process.pid}-${++n}@example.test`;

async function user(name: string): Promise<{ client: HttpClient; id: number }> {
  await t.root.post('/api/user/', { username: name, password: `${name}-password` });
  const client = new HttpClient(t.url);
  const id = (await client.login(name, `${name}-password`)).body.data.id as number;
  return { client, id };
}

const patch = (c: HttpClient, path: string, body: unknown) => c.request('PATCH', path, body);
const queue = () => t.platform.jobs.queues.get('schedules')!;

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const runsOf = async (c: HttpClient, id: number) =>
  (await c.get(`/api/schedules/${id}/runs`)).body as { tick_at: string; outcome: string; job_id: string | null; runs: number; message: string | null }[];

beforeAll(async () => {
  dovecot = await startDovecot();
  t = await startTestApp({ env: { SCHEDULE_MIN_INTERVAL_MS: '1000', SCHEDULES_PER_USER: '3', MAIL_TIMEOUT_MS: '5000' } });
  ({ client: alice, id: aliceId } = await user('alice'));
  ({ client: bob } = await user('bob'));
});
afterAll(async () => {
  await t?.close();
  await dovecot?.stop();
});

describe('what the API refuses', () => {
  it('an invalid cron expression, an unknown time zone, both timings or none: 400 naming the problem, nothing kept', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('cron'));
    const base = { name: 'x', kind: 'mail.purge', params: { email, mailbox: 'Junk' } };
    const bad = await alice.post('/api/schedules', { ...base, cron: '61 * * * *' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/cron: not a valid cron expression/);
    expect((await alice.post('/api/schedules', { ...base, cron: 'every hour' })).status).toBe(400);
    const zone = await alice.post('/api/schedules', { ...base, cron: '0 * * * *', tz: 'Mars/Olympus' });
    expect([zone.status, zone.body.error]).toEqual([400, expect.stringMatching(/unknown time zone/)]);
    expect((await alice.post('/api/schedules', { ...base, cron: '0 * * * *', interval_ms: 60_000 })).status).toBe(400);
    expect((await alice.post('/api/schedules', base)).status).toBe(400);
    expect((await alice.get('/api/schedules')).body).toEqual([]);
  });

  it('an interval under SCHEDULE_MIN_INTERVAL_MS, or a cron expression firing more often: 400', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('min'));
    const base = { name: 'x', kind: 'mail.purge', params: { email, mailbox: 'Junk' } };
    const short = await alice.post('/api/schedules', { ...base, interval_ms: 999 });
    expect([short.status, short.body.error]).toEqual([400, expect.stringMatching(/at least 1000 \(SCHEDULE_MIN_INTERVAL_MS\)/)]);
    // Every second, in cron-parser's seconds field (BullMQ's): at the minimum, taken; under a larger one, refused.
    const often = await alice.post('/api/schedules', { ...base, cron: '* * * * * *' });
    expect(often.status).toBe(201);
    await alice.delete(`/api/schedules/${often.body.id}`);
    expect(() => checkTiming({ cron: '* * * * * *' }, 60_000)).toThrow(/fires more often than every 60000 ms/);
    expect(checkTiming({ cron: '0 * * * *', tz: 'Asia/Shanghai' }, 60_000)).toEqual({ cron: '0 * * * *', tz: 'Asia/Shanghai' });
  });

  it('a kind that cannot be scheduled (mail.send: it would keep a message in a plain row), and an account not yours: refused', async () => {
    const send = await alice.post('/api/schedules', { name: 'x', kind: 'mail.send', params: {}, interval_ms: 60_000 });
    expect(send.status).toBe(400);
    const { email } = await addPasswordAccount(bob, dovecot, address('bobs'));
    const theirs = await alice.post('/api/schedules', { name: 'x', kind: 'mail.purge', params: { email, mailbox: 'INBOX' }, interval_ms: 60_000 });
    expect([theirs.status, theirs.body.error]).toEqual([404, expect.stringMatching(/Unknown mail account/)]);
  });

  it('past SCHEDULES_PER_USER: 429, and six creations at once make exactly three', async () => {
    const { client: carol } = await user('carol');
    const { email } = await addPasswordAccount(carol, dovecot, address('carol'));
    const body = { name: 'many', kind: 'mail.purge', params: { email, mailbox: 'Junk' }, interval_ms: 3_600_000 };
    const answers = await Promise.all(Array.from({ length: 6 }, () => carol.post('/api/schedules', body)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 429, 429, 429]);
    expect(answers.find((a) => a.status === 429)!.body.error).toMatch(/SCHEDULES_PER_USER/);
    expect((await carol.get('/api/schedules')).body).toHaveLength(3);
    // Twenty at once straight to the store, each its own transaction: counted and inserted under the user's row lock.
    const { id: erinId } = await user('erin');
    const row = { owner_id: erinId, name: 'race', kind: 'mail.purge', params: {}, cron: null, tz: null, interval_ms: 3_600_000, enabled: false };
    const made = await Promise.all(Array.from({ length: 20 }, () => insertSchedule(t.platform.db, row, 3)));
    expect(made.filter(Boolean)).toHaveLength(3);
    expect(await t.platform.db('schedules').where({ owner_id: erinId })).toHaveLength(3);
  });
});

describe('who sees what', () => {
  it('another user can neither see, change nor delete your schedule (404, as for none)', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('mine'));
    const mine = await alice.post('/api/schedules', { name: 'mine', kind: 'mail.purge', params: { email, mailbox: 'Junk' }, interval_ms: 3_600_000 });
    expect(mine.status).toBe(201);
    const id = mine.body.id as number;
    expect((await bob.get(`/api/schedules/${id}`)).status).toBe(404);
    expect((await bob.get(`/api/schedules/${id}/runs`)).status).toBe(404);
    expect((await patch(bob, `/api/schedules/${id}`, { enabled: false })).status).toBe(404);
    expect((await bob.delete(`/api/schedules/${id}`)).status).toBe(404);
    expect(((await bob.get('/api/schedules')).body as { id: number }[]).map((s) => s.id)).not.toContain(id);
    expect((await alice.get(`/api/schedules/${id}`)).body).toMatchObject({ id, enabled: true, name: 'mine' });
    await alice.delete(`/api/schedules/${id}`);
  });

  it('the housekeeping that started as a side effect is the system schedule logs.maintain: shown to admins, not users, paused not deleted', async () => {
    const sys = ((await t.root.get('/api/schedules')).body as { kind: string; system: boolean; id: number; next_runs: string[] }[]).find(
      (s) => s.kind === 'logs.maintain',
    );
    expect(sys).toMatchObject({ system: true, interval_ms: 3_600_000, enabled: true });
    expect(sys!.next_runs.length).toBeGreaterThan(0);
    expect(((await alice.get('/api/schedules')).body as { kind: string }[]).some((s) => s.kind === 'logs.maintain')).toBe(false);
    expect((await alice.get(`/api/schedules/${sys!.id}`)).status).toBe(404);
    expect((await t.root.delete(`/api/schedules/${sys!.id}`)).status).toBe(409);
    expect(await queue().getJobScheduler(schedulerId(sys!.id))).toBeTruthy();
  });
});

describe('ticks', () => {
  it('a tick enqueues the real job as its owner: in their GET /api/jobs, completed, under an id made from the tick', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('tick'));
    const created = await alice.post('/api/schedules', { name: 'purge junk', kind: 'mail.purge', params: { email, mailbox: 'Junk' }, interval_ms: 1_000 });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    expect(created.body.next_runs).toHaveLength(3);
    const run = await until('a queued run', async () => (await runsOf(alice, id)).find((r) => r.outcome === 'queued'));
    await patch(alice, `/api/schedules/${id}`, { enabled: false });
    expect(run.job_id).toMatch(new RegExp(`^mail-s${id}-\\d+$`));
    const job = await until('the job completed', async () => {
      const j = await alice.get(`/api/jobs/${run.job_id}`);
      return j.body.state === 'completed' && j.body;
    });
    expect(job).toMatchObject({ name: 'mail.purge', result: { email, mailbox: 'Junk', deleted: 0 } });
    expect(((await alice.get('/api/jobs?name=mail.purge')).body.jobs as { id: string }[]).map((j) => j.id)).toContain(run.job_id);
    expect((await bob.get(`/api/jobs/${run.job_id}`)).status).toBe(404);
    const shown = (await alice.get(`/api/schedules/${id}`)).body;
    expect(shown).toMatchObject({ enabled: false, last_outcome: 'queued', next_runs: [] });
    await alice.delete(`/api/schedules/${id}`);
  });

  it('a tick run twice (its worker died before BullMQ recorded it) enqueues one job, and its run row says it ran twice', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('twice'));
    const created = await alice.post('/api/schedules', { name: 'twice', kind: 'mail.purge', params: { email, mailbox: 'Junk' }, interval_ms: 3_600_000 });
    const id = created.body.id as number;
    // The same tick job, run twice: as the worker that picked it up again after a crash would.
    const tickAt = Date.now() + 3_600_000 * 100;
    const job = { id: `repeat:${schedulerId(id)}:${tickAt}`, timestamp: Date.now() } as unknown as Job;
    const first = await runTick(t.platform, id, aliceId, job as never);
    const second = await runTick(t.platform, id, aliceId, job as never);
    expect(first).toMatchObject({ outcome: 'queued', runs: 1 });
    expect(second).toMatchObject({ outcome: 'queued', runs: 2, jobId: first.jobId });
    const owners = await t.platform.db('job_owners').where({ job_id: first.jobId });
    expect(owners).toHaveLength(1);
    const mailJob = await t.platform.jobs.getJob(first.jobId!);
    expect(mailJob?.name).toBe('mail.purge');
    const row = (await runsOf(alice, id)).find((r) => r.tick_at === new Date(tickAt).toISOString());
    expect(row).toMatchObject({ runs: 2, outcome: 'queued', job_id: first.jobId });
    // Nothing skipped silently: a tick three intervals after the previous one says two did not run.
    const late = { id: `repeat:${schedulerId(id)}:${tickAt + 3 * 3_600_000}`, timestamp: Date.now() } as unknown as Job;
    expect(await runTick(t.platform, id, aliceId, late as never)).toMatchObject({ outcome: 'queued', runs: 1 });
    expect((await alice.get(`/api/schedules/${id}`)).body.last_message).toMatch(/^2 earlier tick\(s\) did not run/);
    await alice.delete(`/api/schedules/${id}`);
  });

  it('a paused schedule has no job scheduler and runs nothing; resumed, it runs again', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('paused'));
    const created = await alice.post('/api/schedules', {
      name: 'p',
      kind: 'mail.purge',
      params: { email, mailbox: 'Junk' },
      interval_ms: 1_000,
      enabled: false,
    });
    const id = created.body.id as number;
    expect(created.body).toMatchObject({ enabled: false, next_runs: [] });
    expect(await queue().getJobScheduler(schedulerId(id))).toBeUndefined();
    // Five of its intervals pass: no tick, no run.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(await runsOf(alice, id)).toEqual([]);
    expect(await t.platform.db('job_owners').where('job_id', 'like', `mail-s${id}-%`)).toEqual([]);
    const resumed = await patch(alice, `/api/schedules/${id}`, { enabled: true });
    expect(resumed.body).toMatchObject({ enabled: true, paused_reason: null });
    await until('a run after resuming', async () => (await runsOf(alice, id)).find((r) => r.outcome === 'queued'));
    await alice.delete(`/api/schedules/${id}`);
    expect(await queue().getJobScheduler(schedulerId(id))).toBeUndefined();
  });

  it('a schedule whose owner lost access (the account deleted; the user disabled) is skipped, no job made, and paused with the reason', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('lost'));
    const created = await alice.post('/api/schedules', {
      name: 'lost',
      kind: 'mail.purge',
      params: { email, mailbox: 'Junk' },
      interval_ms: 1_000,
      enabled: false,
    });
    const id = created.body.id as number;
    expect((await alice.delete(`/api/mail/accounts/${email}`)).status).toBe(200);
    // Resuming is checked as a request would be: the account is gone.
    expect((await patch(alice, `/api/schedules/${id}`, { enabled: true })).status).toBe(404);
    // The account goes while the schedule runs: re-add, resume, delete it again.
    await addPasswordAccount(alice, dovecot, email);
    expect((await patch(alice, `/api/schedules/${id}`, { enabled: true })).status).toBe(200);
    await alice.delete(`/api/mail/accounts/${email}`);
    const paused = await until('the schedule paused', async () => {
      const s = (await alice.get(`/api/schedules/${id}`)).body;
      return !s.enabled && s;
    });
    expect(paused.paused_reason).toMatch(/Unknown mail account/);
    expect(paused.last_outcome).toBe('skipped');
    const skipped = (await runsOf(alice, id)).filter((r) => r.outcome === 'skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.job_id).toBeNull();
    expect(await queue().getJobScheduler(schedulerId(id))).toBeUndefined();
    await alice.delete(`/api/schedules/${id}`);

    const { client: dave, id: daveId } = await user('dave');
    const { email: daves } = await addPasswordAccount(dave, dovecot, address('dave'));
    const d = await dave.post('/api/schedules', {
      name: 'd',
      kind: 'mail.purge',
      params: { email: daves, mailbox: 'Junk' },
      interval_ms: 1_000,
      enabled: false,
    });
    expect((await t.root.put(`/api/user/${daveId}`, { status: 2 })).status).toBe(200);
    // Resumed directly (as before the user was disabled), its next tick finds the owner disabled.
    await t.platform.db('schedules').where({ id: d.body.id }).update({ enabled: true });
    const row = await t.platform.db('schedules').where({ id: d.body.id }).first();
    await upsertScheduler(t.platform, row);
    const disabled = await until('paused for a disabled owner', async () => {
      const r = await t.platform.db('schedules').where({ id: d.body.id }).first();
      return !r.enabled && r;
    });
    expect(disabled.paused_reason).toBe("Its owner's account is disabled");
    expect(await t.platform.db('job_owners').where({ owner_id: daveId })).toEqual([]);
  });
});

describe('trust', () => {
  it('a scheduler whose template was edited outside the API (another owner, another schedule) is refused by the worker: no run, no job', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('forged'));
    const created = await alice.post('/api/schedules', {
      name: 'f',
      kind: 'mail.purge',
      params: { email, mailbox: 'Junk' },
      interval_ms: 3_600_000,
      enabled: false,
    });
    const id = created.body.id as number;
    // As Bull Board or a Redis client could: the scheduler re-made with bob's id as owner, the old signature kept.
    const signed = { owner: aliceId, payload: { scheduleId: id } };
    const { schedulerSignedId, signEnvelope } = await import('../../src/jobs/wire.js');
    signEnvelope(t.platform.secrets, schedulerSignedId(schedulerId(id)), 'schedules.tick', signed);
    await queue().upsertJobScheduler(schedulerId(id), { every: 1_000 }, { name: 'schedules.tick', data: { ...signed, owner: aliceId + 1 } });
    const failed = await until('the forged tick failed', async () => (await queue().getFailed()).find((j) => j.repeatJobKey === schedulerId(id)));
    expect(failed.failedReason).toMatch(/job_not_signed/);
    await queue().removeJobScheduler(schedulerId(id));
    expect(await runsOf(alice, id)).toEqual([]);
    await alice.delete(`/api/schedules/${id}`);
  });
});

describe('re-sync at start', () => {
  it('gives every enabled schedule its job scheduler and removes schedulers without one, keeping the next tick', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('sync'));
    const created = await alice.post('/api/schedules', { name: 's', kind: 'mail.purge', params: { email, mailbox: 'Junk' }, interval_ms: 3_600_000 });
    const id = created.body.id as number;
    const before = await queue().getJobScheduler(schedulerId(id));
    // Upserted again (another API process starting): the same next tick, one delayed job for it.
    await syncSchedulers(t.platform);
    const again = await queue().getJobScheduler(schedulerId(id));
    expect(again?.next).toBe(before?.next);
    const delayed = (await queue().getDelayed()).filter((j) => j.repeatJobKey === schedulerId(id));
    expect(delayed.map((j) => j.id)).toEqual([`repeat:${schedulerId(id)}:${before!.next}`]);
    // Lost (Redis flushed, a failover that lost it) and a stray one: put right.
    await queue().removeJobScheduler(schedulerId(id));
    await queue().upsertJobScheduler('schedule-999999', { every: 3_600_000 }, { name: 'schedules.tick', data: {} });
    const outcome = await syncSchedulers(t.platform);
    expect(outcome.removed).toBe(1);
    expect(await queue().getJobScheduler(schedulerId(id))).toBeTruthy();
    expect(await queue().getJobScheduler('schedule-999999')).toBeUndefined();
    await alice.delete(`/api/schedules/${id}`);
  });

  it('a schedule whose next tick was lost (a failover that lost the write) is found and scheduled again', async () => {
    const { email } = await addPasswordAccount(alice, dovecot, address('lost-tick'));
    const created = await alice.post('/api/schedules', { name: 'l', kind: 'mail.purge', params: { email, mailbox: 'Junk' }, interval_ms: 3_600_000 });
    const id = created.body.id as number;
    const key = schedulerId(id);
    await until('the first tick done', async () => (await runsOf(alice, id)).length > 0);
    expect(await repairSchedulers(t.platform)).toBe(0);
    const next = (await queue().getJobScheduler(key))!.next!;
    // The delayed job of the next tick gone, as a replica promoted without the last writes would have it.
    const redis = t.platform.redis;
    await redis.del(queue().toKey(`repeat:${key}:${next}`));
    await redis.zrem(queue().toKey('delayed'), `repeat:${key}:${next}`);
    expect(await queue().getJob(`repeat:${key}:${next}`)).toBeUndefined();
    expect(await repairSchedulers(t.platform)).toBe(1);
    const again = await queue().getJobScheduler(key);
    expect(await queue().getJob(`repeat:${key}:${again!.next}`)).toBeTruthy();
    await alice.delete(`/api/schedules/${id}`);
  });
});
