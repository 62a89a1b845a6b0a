// Issue 22, item 1: a worker runs only jobs the API made, for a principal who may do them; Bull Board cannot add or edit jobs.
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFailure, type JobEnvelope } from '../../src/jobs/wire.js';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { item } from '../shared/content-suite.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the trust model of jobs', () => {
  let t: TestApp;
  let dovecot: DovecotServer;
  let ops: HttpClient;
  let rootId: number;
  let opsId: number;
  let rootBox: { email: string; id: number };
  let rootItem: { id: string; url: string; title: string };
  const stamp = Date.now();

  const queue = (name: 'mail' | 'content') => t.platform.jobs.queues.get(name)!;
  /** A job's final state (completed or failed), waiting for it. */
  async function settled(name: 'mail' | 'content', id: string, ms = 20_000): Promise<Job<JobEnvelope>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const state = await queue(name).getJobState(id);
      // Loaded once it is final: a job loaded while active would not have its outcome yet.
      if (state === 'completed' || state === 'failed') return (await queue(name).getJob(id)) as Job<JobEnvelope>;
      if (Date.now() > deadline) throw new Error(`job ${id} still ${state}`);
      await sleep(50);
    }
  }
  const inbox = () => dovecot.count(rootBox.email, 'INBOX');
  const board = (method: string, path: string, body?: unknown) => ops.request(method, `/admin/queues/api/queues${path}`, body, { origin: t.url });

  beforeAll(async () => {
    dovecot = await startDovecot();
    t = await startTestApp();
    rootId = (await t.root.get('/api/user/self')).body.data.id;
    expect((await t.root.post('/api/user/', { username: 'ops', password: 'ops-password', role: 10 })).status).toBe(201);
    ops = new HttpClient(t.url);
    opsId = (await ops.login('ops', 'ops-password')).body.data.id;
    rootBox = await addPasswordAccount(t.root, dovecot, `root-${stamp}@example.test`);
    for (const subject of ['first', 'second'])
      await dovecot.deliver(rootBox.email, 'INBOX', buildMessage({ from: 'a@example.test', to: rootBox.email, subject, text: `message ${subject}` }));
    const created = await t.root.post('/api/content', item({ source: 'root-only', title: 'Root wrote this' }));
    expect(created.status, created.text).toBe(201);
    rootItem = created.body;
  });
  afterAll(async () => {
    await t?.close();
    await dovecot?.stop();
  });

  it("Bull Board refuses to add a job or replace a job's data (403), for an admin and for root, however the path is spelled", async () => {
    const before = await queue('mail').getJobCounts();
    const forged = { name: 'mail.purge', data: { owner: rootId, payload: { accountId: rootBox.id, mailbox: 'INBOX' } } };
    for (const path of ['/mail/add', '/mail/add/', '/mail/ADD', '/mail/%61dd', '/content/add']) {
      const res = await board('POST', path, forged);
      expect(res.status, path).toBe(403);
      expect(res.body.error, path).toMatch(/Bull Board may not add jobs, change a job's data/);
    }
    const asRoot = await t.root.request('POST', '/admin/queues/api/queues/mail/add', forged, { origin: t.url });
    expect(asRoot.status).toBe(403);

    const done = await t.root.post('/api/mail-all', { email: rootBox.email });
    expect(done.status, done.text).toBe(200);
    const listed = await t.root.get('/api/jobs?queue=mail&limit=1');
    const job = await queue('mail').getJob(listed.body.jobs[0].id);
    for (const path of [`/mail/${job!.id}/update-data`, `/mail/${job!.id}/UPDATE-DATA`]) {
      const res = await board('PATCH', path, { jobData: { ...job!.data, owner: opsId } });
      expect(res.status, path).toBe(403);
    }
    expect((await queue('mail').getJob(job!.id!))!.data.owner).toBe(rootId);
    expect(await queue('mail').getJobCounts()).toMatchObject({ ...before, completed: before.completed! + 1 });
    expect(await inbox()).toBe(2);
  });

  it("a job put on a queue outside the API (a forged owner) fails at once as not signed, not retried, and touches nobody's mail or content", async () => {
    // What the board's add route did before it was refused, and what anyone with Redis access can still do.
    const purge = await queue('mail').add('mail.purge', { owner: rootId, payload: { accountId: rootBox.id, mailbox: 'INBOX' } }, { attempts: 3 });
    const overwrite = await queue('content').add(
      'content.batch',
      { owner: rootId, payload: { items: [{ ...item({ source: 'root-only' }), url: rootItem.url, title: 'Overwritten by ops' }] } },
      { attempts: 3 },
    );
    // A forged job naming another job's stored payload: failing it must not delete that payload.
    await t.platform.db('job_payloads').insert({ job_id: 'mail-victim', data: '{"accountId":1}' });
    const stray = await queue('mail').add('mail.send', { owner: rootId, payloadRef: 'mail-victim' });
    for (const [q, job] of [
      ['mail', purge],
      ['content', overwrite],
      ['mail', stray],
    ] as const) {
      const done = await settled(q, job.id!);
      expect(await done.getState()).toBe('failed');
      expect(done.attemptsMade).toBe(1);
      expect(decodeFailure(done.failedReason).code).toBe('job_not_signed');
    }
    expect(await inbox()).toBe(2);
    expect((await t.root.get(`/api/content/${rootItem.id}`)).body.title).toBe('Root wrote this');
    await sleep(200);
    expect(await t.platform.db('job_payloads').where({ job_id: 'mail-victim' }).first()).toBeDefined();
  });

  it('a job whose data is edited after the API made it is refused by the worker, and nobody else can read it as theirs', async () => {
    // Held before the worker takes it: the queue is paused while its data is edited.
    await queue('mail').pause();
    let jobId: string;
    try {
      const accepted = await t.root.post('/api/process-inbox', { email: rootBox.email }, { prefer: 'respond-async' });
      expect(accepted.status, accepted.text).toBe(202);
      jobId = accepted.body.jobId;
      const job = (await queue('mail').getJob(jobId))!;
      await job.updateData({ ...job.data, owner: opsId });
    } finally {
      await queue('mail').resume();
    }
    const done = await settled('mail', jobId);
    expect(decodeFailure(done.failedReason).code).toBe('job_not_signed');
    expect(done.attemptsMade).toBe(1);
    expect(await inbox()).toBe(2);
    // It names ops as its owner now, but ops is not who the API made it for.
    expect((await ops.get(`/api/jobs/${done.id}`)).status).toBe(404);

    // The same for a finished job whose owner is edited afterwards: its result (root's mail) stays root's.
    const read = await t.root.post('/api/mail-all', { email: rootBox.email }, { prefer: 'respond-async' });
    const finished = await settled('mail', read.body.jobId);
    expect(await finished.getState()).toBe('completed');
    await finished.updateData({ ...finished.data, owner: opsId });
    expect((await ops.get(`/api/jobs/${finished.id}`)).status).toBe(404);
    expect((await t.root.get(`/api/jobs/${finished.id}`)).body.result.messages).toHaveLength(2);
  });

  it('a job the API signed, retried from Bull Board, runs again as the API made it', async () => {
    // extract-code on a mailbox with no code: the job fails (404 no_code, not retried by itself).
    const res = await t.root.post('/api/vendor-email/extract-code', { email: rootBox.email }, { prefer: 'respond-async' });
    const failed = await settled('mail', res.body.jobId);
    expect(decodeFailure(failed.failedReason).code).toBe('no_code');
    expect(failed.attemptsMade).toBe(1);
    const retry = await board('PUT', `/mail/${failed.id}/retry`);
    expect(retry.status, retry.text).toBe(204);
    const deadline = Date.now() + 20_000;
    let again = failed;
    while (again.attemptsMade < 2 && Date.now() < deadline) {
      await sleep(100);
      again = (await queue('mail').getJob(failed.id!))!;
    }
    again = await settled('mail', failed.id!);
    expect(again.attemptsMade).toBe(2);
    expect(decodeFailure(again.failedReason).code).toBe('no_code');
  });

  it("Bull Board does not run a completed job again (another purge of root's inbox), one by one or all at once", async () => {
    const purged = await t.root.post('/api/process-junk', { email: rootBox.email }, { prefer: 'respond-async' });
    const done = await settled('mail', purged.body.jobId);
    expect(await done.getState()).toBe('completed');
    for (const path of [`/mail/${done.id}/retry`, `/MAIL/${done.id}/Retry/`, '/mail/retry/completed', '/mail/retry/COMPLETED']) {
      const res = await board('PUT', path);
      expect(res.status, path).toBe(403);
    }
    await sleep(300);
    expect(await queue('mail').getJobState(done.id!)).toBe('completed');
    expect((await queue('mail').getJob(done.id!))!.attemptsMade).toBe(1);
    // The board shows no retry button for completed jobs.
    const queues = (await ops.get('/admin/queues/api/queues?activeQueue=mail&status=completed')).body.queues as {
      name: string;
      allowCompletedRetries: boolean;
    }[];
    expect(queues.find((q) => q.name === 'mail')!.allowCompletedRetries).toBe(false);
  });

  it('a job retried from Bull Board while it finishes is not run again: only a failed job is retried, in one step', async () => {
    // The board read the state, then retried "from" it: a job completing in between was retried as completed.
    for (let round = 0; round < 3; round++) {
      const res = await t.root.post('/api/process-junk', { email: rootBox.email }, { prefer: 'respond-async' });
      const id = res.body.jobId as string;
      const statuses: number[] = [];
      let finished = false;
      const hammer = async () => {
        while (!finished) statuses.push((await board('PUT', `/mail/${id}/retry`)).status);
      };
      const loops = Array.from({ length: 4 }, hammer);
      await settled('mail', id);
      await sleep(300);
      finished = true;
      await Promise.all(loops);
      const job = (await queue('mail').getJob(id))!;
      expect(await job.getState(), `round ${round}: ${statuses.join(',')}`).toBe('completed');
      expect(job.attemptsMade, `round ${round}: ${statuses.join(',')}`).toBe(1);
      expect(statuses).not.toContain(204);
    }
  });

  it('a signed job naming a mail account its owner may not use is refused by the worker (the role rule checked again)', async () => {
    // As if an API check had missed: the job is the API's own (enqueue signs it), but ops may not use root's account.
    const id = await t.platform.jobs.enqueue('mail.purge', { accountId: rootBox.id, mailbox: 'INBOX' }, { owner: opsId });
    const done = await settled('mail', id);
    expect(decodeFailure(done.failedReason).code).toBe('account_not_yours');
    expect(done.attemptsMade).toBe(1);
    expect(await inbox()).toBe(2);
    // Root may: the same job for root empties the inbox.
    const own = await settled('mail', await t.platform.jobs.enqueue('mail.purge', { accountId: rootBox.id, mailbox: 'INBOX' }, { owner: rootId }));
    expect(await own.getState()).toBe('completed');
    expect(await inbox()).toBe(0);
  });
});
