// System rows for outages an API process sees: a private redis-server, then a private Postgres cluster, stopped and
// started again under a running app; afterwards the log holds when the outage began and when it ended.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivatePostgres } from '../helpers/postgres-server.js';
import { freePort, PrivateRedis } from '../helpers/redis-server.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

interface Row {
  type: number;
  user_id?: number;
  username: string;
  content: string;
  created_at: number;
}

async function systemRows(t: TestApp, pattern: RegExp, want: number, timeoutMs = 20_000): Promise<Row[]> {
  const deadline = Date.now() + timeoutMs;
  let rows: Row[] = [];
  while (Date.now() < deadline) {
    try {
      const res = await t.root.get('/api/log/?type=4&page_size=100');
      if (res.status === 200) rows = (res.body.data as Row[]).filter((r) => pattern.test(r.content));
    } catch {
      // not yet
    }
    if (rows.length >= want) return rows;
    await new Promise((r) => setTimeout(r, 250));
  }
  return rows;
}

describe('Redis outage', () => {
  let redis: PrivateRedis;
  let t: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    t = await startTestApp({ env: { REDIS_URL: redis.url }, workers: false });
  });
  afterAll(async () => {
    await redis?.start().catch(() => {});
    await t?.close();
    await redis?.stop();
  });

  it('writes a system row dated when Redis became unreachable and one when it was back, naming the process', async () => {
    const stoppedAt = Math.floor(Date.now() / 1000);
    await redis.stop();
    await new Promise((r) => setTimeout(r, 2_000));
    await redis.start();
    const rows = await systemRows(t, /^Redis (unreachable|reachable again)/, 2);
    expect(rows.map((r) => r.content.replace(/ from .* (since|after) .*/, ''))).toEqual(['Redis reachable again', 'Redis unreachable']);
    const [back, down] = rows;
    expect(down!.created_at).toBeGreaterThanOrEqual(stoppedAt);
    expect(down!.created_at).toBeLessThan(back!.created_at);
    expect(down!.content).toContain(`pid ${process.pid}`);
    expect(back!.content).toMatch(/after \d+ s$/);
    expect(back!.username).toBe('');
  });
});

describe('Postgres outage', () => {
  let pg: PrivatePostgres;
  let t: TestApp;
  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    t = await startTestApp({ env: { DATABASE_URL: pg.url }, workers: false });
  });
  afterAll(async () => {
    await pg?.start().catch(() => {});
    await t?.close();
    await pg?.destroy();
  });

  it('writes, once Postgres is back, a system row dated when it became unreachable and one for its return', async () => {
    const stoppedAt = Math.floor(Date.now() / 1000);
    await pg.stop();
    // The process notices within its probe interval (2 s).
    await new Promise((r) => setTimeout(r, 4_500));
    await pg.start();
    const rows = await systemRows(t, /^Postgres (unreachable|reachable again)/, 2);
    expect(rows.map((r) => r.content.replace(/ from .* (since|after) .*/, ''))).toEqual(['Postgres reachable again', 'Postgres unreachable']);
    const [back, down] = rows;
    expect(down!.created_at).toBeGreaterThanOrEqual(stoppedAt);
    expect(back!.created_at - down!.created_at).toBeGreaterThanOrEqual(2);
  });
});
