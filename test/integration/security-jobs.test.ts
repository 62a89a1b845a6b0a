// Issue 10, items 3 and 7: bounded embeddings work, large results by reference, no mail contents in Redis, no stranded payloads.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { float32ToString } from '../../src/embeddings/float32.js';
import { embedLocalHash } from '../../src/embeddings/local-hash.js';
import { float32ToBase64, MAX_FLOATS_PER_REQUEST } from '../../src/embeddings/schema.js';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { HttpClient } from '../helpers/http.js';
import { baseline, within } from '../helpers/pace.js';
import { freePort, PrivateRedis } from '../helpers/redis-server.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(v)?.slice(0, 300)}`);
    await sleep(50);
  }
}

/** Every field of every BullMQ key (job hashes, the events stream) of a queue, as one string. */
async function queueContents(t: TestApp, queue: string): Promise<string> {
  const r = t.platform.redis;
  const keys = await r.keys(`${t.config.QUEUE_PREFIX}:${queue}:*`);
  const parts: string[] = [];
  for (const key of keys) {
    const type = await r.type(key);
    if (type === 'hash') parts.push(JSON.stringify(await r.hgetall(key)));
    else if (type === 'stream') parts.push(JSON.stringify(await r.xrange(key, '-', '+')));
    else if (type === 'string') parts.push((await r.get(key)) ?? '');
  }
  return parts.join('\n');
}

const jobHash = (t: TestApp, queue: string, id: string) => t.platform.redis.hgetall(`${t.config.QUEUE_PREFIX}:${queue}:${id}`);
const payloadRow = (t: TestApp, id: string) => t.platform.db('job_payloads').where({ job_id: id }).first();

