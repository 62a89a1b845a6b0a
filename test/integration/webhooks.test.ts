// Webhooks end to end against a real receiver (an HTTP server on loopback): deliveries signed as Standard Webhooks 1.0
// says, verified by openai's webhooks.unwrap() and by the standardwebhooks package; retries with the same webhook-id,
// no retry on 4xx, Retry-After honoured, secret rotation, the outbound policy at save and at connect time, endpoints
// disabled when they keep failing, and a job end announced twice delivered once.
import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../src/errors.js';
import { jobList } from '../../src/job-kinds.js';
import { announceJobEnd, defineJob } from '../../src/jobs/define.js';
import { byName } from '../../src/jobs/registry.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { item } from '../shared/content-suite.js';

const openai = new OpenAI({ apiKey: 'sk-unused' });

/** A job kind that fails for good (not retried): its end is a job.failed event. */
const failing = defineJob<never>()({
  name: 'test.fail',
  queue: 'content',
  payload: z.object({}),
  run: async () => {
    throw new AppError(422, 'This job cannot succeed', { code: 'cannot' });
  },
});

type Truthy<T> = Exclude<T, undefined | null | false | 0 | ''>;

/** Polls until `fn` gives something truthy (20 s at most). */
async function until<T>(what: string, fn: () => Promise<T> | T, ms = 20_000): Promise<Truthy<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as Truthy<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('webhooks', () => {
  let t: TestApp;
  let bob: HttpClient;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestApp({
      jobs: byName([...jobList, failing]),
      env: { WEBHOOK_BACKOFF_MS: '50', WEBHOOK_BACKOFF_MAX_MS: '200', WEBHOOK_ATTEMPTS: '4', WEBHOOK_TIMEOUT_MS: '2000' },
    });
    await t.root.post('/api/user/', { username: 'bob', password: 'bob-password' });
    bob = new HttpClient(t.url);
    await bob.login('bob', 'bob-password');
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  /** A fresh endpoint of bob's at the receiver, under its own path (the receiver answers per path). */
  async function endpoint(path: string, extra: Record<string, unknown> = {}) {
    const res = await bob.post('/api/webhooks', { url: `${receiver.url}${path}`, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body as { id: number; secret: string };
  }

  /** A job of bob's that completes; its id. */
  async function bobsJob(): Promise<string> {
    const res = await bob.post('/api/content/batch', [item()], { prefer: 'respond-async' });
    return res.body.jobId as string;
  }

  const requestsFor = (path: string, jobId: string) => receiver.requests.filter((r) => r.path === path && JSON.parse(r.body).data.id === jobId);

  it('delivers job.completed as GET /api/jobs/{id} shows the job, verified by openai webhooks.unwrap() and by standardwebhooks', async () => {
    const { id, secret } = await endpoint('/ok');
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // The secret is shown once: never again in GET.
    expect(JSON.stringify((await bob.get(`/api/webhooks/${id}`)).body)).not.toContain(secret.slice(6, 20));
    const jobId = await bobsJob();
    const [req] = await until('the delivery', () => requestsFor('/ok', jobId).length && requestsFor('/ok', jobId));
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(req!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);

    const event = (await openai.webhooks.unwrap(req!.body, req!.headers, secret)) as unknown as { type: string; data: Record<string, unknown> };
    const verified = new Webhook(secret).verify(req!.body, req!.headers) as typeof event;
    expect(verified).toEqual(event);
    const shown = (await bob.get(`/api/jobs/${jobId}`)).body;
    expect(event.type).toBe('job.completed');
    expect(event.data).toEqual({ id: jobId, kind: 'content.batch', state: 'completed', url: `/api/jobs/${jobId}`, result: shown.result });
    // A wrong secret does not verify.
    await expect(openai.webhooks.unwrap(req!.body, req!.headers, `whsec_${Buffer.alloc(32, 1).toString('base64')}`)).rejects.toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(req!.body, req!.headers)).toThrow();
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('delivers job.failed with the error GET /api/jobs/{id} shows, and only to endpoints that take it', async () => {
    const both = await endpoint('/failed', { event_types: ['job.failed'] });
    const onlyCompleted = await endpoint('/completed-only', { event_types: ['job.completed'] });
    const bobId = (await bob.get('/api/user/self')).body.data.id as number;
    const jobId = await t.platform.jobs.enqueue('test.fail' as never, {} as never, { owner: bobId });
    const [req] = await until('the delivery', () => requestsFor('/failed', jobId).length && requestsFor('/failed', jobId));
    const event = new Webhook(both.secret).verify(req!.body, req!.headers) as { type: string; data: unknown };
    const shown = (await bob.get(`/api/jobs/${jobId}`)).body;
    expect(shown.state).toBe('failed');
    expect(event).toMatchObject({ type: 'job.failed', data: { id: jobId, kind: 'test.fail', state: 'failed', error: shown.error } });
    expect(shown.error).toMatchObject({ status: 422, code: 'cannot' });
    await new Promise((r) => setTimeout(r, 300));
    expect(requestsFor('/completed-only', jobId)).toHaveLength(0);
    await bob.delete(`/api/webhooks/${both.id}`);
    await bob.delete(`/api/webhooks/${onlyCompleted.id}`);
  });

  it('delivers job.cancelled when a waiting job is cancelled (DELETE /api/jobs/{id}), with the error GET shows', async () => {
    const { id, secret } = await endpoint('/cancelled', { event_types: ['job.cancelled'] });
    const bobId = (await bob.get('/api/user/self')).body.data.id as number;
    const jobId = await t.platform.jobs.enqueue('content.batch', { items: [item()] }, { owner: bobId, options: { delay: 60_000 } });
    const cancelled = await bob.delete(`/api/jobs/${jobId}`);
    expect(cancelled.status, cancelled.text).toBe(200);
    const [req] = await until('the delivery', () => requestsFor('/cancelled', jobId).length && requestsFor('/cancelled', jobId));
    const event = (await openai.webhooks.unwrap(req!.body, req!.headers, secret)) as unknown as { type: string; data: Record<string, unknown> };
    const shown = (await bob.get(`/api/jobs/${jobId}`)).body;
    expect(shown.state).toBe('cancelled');
    expect(event).toMatchObject({ type: 'job.cancelled', data: { id: jobId, kind: 'content.batch', state: 'cancelled', error: shown.error } });
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('a receiver that fails twice (500) then succeeds gets the same webhook-id three times, and the log shows each attempt', async () => {
    const { id } = await endpoint('/flaky');
    receiver.answer('/flaky', [500, 500, 200]);
    const jobId = await bobsJob();
    const seen = await until('three attempts', () => requestsFor('/flaky', jobId).length >= 3 && requestsFor('/flaky', jobId));
    expect(new Set(seen.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(seen.map((r) => r.body)).size).toBe(1);
    const log = await until('the third attempt logged', async () => {
      const rows = (await bob.get(`/api/webhooks/${id}/deliveries`)).body as { attempt: number; status_code: number; ok: boolean }[];
      return rows.length >= 3 && rows;
    });
    expect(log.map((r) => [r.attempt, r.status_code, r.ok])).toEqual([
      [3, 200, true],
      [2, 500, false],
      [1, 500, false],
    ]);
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('does not retry a 4xx answer (other than 408 and 429)', async () => {
    const { id } = await endpoint('/reject');
    receiver.answer('/reject', [400, 200]);
    const jobId = await bobsJob();
    await until('the delivery', () => requestsFor('/reject', jobId).length);
    const deliveryJob = await until('the delivery job failed', async () => {
      const [row] = (await bob.get(`/api/webhooks/${id}/deliveries`)).body;
      const job = row && (await bob.get(`/api/jobs/webhooks-${row.event_id}-${id}`)).body;
      return job?.state === 'failed' && job;
    });
    expect(deliveryJob.attempts).toBe(1);
    expect(requestsFor('/reject', jobId)).toHaveLength(1);
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('honours Retry-After on 429: the next attempt waits as long as asked', async () => {
    const { id } = await endpoint('/slow-down');
    receiver.answer('/slow-down', [{ status: 429, headers: { 'retry-after': '2' } }, 200]);
    const jobId = await bobsJob();
    const [first, second] = await until('two attempts', () => requestsFor('/slow-down', jobId).length >= 2 && requestsFor('/slow-down', jobId));
    // The backoff alone would be ~50 ms: the receiver asked for 2 s.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2_000);
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('after a rotation both the new and the previous secret verify the deliveries (two v1 signatures)', async () => {
    const { id, secret: old } = await endpoint('/rotated');
    const rotated = await bob.post(`/api/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    expect(fresh).not.toBe(old);
    expect(rotated.body.secret_rotating_until).not.toBeNull();
    const jobId = await bobsJob();
    const [req] = await until('the delivery', () => requestsFor('/rotated', jobId).length && requestsFor('/rotated', jobId));
    expect(req!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [old, fresh]) {
      await openai.webhooks.unwrap(req!.body, req!.headers, secret);
      new Webhook(secret).verify(req!.body, req!.headers);
    }
    // Once the overlap is over, only the new secret signs.
    await t.platform
      .db('webhook_endpoints')
      .where({ id })
      .update({ previous_secret_expires_at: new Date(Date.now() - 1000) });
    const later = await bobsJob();
    const [next] = await until('the next delivery', () => requestsFor('/rotated', later).length && requestsFor('/rotated', later));
    expect(next!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    new Webhook(fresh).verify(next!.body, next!.headers);
    expect(() => new Webhook(old).verify(next!.body, next!.headers)).toThrow();
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('refuses URLs the outbound policy refuses when saving, and again when connecting', async () => {
    for (const url of ['http://10.1.2.3/hook', 'http://localhost:9/hook', 'http://169.254.169.254/latest', 'ftp://example.com/x', 'file:///etc/passwd']) {
      const res = await bob.post('/api/webhooks', { url });
      expect(res.status, url).toBe(400);
    }
    // Saved when it was allowed (the allowlist changed since): 127.0.0.2 is not in OUTBOUND_ALLOWLIST (127.0.0.1).
    const other = await startReceiver('127.0.0.2');
    try {
      const { id } = await endpoint('/ok');
      await t.platform
        .db('webhook_endpoints')
        .where({ id })
        .update({ url: `${other.url}/hook` });
      const jobId = await bobsJob();
      const [row] = await until(
        'the attempt logged',
        async () => (await bob.get(`/api/webhooks/${id}/deliveries`)).body[0] && (await bob.get(`/api/webhooks/${id}/deliveries`)).body,
      );
      expect(row.error).toMatch(/refused by the outbound policy/);
      expect(row.status_code).toBeNull();
      expect(other.requests).toHaveLength(0);
      expect(requestsFor('/ok', jobId)).toHaveLength(0);
      await bob.delete(`/api/webhooks/${id}`);
    } finally {
      await other.close();
    }
  });

  it('disables an endpoint that failed for WEBHOOK_DISABLE_AFTER_SECONDS, or answered 410, and says why in GET', async () => {
    const { id } = await endpoint('/down');
    receiver.answer('/down', [503, 503, 503, 503, 503, 503, 503, 503]);
    await t.platform
      .db('webhook_endpoints')
      .where({ id })
      .update({ failing_since: new Date(Date.now() - 6 * 86_400_000) });
    await bobsJob();
    const shown = await until('disabled', async () => {
      const e = (await bob.get(`/api/webhooks/${id}`)).body;
      return e.enabled === false && e;
    });
    expect(shown.disabled_reason).toMatch(/No delivery succeeded since .* the last: HTTP 503/);
    // Enabling it again clears the reason.
    const enabled = await bob.request('PATCH', `/api/webhooks/${id}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });

    const gone = await endpoint('/gone');
    receiver.answer('/gone', [410]);
    await bobsJob();
    const shownGone = await until('disabled by 410', async () => {
      const e = (await bob.get(`/api/webhooks/${gone.id}`)).body;
      return e.enabled === false && e;
    });
    expect(shownGone.disabled_reason).toBe('The endpoint answered 410 Gone');
    await bob.delete(`/api/webhooks/${id}`);
    await bob.delete(`/api/webhooks/${gone.id}`);
  });

  it('a job end announced twice (a worker killed before BullMQ recorded it) is delivered once, with one webhook-id', async () => {
    const { id } = await endpoint('/once');
    const bobId = (await bob.get('/api/user/self')).body.data.id as number;
    const end = {
      id: 'content-announced-twice',
      name: 'content.batch',
      queue: 'content' as const,
      owner: bobId,
      state: 'completed' as const,
      result: { n: 1 },
      error: null,
      finishedAt: new Date().toISOString(),
    };
    await announceJobEnd(t.platform, end);
    await announceJobEnd(t.platform, { ...end, finishedAt: new Date().toISOString() });
    await until('the delivery', () => requestsFor('/once', end.id).length);
    // A third announcement after the delivery job is gone from Redis finds the logged success.
    await t.platform.jobs.queues.get('webhooks')!.obliterate({ force: true });
    await announceJobEnd(t.platform, end);
    await new Promise((r) => setTimeout(r, 500));
    expect(requestsFor('/once', end.id)).toHaveLength(1);
    const rows = (await bob.get(`/api/webhooks/${id}/deliveries`)).body;
    expect(rows).toHaveLength(1);
    // Redeliver: the same webhook-id again, on request.
    const again = await bob.post(`/api/webhooks/${id}/deliveries/${rows[0].id}/redeliver`);
    expect(again.status).toBe(202);
    const both = await until('the redelivery', () => requestsFor('/once', end.id).length >= 2 && requestsFor('/once', end.id));
    expect(both[1]!.headers['webhook-id']).toBe(both[0]!.headers['webhook-id']);
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('sends at most WEBHOOK_ENDPOINT_CONCURRENCY deliveries to one endpoint at once, across the queue', async () => {
    const slow = await startReceiver('127.0.0.1', { delayMs: 300 });
    try {
      const res = await bob.post('/api/webhooks', { url: `${slow.url}/slow` });
      const bobId = (await bob.get('/api/user/self')).body.data.id as number;
      const ends = Array.from({ length: 12 }, (_, i) => ({
        id: `content-concurrency-${i}`,
        name: 'content.batch',
        queue: 'content' as const,
        owner: bobId,
        state: 'completed' as const,
        result: null,
        error: null,
        finishedAt: new Date().toISOString(),
      }));
      await Promise.all(ends.map((end) => announceJobEnd(t.platform, end)));
      await until('every delivery', () => slow.requests.length >= 12);
      expect(slow.maxInFlight()).toBe(t.config.WEBHOOK_ENDPOINT_CONCURRENCY);
      const rows = await until('every attempt logged', async () => {
        const page = (await bob.get(`/api/webhooks/${res.body.id}/deliveries?limit=100`)).body as { response_excerpt: string; duration_ms: number }[];
        return page.length === 12 && page;
      });
      expect(rows.every((r) => r.response_excerpt === 'thanks' && r.duration_ms >= 250)).toBe(true);
      await bob.delete(`/api/webhooks/${res.body.id}`);
    } finally {
      await slow.close();
    }
  });

  it('does not follow a redirect: a 3xx is a failure, retried at the same URL', async () => {
    const { id } = await endpoint('/redirect');
    receiver.answer('/redirect', [{ status: 302, headers: { location: `${receiver.url}/elsewhere` } }, 200]);
    const jobId = await bobsJob();
    await until('two attempts', () => requestsFor('/redirect', jobId).length >= 2);
    const log = await until('both logged', async () => {
      const rows = (await bob.get(`/api/webhooks/${id}/deliveries`)).body as { status_code: number; ok: boolean }[];
      return rows.length >= 2 && rows;
    });
    expect(log.map((r) => [r.status_code, r.ok])).toEqual([
      [200, true],
      [302, false],
    ]);
    expect(receiver.requests.filter((r) => r.path === '/elsewhere')).toHaveLength(0);
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('drops the deliveries still waiting for an endpoint its owner disabled', async () => {
    const { id } = await endpoint('/paused');
    receiver.answer('/paused', [{ status: 503, headers: { 'retry-after': '2' } }, 200]);
    const jobId = await bobsJob();
    await until('the first attempt logged', async () => (await bob.get(`/api/webhooks/${id}/deliveries`)).body.length === 1);
    expect((await bob.request('PATCH', `/api/webhooks/${id}`, { enabled: false })).status).toBe(200);
    const [row] = (await bob.get(`/api/webhooks/${id}/deliveries`)).body;
    const job = await until('the retry dropped', async () => {
      const j = (await bob.get(`/api/jobs/webhooks-${row.event_id}-${id}`)).body;
      return j.state === 'completed' && j;
    });
    expect(job.result).toEqual({ ok: false, skipped: 'the endpoint was deleted or disabled' });
    expect(requestsFor('/paused', jobId)).toHaveLength(1);
    await bob.delete(`/api/webhooks/${id}`);
  });

  it('keeps endpoints to their owner, validates event types and URL length, and caps endpoints per user', async () => {
    const { id } = await endpoint('/mine');
    expect((await t.root.get(`/api/webhooks/${id}`)).status).toBe(404);
    expect((await t.root.delete(`/api/webhooks/${id}`)).status).toBe(404);
    expect((await bob.post('/api/webhooks', { url: `${receiver.url}/x`, event_types: ['job.exploded'] })).status).toBe(400);
    expect((await bob.post('/api/webhooks', { url: `${receiver.url}/${'x'.repeat(2_000)}` })).status).toBe(400);
    const made: number[] = (await bob.get('/api/webhooks')).body.map((e: { id: number }) => e.id);
    for (;;) {
      const res = await bob.post('/api/webhooks', { url: `${receiver.url}/cap` });
      if (res.status === 429) break;
      expect(res.status).toBe(201);
      made.push(res.body.id);
    }
    expect(made).toHaveLength(t.config.WEBHOOK_ENDPOINTS_PER_USER);
    for (const e of made) await bob.delete(`/api/webhooks/${e}`);
  });
});
