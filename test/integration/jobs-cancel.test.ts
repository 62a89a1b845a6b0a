// DELETE /api/jobs/{id} and POST /api/jobs/{id}/retry (issue 24, part 2), against real Postgres and Redis, with the
// worker in another process: a cancel from the API reaches it over Redis.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBatch } from '../../src/content/batch.js';
import { loadCaller } from '../../src/content/store.js';
import { CANCEL_REASON, JobCancelled } from '../../src/jobs/cancel.js';
import { startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { slowImap } from '../helpers/slow-imap.js';
import { type SmtpTestServer, startSmtp } from '../helpers/smtp.js';
import { spawnEntry, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';
import { item } from '../shared/content-suite.js';

let t: TestApp;
let worker: Spawned;
let bob: HttpClient;
let carol: HttpClient;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An IMAP server that greets and then never answers a command: a fetch against it stays active until cut. */
async function user(name: string): Promise<HttpClient> {
  await t.root.post('/api/user/', { username: name, password: `${name}-password` });
  const c = new HttpClient(t.url);
  await c.login(name, `${name}-password`);
  return c;
}

const jobOf = (c: HttpClient, id: string) => c.get(`/api/jobs/${id}`);

beforeAll(async () => {
  // The API in this process, no workers here: the one worker is another process.
  t = await startTestApp({ workers: false, env: { MAIL_TIMEOUT_MS: '120000', MAIL_USER_CONCURRENCY: '1', SYNC_WAIT_MS: '500' } });
  worker = spawnEntry('worker', [], { ...t.testEnv.env, MAIL_TIMEOUT_MS: '120000', MAIL_USER_CONCURRENCY: '1', LOG_LEVEL: 'info' });
  await worker.waitFor(/workers started/);
  bob = await user('bob');
  carol = await user('carol');
}, 120_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await t?.close();
});

describe('DELETE /api/jobs/{id}', () => {
  it('cancels a mail fetch running in the worker process (waiting on a slow IMAP server) and a waiting one (removed); both read cancelled, in the list too', async () => {
    const imap = await slowImap();
    // A fetch left running (a failed assertion below) would hold bob's one mail slot for the tests after this one.
    let left: string | undefined;
    try {
      const email = 'slow@example.test';
      const add = await bob.post('/api/mail/accounts', {
        email,
        auth: { type: 'password', password: 'x' },
        imap: { host: '127.0.0.1', port: imap.port, secure: false },
      });
      expect(add.status, add.text).toBe(201);
      const first = (await bob.post('/api/mail-new', { email }, { prefer: 'respond-async' })).body.jobId as string;
      left = first;
      await until(
        'the fetch to be active and connected',
        async () => ((await jobOf(bob, first)).body.state === 'active' ? imap.sockets.length : 0),
        (n) => n > 0,
      );
      // Bob's second fetch waits for his one mail slot (MAIL_USER_CONCURRENCY=1).
      const second = (await bob.post('/api/mail-new', { email }, { prefer: 'respond-async' })).body.jobId as string;
      await until(
        'the second job to wait',
        async () => (await jobOf(bob, second)).body.state,
        (s) => s === 'waiting' || s === 'delayed',
      );

      // Another user cannot see, so cannot cancel, bob's jobs.
      expect((await carol.delete(`/api/jobs/${second}`)).status).toBe(404);

      const waiting = await bob.delete(`/api/jobs/${second}`);
      // Waiting for its slot, the job looks in now and then and goes back to wait: caught in that moment (more
      // likely on a loaded machine) it is cancelled as a running one (202), else removed at once (200).
      expect([200, 202], waiting.text).toContain(waiting.status);
      if (waiting.status === 200) {
        expect(waiting.body).toMatchObject({ id: second, state: 'cancelled', error: { code: 'job_cancelled' } });
        expect(await t.platform.jobs.getJob(second)).toBeUndefined();
      }
      await until(
        'the waiting job to read cancelled',
        async () => (await jobOf(bob, second)).body.state,
        (s) => s === 'cancelled',
      );

      const running = await bob.delete(`/api/jobs/${first}`);
      expect([200, 202], running.text).toContain(running.status);
      const done = await until(
        'the fetch to stop',
        async () => (await jobOf(bob, first)).body,
        (b) => b.state !== 'active',
      );
      expect(done).toMatchObject({ state: 'cancelled', error: { code: 'job_cancelled' }, result: null });
      expect(worker.output()).toMatch(/job cancelled through the API/);

      const listed = (await bob.get('/api/jobs?state=cancelled')).body.jobs.map((j: { id: string }) => j.id);
      expect(listed).toEqual(expect.arrayContaining([first, second]));
      // Over: a second cancel is a 409, for both.
      expect((await bob.delete(`/api/jobs/${first}`)).status).toBe(409);
      expect((await bob.delete(`/api/jobs/${second}`)).status).toBe(409);
      left = undefined;
    } finally {
      if (left) await bob.delete(`/api/jobs/${left}`).catch(() => undefined);
      imap.close();
    }
  }, 90_000);

  it('a finished job answers 409 and stays completed', async () => {
    const { jobId } = (await bob.post('/api/content/batch', [item()], { prefer: 'respond-async' })).body;
    await until(
      'the batch to complete',
      async () => (await jobOf(bob, jobId)).body.state,
      (s) => s === 'completed',
    );
    const res = await bob.delete(`/api/jobs/${jobId}`);
    expect(res.status).toBe(409);
    expect(res.body.error ?? res.body.message).toMatch(/already ended \(completed\)/);
    expect((await jobOf(bob, jobId)).body.state).toBe('completed');
  });
});

describe('a cancelled content batch', () => {
  it('hears the cancel at its safe point before the upsert and writes none of its rows', async () => {
    const bobId = (await bob.get('/api/user/self')).body.data.id as number;
    const items = [item(), item()];
    const cancelled = new AbortController();
    cancelled.abort(CANCEL_REASON);
    const run = runBatch(t.platform.db, items, await loadCaller(t.platform.db, bobId), undefined, cancelled.signal);
    await expect(run).rejects.toBeInstanceOf(JobCancelled);
    expect(
      await t.platform
        .db('content_items')
        .whereIn(
          'url',
          items.map((i) => i.url as string),
        )
        .count<{ n: number }[]>({ n: '*' }),
    ).toEqual([{ n: 0 }]);
    // Not cancelled (a worker closing aborts with another reason): the same batch writes both.
    const closing = new AbortController();
    closing.abort();
    const done = await runBatch(t.platform.db, items, await loadCaller(t.platform.db, bobId), undefined, closing.signal);
    expect(done.success).toBe(2);
  });
});

describe('POST /api/jobs/{id}/retry', () => {
  it('runs a failed job of yours again (same id, attempts from zero) with an audit row; not others (404; root who sees it: 403), not a finished one', async () => {
    // Nothing listens on this port: the fetch fails (after its retry) for good.
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const email = 'closed@example.test';
    expect(
      (await bob.post('/api/mail/accounts', { email, auth: { type: 'password', password: 'x' }, imap: { host: '127.0.0.1', port: closed, secure: false } }))
        .status,
    ).toBe(201);
    const jobId = (await bob.post('/api/mail-new', { email }, { prefer: 'respond-async' })).body.jobId as string;
    const failed = await until(
      'the fetch to fail',
      async () => (await jobOf(bob, jobId)).body,
      (b) => b.state === 'failed',
      60_000,
    );
    expect(failed.attempts).toBeGreaterThan(0);
    const firstProcessed = failed.processedAt;

    expect((await carol.post(`/api/jobs/${jobId}/retry`)).status).toBe(404);
    // Root sees it, but only its submitter may run it again.
    expect((await t.root.post(`/api/jobs/${jobId}/retry`)).status).toBe(403);
    const res = await bob.post(`/api/jobs/${jobId}/retry`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: jobId, attempts: 0 });
    expect(['waiting', 'active', 'delayed', 'failed']).toContain(res.body.state);
    // It ran again (and failed again, the server still being away).
    const again = await until(
      'the retry to run',
      async () => (await jobOf(bob, jobId)).body,
      (b) => b.state === 'failed' && b.processedAt !== firstProcessed,
      60_000,
    );
    expect(again.attempts).toBeGreaterThan(0);
    const logs = (await bob.get('/api/log/self?type=3')).body;
    expect(JSON.stringify(logs)).toContain(`Retried job ${jobId}`);

    const { jobId: ok } = (await bob.post('/api/content/batch', [item()], { prefer: 'respond-async' })).body;
    await until(
      'the batch to complete',
      async () => (await jobOf(bob, ok)).body.state,
      (s) => s === 'completed',
    );
    expect((await bob.post(`/api/jobs/${ok}/retry`)).status).toBe(409);
  }, 120_000);
});