describe('one app: the embeddings bound, mail jobs, payload clean-up', () => {
  let t: TestApp;
  let dovecot: DovecotServer;
  let smtp: SmtpTestServer;
  let me: HttpClient;
  let meId: number;
  const stamp = Date.now();
  const address = (label: string) => `${label}-${stamp}@example.test`;
  // The SMTP server knows the sending accounts' passwords ('refused' is not among them).
  const senders = ['private', 'unreachable', 'removed'].map(address);

  async function account(label: string, smtpPort = smtp.port) {
    return addPasswordAccount(me, dovecot, address(label), { host: '127.0.0.1', port: smtpPort });
  }

  beforeAll(async () => {
    dovecot = await startDovecot();
    smtp = await startSmtp({ users: Object.fromEntries(senders.map((e) => [e, 'imap-password'])) });
    t = await startTestApp({ env: { LOCAL_MODEL_PRICE: '1', MAIL_TIMEOUT_MS: '5000', JOB_SWEEP_INTERVAL_MS: '1000' } });
    await t.root.post('/api/user/', { username: 'sec', password: 'sec-password' });
    me = new HttpClient(t.url);
    meId = (await me.login('sec', 'sec-password')).body.data.id;
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([dovecot?.stop(), smtp?.stop()]);
  });

  describe('embeddings: inputs × dimensions is bounded', () => {
    it('a local-model request over 2,097,152 floats is a 400 naming dimensions, with no quota reserved and no job enqueued', async () => {
      await t.root.put(`/api/user/${meId}`, { quota: 1_000_000 });
      const key = (await me.post('/api/token/', { name: 'bound', remain_quota: 500_000 })).body.data.key as string;
      const v1 = t.anon.withAuth(`Bearer ${key}`);
      const quota = async () => (await me.get('/api/user/self')).body.data.quota as number;
      const remain = async () => (await t.platform.db('tokens').where({ name: 'bound' }).first()).remain_quota as number;
      const queue = t.platform.jobs.queues.get('embeddings')!;
      const jobs = async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0);
      const [quotaBefore, remainBefore, jobsBefore] = [await quota(), await remain(), await jobs()];

      const input = Array.from({ length: 2048 }, (_, i) => `text ${i}`);
      const res = await v1.post('/v1/embeddings', { model: 'local-hash-v1', input, dimensions: 3072 });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param: 'dimensions', code: 'max_floats_per_request' });
      expect(res.body.error.message).toMatch(/2048 inputs × 3072 dimensions is 6291456 floats.*at most 1024 dimensions/);
      // One dimension past the bound is refused too (exactly the bound, 2048 × 1024, is served: see below).
      const over = await v1.post('/v1/embeddings', { model: 'local-hash-v1', input, dimensions: 1025 });
      expect(over.status).toBe(400);
      expect(over.body.error).toMatchObject({ param: 'dimensions', code: 'max_floats_per_request' });
      expect(2048 * 1024).toBe(MAX_FLOATS_PER_REQUEST);

      expect(await quota()).toBe(quotaBefore);
      expect(await remain()).toBe(remainBefore);
      expect(await jobs()).toBe(jobsBefore);
    });
  });

  describe("embeddings jobs keep the callers' texts out of sight in Redis", () => {
    it("an embeddings job's data in Redis holds its texts sealed (Bull Board shows admins every job): no input appears in the queue's keys", async () => {
      await t.root.put(`/api/user/${meId}`, { quota: 1_000_000 });
      const key = (await me.post('/api/token/', { name: 'sealed', unlimited_quota: true })).body.data.key as string;
      const secret = `PRIVATE-TEXT-${Date.now()}`;
      const res = await t.anon.withAuth(`Bearer ${key}`).post('/v1/embeddings', { model: 'local-hash-v1', input: [`${secret} one`, `${secret} two`] });
      expect(res.status, res.text).toBe(200);
      const jobs = (await t.platform.jobs.queues.get('embeddings')!.getJobs(['completed'], 0, -1)).filter((j) => j.name === 'embeddings.create');
      const mine = jobs.find((j) => typeof j.data.sealed === 'string' && t.platform.secrets.decrypt(j.data.sealed).includes(secret));
      expect(mine, 'the job is kept a while, its payload sealed').toBeDefined();
      expect(mine!.data.payload).toBeUndefined();
      expect(await queueContents(t, 'embeddings')).not.toContain(secret);
    });
  });

  describe('mail jobs keep message contents out of Redis', () => {
    it('fetch, code and send jobs: their Redis data, return values and events hold references; the caller, the status and the event stream still get the contents', async () => {
      const { email } = await account('private');
      const body = `BODY-SECRET-${Date.now()}`;
      await dovecot.deliver(
        email,
        'INBOX',
        buildMessage({ from: 'Service <no-reply@service.example>', to: email, subject: 'Your code', text: `${body}: your verification code is 739146.` }),
      );

      const all = await me.post('/api/mail-all', { email });
      expect(all.status, all.text).toBe(200);
      expect(all.body.messages[0].text).toContain(body);
      const code = await me.post('/api/vendor-email/extract-code', { email });
      expect(code.status, code.text).toBe(200);
      expect(code.body.code).toBe('739146');
      const sendText = `SEND-SECRET-${Date.now()}`;
      const sent = await me.post('/api/send-mail', { email, to: 'friend@example.test', subject: 'Private', text: sendText, html: `<p>${sendText}</p>` });
      expect(sent.status, sent.text).toBe(200);
      expect((await smtp.waitFor(1)).some((m) => m.raw.includes(sendText))).toBe(true);

      // Asynchronously: the status and the event stream read the stored result back.
      const queued = await me.post('/api/mail-all', { email }, { prefer: 'respond-async' });
      expect(queued.status).toBe(202);
      const jobId = queued.body.jobId as string;
      const status = await until(
        'the job to complete',
        async () => (await me.get(`/api/jobs/${jobId}`)).body,
        (s) => s.state === 'completed',
      );
      expect(status.result.messages[0].text).toContain(body);
      const events = await fetch(`${t.url}/api/jobs/${jobId}/events`, { headers: { cookie: [...me.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
      expect(await events.text()).toContain(body);

      const hash = await jobHash(t, 'mail', jobId);
      expect(JSON.parse(hash.returnvalue!)).toEqual({ resultRef: jobId });
      const sendJob = (await t.platform.jobs.queues.get('mail')!.getJobs(['completed'])).find((j) => j.name === 'mail.send')!;
      expect(sendJob.data).toMatchObject({ payloadRef: sendJob.id });
      expect(sendJob.data.payload).toBeUndefined();

      const redis = await queueContents(t, 'mail');
      expect(redis).toContain(jobId); // the scan did see the jobs
      expect(redis).not.toContain(body);
      expect(redis).not.toContain('739146');
      expect(redis).not.toContain(sendText);
    });
  });

  describe('stored payloads do not outlive their jobs', () => {
    it('a send that fails for good at once (authentication refused, not retried) keeps its payload while the failed job is kept (to be retried), and it goes with the job', async () => {
      const { email } = await account('refused');
      const res = await me.post('/api/send-mail', { email, to: 'friend@example.test', subject: 's', text: 'x'.repeat(1000) }, { prefer: 'respond-async' });
      const jobId = res.body.jobId as string;
      expect((await jobHash(t, 'mail', jobId)).data).toContain('payloadRef');
      const status = await until(
        'the job to fail',
        async () => (await me.get(`/api/jobs/${jobId}`)).body,
        (s) => s.state === 'failed',
      );
      expect(status.attempts).toBe(1);
      expect(status.error.code).toBe('mail_auth_failed');
      expect(await payloadRow(t, jobId)).toBeDefined();
      await (await t.platform.jobs.getJob(jobId))!.remove();
      await until(
        'the payload row to go with its job',
        () => payloadRow(t, jobId),
        (row) => row === undefined,
        30_000,
      );
    });

    it('a send whose last retry fails (server unreachable) keeps its payload between attempts and after the last (the failed job can be retried)', async () => {
      const closed = await freePort();
      const { id } = await account('unreachable', closed);
      const jobId = await t.platform.jobs.enqueue(
        'mail.send',
        { accountId: id, to: ['friend@example.test'], subject: 's', text: 'retried' },
        { owner: meId, options: { attempts: 3, backoff: { type: 'fixed', delay: 400 } } },
      );
      const job = async () => (await t.platform.jobs.getJob(jobId))!;
      await until(
        'a first failed attempt',
        async () => (await job()).attemptsMade,
        (a) => a >= 1,
      );
      expect(['delayed', 'waiting', 'active']).toContain(await (await job()).getState());
      expect(await payloadRow(t, jobId)).toBeDefined();
      await until(
        'the job to fail for good',
        async () => (await job()).getState(),
        (s) => s === 'failed',
      );
      expect((await job()).attemptsMade).toBe(3);
      expect(await payloadRow(t, jobId)).toBeDefined();
    });

    it('a job removed before it runs (as from Bull Board) takes its stored payload with it', async () => {
      const { id } = await account('removed');
      const jobId = await t.platform.jobs.enqueue(
        'mail.send',
        { accountId: id, to: ['friend@example.test'], subject: 's', text: 'never sent' },
        { owner: meId, options: { delay: 600_000 } },
      );
      expect(await payloadRow(t, jobId)).toBeDefined();
      await (await t.platform.jobs.getJob(jobId))!.remove();
      await until(
        'the payload row to go',
        () => payloadRow(t, jobId),
        (row) => row === undefined,
        30_000,
      );
    });

    it("the workers' sweep deletes payloads older than JOB_KEEP_FAILED_SECONDS and expired results, and keeps fresh ones", async () => {
      const db = t.platform.db;
      const ago = (seconds: number) => db.raw('now() - make_interval(secs => ?)', [seconds]);
      const old = Array.from({ length: 3 }, (_, i) => `mail-orphan-old-${i}`);
      await db('job_payloads').insert(old.map((job_id) => ({ job_id, data: '{}', created_at: ago(t.config.JOB_KEEP_FAILED_SECONDS + 3600) })));
      await db('job_payloads').insert({ job_id: 'mail-orphan-fresh', data: '{}', created_at: ago(3600) });
      await db('job_results').insert({ job_id: 'mail-result-expired', data: '{}', expires_at: ago(60) });
      await db('job_results').insert({ job_id: 'mail-result-live', data: '{}', expires_at: ago(-3600) });
      await until(
        'the sweep',
        async () => [
          ...(await db('job_payloads').whereIn('job_id', old).select('job_id')),
          ...(await db('job_results').where({ job_id: 'mail-result-expired' })),
        ],
        (rows) => rows.length === 0,
        30_000,
      );
      expect(await payloadRow(t, 'mail-orphan-fresh')).toBeDefined();
      expect(await db('job_results').where({ job_id: 'mail-result-live' }).first()).toBeDefined();
    });
  });
});

describe('large embeddings results travel by reference, not over the shared reply channel', () => {
  let t: TestApp;
  let redis: PrivateRedis;
  let watcher: Redis;
  const replies: { channel: string; message: string }[] = [];

  beforeAll(async () => {
    // A private Redis whose pub/sub output limit (1 MB) a near-bound result (~11 MB) would pass, as
    // a 2048 × 3072 one passed the default 32 MB: Redis then drops the API's reply subscriber.
    redis = new PrivateRedis(await freePort());
    await redis.start();
    const admin = new Redis(redis.url);
    await admin.config('SET', 'client-output-buffer-limit', 'pubsub 1mb 1mb 0');
    admin.disconnect();
    t = await startTestApp({ env: { REDIS_URL: redis.url, SYNC_WAIT_MS: '8000' } });
    watcher = new Redis(redis.url);
    watcher.on('pmessage', (_p: string, channel: string, message: string) => replies.push({ channel, message }));
    await watcher.psubscribe(`${t.config.QUEUE_PREFIX}:replies:*`);
  });
  afterAll(async () => {
    watcher?.disconnect();
    await t?.close();
    await redis?.stop();
  });

  it('a 2048 × 1024 result reaches its caller whole through Postgres (the reply and return value carry only its id), and small calls meanwhile answer at once', async () => {
    const key = (await t.root.post('/api/token/', { name: 'big', unlimited_quota: true })).body.data.key as string;
    const v1 = t.anon.withAuth(`Bearer ${key}`);
    const input = Array.from({ length: 2048 }, (_, i) => `document ${i} about topic ${i % 17}`);

    // A small call's time before the big one, this run (the bound below grows with the machine's load).
    const idle = await baseline(() => v1.post('/v1/embeddings', { model: 'local-hash-v1', input: 'a short one', dimensions: 8 }));
    let bigDone = false;
    const bigStarted = performance.now();
    let bigMs = 0;
    const big = v1.post('/v1/embeddings', { model: 'local-hash-v1', input, dimensions: 1024, encoding_format: 'base64' }).finally(() => {
      bigDone = true;
      bigMs = performance.now() - bigStarted;
    });
    const small: { status: number; ms: number }[] = [];
    while (!bigDone || small.length < 3) {
      const started = performance.now();
      const res = await v1.post('/v1/embeddings', { model: 'local-hash-v1', input: 'a short one', dimensions: 8 });
      small.push({ status: res.status, ms: performance.now() - started });
      expect(res.body.data?.[0].embedding).toEqual(Array.from(embedLocalHash('a short one', 8), (x) => Number(float32ToString(x))));
    }
    const res = await big;
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.data).toHaveLength(2048);
    res.body.data.forEach((d: { index: number; embedding: string }, i: number) => {
      expect(d.index).toBe(i);
      expect(d.embedding).toBe(float32ToBase64(embedLocalHash(input[i]!, 1024)));
    });
    expect(small.every((s) => s.status === 200)).toBe(true);
    // At once: none waited for the big call (a small call stuck behind it would take about as long as it did).
    expect(Math.max(...small.map((s) => s.ms))).toBeLessThan(Math.max(within(0, idle), bigMs / 2));

    // Every reply on the shared channel was small; the big job's was a reference.
    expect(Math.max(...replies.map((r) => r.message.length))).toBeLessThan(64 * 1024);
    const byRef = replies.map((r) => JSON.parse(r.message)).filter((r) => 'resultRef' in r);
    expect(byRef).toHaveLength(1);
    const jobId = byRef[0].id as string;
    expect(byRef[0]).toEqual({ id: jobId, resultRef: jobId });
    const stored = await t.platform.redis.hget(`${t.config.QUEUE_PREFIX}:embeddings:${jobId}`, 'returnvalue');
    expect(JSON.parse(stored!)).toEqual({ delivered: true, resultRef: jobId });
    // Read once by its one waiter, then deleted.
    expect(await t.platform.db('job_results').where({ job_id: jobId }).first()).toBeUndefined();
  });

  it('a 2048 × 1024 answer in floats is whole and exact (each vector as printing it in one go prints it)', async () => {
    const key = (await t.root.post('/api/token/', { name: 'big-floats', unlimited_quota: true })).body.data.key as string;
    const input = Array.from({ length: 2048 }, (_, i) => `float document ${i} about topic ${i % 13}`);
    const res = await t.anon.withAuth(`Bearer ${key}`).post('/v1/embeddings', { model: 'local-hash-v1', input, dimensions: 1024 });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.data).toHaveLength(2048);
    res.body.data.forEach((d: { index: number; embedding: number[] }, i: number) => {
      expect(d.index).toBe(i);
      expect(d.embedding).toHaveLength(1024);
      // Every vector printed exactly as one-go printing prints it (spot-checked in full every 61st, to keep the test fast).
      if (i % 61 === 0) expect(d.embedding).toEqual(Array.from(embedLocalHash(input[i]!, 1024), (x) => Number(float32ToString(x))));
    });
    expect(res.body.usage.prompt_tokens).toBeGreaterThan(0);
  });
});
