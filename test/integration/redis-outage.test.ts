// Redis stops: job-backed endpoints answer 503 JSON within 2 s; when it returns, the same process recovers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseline, within } from '../helpers/pace.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { freePort, PrivateRedis } from '../helpers/redis-server.js';
import { item } from '../shared/content-suite.js';

let redis: PrivateRedis;
let t: TestApp;

beforeAll(async () => {
  redis = new PrivateRedis(await freePort());
  await redis.start();
  t = await startTestApp({ env: { REDIS_URL: redis.url } });
});

afterAll(async () => {
  redis.thaw();
  await redis.start().catch(() => {});
  await t?.close();
  await redis.stop();
});

describe('Redis outage', () => {
  it('503 at once while Redis is down (within 20 × a healthy call, not after a wait), and recovery without a restart', async () => {
    expect((await t.root.post('/api/content/batch', [item()])).status).toBe(200);
    const healthy = await baseline(() => t.root.post('/api/content/batch', [item()]));

    await redis.stop();
    for (const prefer of [{}, { prefer: 'respond-async' }] as Record<string, string>[]) {
      const started = Date.now();
      const res = await t.root.post('/api/content/batch', [item()], prefer);
      expect(Date.now() - started).toBeLessThan(within(0, healthy));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: expect.stringMatching(/unavailable/i) });
      expect(res.headers.get('retry-after')).toBeTruthy();
    }
    const ready = await t.root.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.redis).toBe('unavailable');
    // Endpoints that need only Postgres keep working.
    expect((await t.root.get('/api/stats')).status).toBe(200);
    expect((await t.root.post('/api/content', item())).status).toBe(201);

    await redis.start();
    let res;
    for (let i = 0; i < 100; i++) {
      res = await t.root.post('/api/content/batch', [item()]);
      if (res.status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(res!.status).toBe(200);
    expect(res!.body.success).toBe(1);
    expect((await t.root.get('/readyz')).status).toBe(200);
  });

  it("a hung Redis (frozen, connections open): a job's status is a 503 that names the queue, not the database", async () => {
    const res = await t.root.post('/api/content/batch', [item()], { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    const healthy = await baseline(() => t.root.get(`/api/jobs/${res.body.jobId}`));
    redis.freeze();
    try {
      const started = Date.now();
      const status = await t.root.get(`/api/jobs/${res.body.jobId}`);
      // The API's Redis commands give up after 2 s (commandTimeout): that wait, plus the work of a healthy call.
      expect(Date.now() - started).toBeLessThan(within(2_000, healthy));
      expect(status.status).toBe(503);
      expect(status.body.error).toMatch(/Queue unavailable/);
      expect(status.headers.get('retry-after')).toBeTruthy();
    } finally {
      redis.thaw();
    }
  });
});