describe('a cancelled embeddings call', () => {
  let e: TestApp;
  afterAll(async () => {
    await e?.close();
  });

  it("gives its reserved quota back: the waiting job is removed, the call answers the cancel at once, and the user's quota is as before", async () => {
    // No worker at all: the call's job waits in the queue, its quota reserved.
    e = await startTestApp({ workers: false, env: { LOCAL_MODEL_PRICE: '1000', SYNC_WAIT_MS: '60000' } });
    await e.root.post('/api/user/', { username: 'dave', password: 'dave-password' });
    const dave = new HttpClient(e.url);
    await dave.login('dave', 'dave-password');
    const daveId = (await dave.get('/api/user/self')).body.data.id;
    expect((await e.root.put(`/api/user/${daveId}`, { quota: 1_000_000 })).status).toBe(200);
    const sk = new HttpClient(e.url).withAuth(`Bearer ${(await dave.post('/api/token/', { name: 'cancel', unlimited_quota: true })).body.data.key}`);
    const quota = async () => (await dave.get('/api/user/self')).body.data.quota as number;
    const before = await quota();

    const call = sk.post('/v1/embeddings', { model: 'local-hash-v1', input: ['some words to embed '.repeat(200)], dimensions: 8 });
    const queue = e.platform.jobs.queues.get('embeddings')!;
    const [job] = await until(
      'the call to wait in the queue',
      () => queue.getJobs(['waiting', 'prioritized']),
      (jobs) => jobs.length === 1,
    );
    expect(await quota(), 'the call reserved its quota').toBeLessThan(before);
    // Gathered calls belong to no one: only root sees, and so cancels, the job.
    expect((await dave.delete(`/api/jobs/${job!.id}`)).status).toBe(404);
    const res = await e.root.delete(`/api/jobs/${job!.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.state).toBe('cancelled');

    const answer = await call;
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('job_cancelled');
    expect(await quota()).toBe(before);
  });
});

describe('a cancelled mail send', () => {
  let m: TestApp;
  let smtp: SmtpTestServer;
  afterAll(async () => {
    await m?.close();
    await smtp?.stop();
  });

  it('stops before its SMTP send: cancelled while it waits for the mailbox, it sends nothing', async () => {
    smtp = await startSmtp({ users: { 'sender@example.test': 'x' } });
    m = await startTestApp({ env: { MAIL_TIMEOUT_MS: '120000', MAIL_USER_CONCURRENCY: '2', SYNC_WAIT_MS: '300' } });
    const imap = await slowImap();
    try {
      await m.root.post('/api/user/', { username: 'erin', password: 'erin-password' });
      const erin = new HttpClient(m.url);
      await erin.login('erin', 'erin-password');
      const email = 'sender@example.test';
      const add = await erin.post('/api/mail/accounts', {
        email,
        auth: { type: 'password', password: 'x' },
        imap: { host: '127.0.0.1', port: imap.port, secure: false },
        smtp: { host: smtp.host, port: smtp.port, secure: false },
      });
      expect(add.status, add.text).toBe(201);
      // A fetch holds the account's mailbox (its server never answers); the send waits for it, running.
      const fetch = (await erin.post('/api/mail-new', { email }, { prefer: 'respond-async' })).body.jobId as string;
      await until(
        'the fetch to hold the mailbox',
        async () => ((await erin.get(`/api/jobs/${fetch}`)).body.state === 'active' ? imap.sockets.length : 0),
        (n) => n > 0,
      );
      const send = (await erin.post('/api/send-mail', { email, to: 'friend@example.test', subject: 's', text: 'never sent' }, { prefer: 'respond-async' })).body
        .jobId as string;
      await until(
        'the send to run',
        async () => (await erin.get(`/api/jobs/${send}`)).body.state,
        (s) => s === 'active',
      );

      expect((await erin.delete(`/api/jobs/${send}`)).status).toBe(202);
      expect((await erin.delete(`/api/jobs/${fetch}`)).status).toBe(200);
      // The mailbox is free: the send takes it, finds itself cancelled before the send, and stops.
      const done = await until(
        'the send to stop',
        async () => (await erin.get(`/api/jobs/${send}`)).body,
        (b) => b.state !== 'active',
      );
      expect(done.state).toBe('cancelled');
      expect(smtp.received).toHaveLength(0);
    } finally {
      imap.close();
    }
  }, 90_000);
});

describe('a cancelled code wait', () => {
  let c: TestApp;
  let dovecot: DovecotServer;
  afterAll(async () => {
    await c?.close();
    await dovecot?.stop();
  });

  it('stops while it watches an empty inbox on a real IMAP server, and reads cancelled', async () => {
    [dovecot, c] = await Promise.all([startDovecot(), startTestApp({ env: { SYNC_WAIT_MS: '300' } })]);
    await c.root.post('/api/user/', { username: 'finn', password: 'finn-password' });
    const finn = new HttpClient(c.url);
    await finn.login('finn', 'finn-password');
    const { email } = await addPasswordAccount(finn, dovecot, 'finn@example.test');
    const res = await finn.post('/api/vendor-email/extract-code', { email, wait: 120 }, { prefer: 'respond-async' });
    expect(res.status, res.text).toBe(202);
    const id = res.body.jobId as string;
    await until(
      'the code wait to run',
      async () => (await finn.get(`/api/jobs/${id}`)).body.state,
      (s) => s === 'active',
    );
    await sleep(2_500);
    const cancel = await finn.delete(`/api/jobs/${id}`);
    expect([200, 202]).toContain(cancel.status);
    const done = await until(
      'the wait to stop',
      async () => (await finn.get(`/api/jobs/${id}`)).body,
      (b) => b.state !== 'active',
      20_000,
    );
    expect(done).toMatchObject({ state: 'cancelled', error: { code: 'job_cancelled' } });
  }, 90_000);
});
