// The jobs platform in one process: sync and async answers, status, SSE, ownership, retries, Bull Board.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueNames } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import { contentBatch } from '../../src/content/jobs.js';
import { jobKinds } from '../../src/job-kinds.js';
import { redisKeys } from '../../src/redis.js';
import { startWorkers } from '../../workers/index.js';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { item } from '../shared/content-suite.js';

/** Polls a job's status until it is completed or failed (or 20 s pass). */
async function settled(c: HttpClient, statusUrl: string) {
  let status;
  for (let i = 0; i < 400; i++) {
    status = (await c.get(statusUrl)).body;
    if (status.state === 'completed' || status.state === 'failed') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return status;
}

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** Reads a server-sent event stream until it ends; returns the events. */
async function readEvents(url: string, headers: Record<string, string>, onOpen?: () => void): Promise<{ event: string; data: any }[]> {
  const res = await fetch(url, { headers });
  expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
  onOpen?.();
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event:'))
    .map((block) => {
      const [ev, data] = block.split('\n');
      return { event: ev!.slice(7), data: JSON.parse(data!.slice(6)) };
    });
}

describe('job-backed answers', () => {
  let t: TestApp;
  let bob: HttpClient;
  beforeAll(async () => {
    t = await startTestApp({ env: { JOB_INLINE_PAYLOAD_BYTES: '4000' } });
    await t.root.post('/api/user/', { username: 'bob', password: 'bob-password' });
    bob = new HttpClient(t.url);
    await bob.login('bob', 'bob-password');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers synchronously by default', async () => {
    const res = await bob.post('/api/content/batch', [item()]);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(1);
  });

  it('Prefer: respond-async gives 202 with jobId, state, statusUrl and Location; the status has every field', async () => {
    const res = await bob.post('/api/content/batch', [item(), item()], { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ jobId: expect.stringMatching(/^content-/), state: 'waiting', statusUrl: `/api/jobs/${res.body.jobId}` });
    expect(res.headers.get('location')).toBe(res.body.statusUrl);
    const status = await settled(bob, res.body.statusUrl);
    expect(status).toMatchObject({ id: res.body.jobId, queue: 'content', name: 'content.batch', state: 'completed', progress: 100, error: null, attempts: 1 });
    expect(status.result).toMatchObject({ success: 2, failed: 0, total: 2 });
    for (const k of ['createdAt', 'processedAt', 'finishedAt']) expect(Date.parse(status[k])).not.toBeNaN();
  });

  it('only the submitter or an admin sees a job; others get 404', async () => {
    const { jobId } = (await bob.post('/api/content/batch', [item()], { prefer: 'respond-async' })).body;
    await t.root.post('/api/user/', { username: 'eve', password: 'eve-password' });
    const eve = new HttpClient(t.url);
    await eve.login('eve', 'eve-password');
    expect((await eve.get(`/api/jobs/${jobId}`)).status).toBe(404);
    expect((await eve.get(`/api/jobs/${jobId}/events`)).status).toBe(404);
    expect((await t.anon.get(`/api/jobs/${jobId}`)).status).toBe(401);
    expect((await t.root.get(`/api/jobs/${jobId}`)).status).toBe(200);
    expect((await bob.get(`/api/jobs/${jobId}`)).status).toBe(200);
    for (const id of ['content-nope', 'nonsense', 'mail-01900000-0000-7000-8000-000000000000', '../../etc']) {
      expect((await bob.get(`/api/jobs/${encodeURIComponent(id)}`)).status).toBe(404);
    }
  });

  it("an admin sees the jobs of users below their role, not root's or another admin's (404); root sees every job", async () => {
    const admin = async (name: string) => {
      expect((await t.root.post('/api/user/', { username: name, password: `${name}-password`, role: 10 })).status).toBe(201);
      const c = new HttpClient(t.url);
      await c.login(name, `${name}-password`);
      return c;
    };
    const carol = await admin('carol-jobs');
    const dan = await admin('dan-jobs');
    const submit = async (c: HttpClient) => (await c.post('/api/content/batch', [item()], { prefer: 'respond-async' })).body.jobId as string;
    const bobs = await submit(bob);
    const roots = await submit(t.root);
    const dans = await submit(dan);
    expect((await carol.get(`/api/jobs/${bobs}`)).status).toBe(200);
    for (const id of [roots, dans]) {
      expect((await carol.get(`/api/jobs/${id}`)).status).toBe(404);
      expect((await carol.get(`/api/jobs/${id}/events`)).status).toBe(404);
    }
    for (const id of [bobs, dans]) expect((await t.root.get(`/api/jobs/${id}`)).status).toBe(200);
  });

  it('keeps large payloads out of Redis: the queue carries an id, Postgres the data, removed when done', async () => {
    const big = Array.from({ length: 20 }, () => item({ content: 'x'.repeat(500) }));
    const { jobId } = (await bob.post('/api/content/batch', big, { prefer: 'respond-async' })).body;
    const job = await t.platform.jobs.getJob(jobId);
    expect(job!.data.payload).toBeUndefined();
    expect(job!.data.payloadRef).toBe(jobId);
    for (let i = 0; i < 50 && (await t.platform.jobs.view((await t.platform.jobs.getJob(jobId))!)).state !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await bob.get(`/api/jobs/${jobId}`)).body.result.success).toBe(20);
    // Removed once BullMQ has recorded the completion (the worker's 'completed' event), not before.
    for (let i = 0; i < 50 && (await t.platform.db('job_payloads').where({ job_id: jobId }).first()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await t.platform.db('job_payloads').where({ job_id: jobId }).first()).toBeUndefined();
  });

  it('ping runs a no-op through each queue for admins and says which worker ran it', async () => {
    for (const queue of ['content', 'embeddings', 'mail']) {
      const res = await t.root.post(`/api/jobs/ping?queue=${queue}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ queue, worker: expect.stringMatching(/:\d+$/), roundTripMs: expect.any(Number) });
    }
    expect((await bob.post('/api/jobs/ping')).status).toBe(403);
    expect((await t.root.post('/api/jobs/ping?queue=nope')).status).toBe(400);
  });
});

describe('waiting, progress and server-sent events', () => {
  let t: TestApp;
  beforeAll(async () => {
    // No workers at first: jobs wait until the test starts them.
    t = await startTestApp({ workers: false, env: { SYNC_WAIT_MS: '300' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('ping says so when no worker consumes the queue', async () => {
    const res = await t.root.post('/api/jobs/ping?queue=mail');
    expect(res.status).toBe(504);
    expect(res.body.error).toMatch(/No mail worker answered/);
  });

  it('a wait past SYNC_WAIT_MS answers 202; the events stream shows state, progress and the result', async () => {
    const started = Date.now();
    const res = await t.root.post('/api/content/batch', [item(), item(), item()]);
    expect(res.status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(res.body.state).toBe('waiting');
    const url = `${t.url}${res.body.statusUrl}/events`;
    let workers: Awaited<ReturnType<typeof startWorkers>> | undefined;
    const events = await readEvents(url, { cookie: [...t.root.cookies].map(([k, v]) => `${k}=${v}`).join('; ') }, () => {
      void startWorkers(t.platform, ['content']).then((w) => (workers = w));
    });
    expect(events[0]).toMatchObject({ event: 'state', data: { state: 'waiting', id: res.body.jobId } });
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.progress);
    expect(progress).toEqual([50, 100]);
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { result: { success: 3, failed: 0, total: 3 } } });
    // A finished job's stream says so at once and ends.
    const again = await readEvents(url, { cookie: [...t.root.cookies].map(([k, v]) => `${k}=${v}`).join('; ') });
    expect(again.map((e) => e.event)).toEqual(['state', 'completed']);
    await workers?.close(1_000);
  });
});

describe('failures and retries', () => {
  let t: TestApp;
  const BACKOFF_MS = 200;
  let calls = 0;
  /** When each attempt started (Date.now() in the processor). */
  let startedAt: number[] = [];
  const flaky: typeof contentBatch = {
    ...contentBatch,
    run: async ({ items }) => {
      calls++;
      startedAt.push(Date.now());
      const mode = (items[0] as { mode?: string }).mode;
      if (mode === 'invalid') throw new AppError(422, 'This batch cannot be processed', { code: 'unprocessable' });
      if (mode === 'flaky' && calls < 4) throw new Error('connection reset by peer');
      return { success: 1, failed: 0, total: 1, errors: [], created: [] };
    },
  };
  beforeAll(async () => {
    t = await startTestApp({ jobs: { ...jobKinds, 'content.batch': flaky }, env: { JOB_BACKOFF_MS: String(BACKOFF_MS), JOB_ATTEMPTS: '5' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a permanent failure is not retried and answers with its own status', async () => {
    calls = 0;
    const res = await t.root.post('/api/content/batch', [{ mode: 'invalid' }]);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'This batch cannot be processed' });
    expect(calls).toBe(1);
  });

  it('a transient failure is retried until it succeeds, with exponential backoff: retry n waits ½ to 1 × JOB_BACKOFF_MS × 2^(n-1)', async () => {
    calls = 0;
    startedAt = [];
    const res = await t.root.post('/api/content/batch', [{ mode: 'flaky' }], { prefer: 'respond-async' });
    const status = await settled(t.root, res.body.statusUrl);
    expect(status, JSON.stringify(status)).toMatchObject({ state: 'completed' });
    expect(status.attempts).toBe(4);
    expect(calls).toBe(4);
    // Retry n waits a random delay in [½, 1] × JOB_BACKOFF_MS × 2^(n-1) (exponential, jitter 0.5) after attempt n failed.
    // Load can only lengthen the gaps, so the lower bounds hold on a busy machine; a fixed or missing backoff breaks
    // the second and third (≥ 200 ms, ≥ 400 ms where a fixed 200 ms backoff gives at most ~200 ms).
    const gaps = startedAt.slice(1).map((at, i) => at - startedAt[i]!);
    const floors = [0.5, 1, 2].map((f) => f * BACKOFF_MS - 5);
    gaps.forEach((gap, i) => expect(gap, `gaps ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(floors[i]!));
    // From above, where load cannot blur it: each retry's delay as it was scheduled. The queue's event stream has a
    // 'delayed' event per retry, written by the same script that scheduled it: its entry id is the moment (ms), its
    // `delay` field the moment it is due. A constant backoff, or one longer than its ceiling, fails here.
    const jobId = String(res.body.statusUrl).split('/').pop()!;
    const stream = `${redisKeys(t.config).queuePrefix('content')}:content:events`;
    const entries = await t.platform.redis.xrange(stream, '-', '+');
    const delays = entries
      .map(([id, fields]) => ({ at: Number(id.split('-')[0]), f: Object.fromEntries(fields.flatMap((v, i, a) => (i % 2 ? [] : [[v, a[i + 1]]]))) }))
      .filter((e) => e.f.event === 'delayed' && e.f.jobId === jobId)
      .map((e) => Number(e.f.delay) - e.at);
    expect(delays).toHaveLength(3);
    delays.forEach((d, i) => {
      const full = BACKOFF_MS * 2 ** i;
      expect(d, `scheduled delays ${delays.join(', ')} ms`).toBeGreaterThanOrEqual(full / 2 - 5);
      expect(d, `scheduled delays ${delays.join(', ')} ms`).toBeLessThanOrEqual(full + 5);
    });
  });

  it('a failed job reports its error in the status', async () => {
    const res = await t.root.post('/api/content/batch', [{ mode: 'invalid' }], { prefer: 'respond-async' });
    const status = await settled(t.root, res.body.statusUrl);
    expect(status).toMatchObject({ state: 'failed', error: { status: 422, message: 'This batch cannot be processed', code: 'unprocessable' }, result: null });
  });
});

describe('Bull Board', () => {
  let t: TestApp;
  let common: HttpClient;
  beforeAll(async () => {
    t = await startTestApp({ workers: false });
    await t.root.post('/api/user/', { username: 'viewer', password: 'viewer-password' });
    await t.root.post('/api/user/', { username: 'ops', password: 'ops-password', role: 10 });
    common = new HttpClient(t.url);
    await common.login('viewer', 'viewer-password');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('asks anonymous browsers for Basic credentials (401) and never shows them the board', async () => {
    for (const path of ['/admin/queues', '/admin/queues/', '/admin/queues/api/queues', '/admin/queues/static/x.js']) {
      const res = await t.anon.get(path);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      expect(res.text).not.toMatch(/<html/i);
    }
  });

  it('refuses common users (403), by session or Basic, and wrong passwords (401)', async () => {
    expect((await common.get('/admin/queues')).status).toBe(403);
    expect((await t.anon.get('/admin/queues', { authorization: basic('viewer', 'viewer-password') })).status).toBe(403);
    expect((await t.anon.get('/admin/queues', { authorization: basic('ops', 'wrong-password') })).status).toBe(401);
  });

  it('shows the board to admins by session or Basic, with every queue', async () => {
    const page = await t.root.get('/admin/queues');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<html/i);
    const api = await t.anon.get('/admin/queues/api/queues', { authorization: basic('ops', 'ops-password') });
    expect(api.status).toBe(200);
    expect(api.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([...queueNames].sort());
    expect((await t.anon.get('/admin/queues/api/queues', { authorization: basic('root', ROOT_PASSWORD) })).status).toBe(200);
  });

  it("refuses the board's write actions from another origin", async () => {
    const res = await t.root.request('PUT', '/admin/queues/api/queues/content/pause', undefined, { origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    const same = await t.root.request('PUT', '/admin/queues/api/queues/content/pause', undefined, { origin: t.url });
    expect(same.status).toBe(200);
    expect(await t.platform.jobs.queues.get('content')!.isPaused()).toBe(true);
    await t.platform.jobs.queues.get('content')!.resume();
  });
});
