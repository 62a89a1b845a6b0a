// Claims of the docs (accounts, HTTP, content counts, jobs, operations) that no other test checked (issue 11).
// Real Postgres and Redis; the real worker and server entry points where the claim is about them.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verify } from '@node-rs/argon2';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/log.js';
import { jobKinds } from '../../src/job-kinds.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { freePort, PrivateRedis } from '../helpers/redis-server.js';
import { createTestEnv, startTestApp, type TestApp } from '../helpers/services.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';

const AUTH_CACHE_MS = 500;
const ALLOWED_ORIGIN = 'https://console.example.org';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The value of one Prometheus series (0 when absent): `name` with every label in `labels`. */
function metricValue(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2]!.split(',');
    if (wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return 0;
}

const item = (url: string) => ({ source: 'claims', url, summary: 'a summary that is long enough to be a summary', content: 'body', score: 5 });

let t: TestApp;

async function user(username: string, extra: Record<string, unknown> = {}): Promise<{ client: HttpClient; id: number }> {
  const res = await t.root.post('/api/user/', { username, password: `${username}-password`, ...extra });
  expect(res.status, res.text).toBe(201);
  const client = new HttpClient(t.url);
  await client.login(username, `${username}-password`);
  return { client, id: res.body.data.id as number };
}

beforeAll(async () => {
  t = await startTestApp({
    env: { LOGIN_MAX_FAILURES: '3', LOGIN_MAX_FAILURES_PER_IP: '1000', AUTH_CACHE_MS: String(AUTH_CACHE_MS), ALLOWED_ORIGINS: ALLOWED_ORIGIN },
  });
});
afterAll(async () => {
  await t?.close();
});

describe('passwords', () => {
  it('are stored as argon2id hashes ($argon2id$…) that verify the password and refuse another', async () => {
    const { id } = await user('hashed');
    const { password_hash: stored } = await t.platform.db('users').where({ id }).first('password_hash');
    expect(stored).toMatch(/^\$argon2id\$v=19\$/);
    expect(await verify(stored, 'hashed-password')).toBe(true);
    expect(await verify(stored, 'not-the-password')).toBe(false);
  });
});

describe('the login limiter (LOGIN_MAX_FAILURES=3 here)', () => {
  it("a successful login clears the username's failure count: 2 failures, a success, then 3 more failures before 429", async () => {
    await user('forgetful');
    const attempt = (password: string) => new HttpClient(t.url).post('/api/user/login', { username: 'forgetful', password });
    expect((await attempt('wrong-1')).status).toBe(401);
    expect((await attempt('wrong-2')).status).toBe(401);
    expect((await attempt('forgetful-password')).status).toBe(200);
    // Without the reset the count would still be 2, and the second failure below would be the 4th: 429.
    for (let i = 3; i <= 5; i++) expect((await attempt(`wrong-${i}`)).status, `failure ${i}`).toBe(401);
    const limited = await attempt('wrong-6');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('the same-origin rule for a cookie-authenticated write (PUT /api/user/self)', () => {
  let c: HttpClient;
  const nameNow = async () => (await c.get('/api/user/self')).body.data.display_name as string;
  const rename = (display_name: string, headers: Record<string, string>) => c.put('/api/user/self', { display_name }, headers);
  beforeAll(async () => {
    // Set up from this origin explicitly, so that only the test about requests without these headers depends on them.
    const own = { origin: t.url };
    expect((await t.root.post('/api/user/', { username: 'origin-user', password: 'origin-user-password' }, own)).status).toBe(201);
    c = new HttpClient(t.url);
    await c.login('origin-user', 'origin-user-password');
    expect((await rename('start', own)).status).toBe(200);
  });

  it('a foreign Referer (no Origin) is 403 and changes nothing', async () => {
    const res = await rename('from-evil', { referer: 'https://evil.example/page?x=1' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false });
    expect(await nameNow()).toBe('start');
  });

  it("a Referer from this server's own origin is allowed", async () => {
    expect((await rename('from-self', { referer: `${t.url}/some/page` })).status).toBe(200);
    expect(await nameNow()).toBe('from-self');
  });

  it('an Origin listed in ALLOWED_ORIGINS is allowed; an unlisted one is 403', async () => {
    expect((await rename('from-console', { origin: ALLOWED_ORIGIN })).status).toBe(200);
    expect(await nameNow()).toBe('from-console');
    expect((await rename('from-elsewhere', { origin: 'https://elsewhere.example.org' })).status).toBe(403);
    expect(await nameNow()).toBe('from-console');
  });

  it('a request with no Origin, no Referer and no Sec-Fetch-Site is let through', async () => {
    expect((await rename('no-headers', {})).status).toBe(200);
    expect(await nameNow()).toBe('no-headers');
  });
});

describe(`revocation on another API process (same Postgres and Redis; AUTH_CACHE_MS=${AUTH_CACHE_MS})`, () => {
  let other: { platform: Platform; server: Server; url: string };
  beforeAll(async () => {
    const platform = await createPlatform(t.config, createLogger('silent'), { listenForJobs: true, jobs: jobKinds });
    const server: Server = await new Promise((resolve) => {
      const s = createApp(platform).listen(0, '127.0.0.1', () => resolve(s));
    });
    other = { platform, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  });
  afterAll(async () => {
    other?.server.closeAllConnections();
    await new Promise((r) => other?.server.close(r));
    await other?.platform.close();
  });

  /** The same client (cookies, Authorization) pointed at the other process. */
  const there = (c: HttpClient) => {
    const o = new HttpClient(other.url);
    o.authorization = c.authorization;
    for (const [k, v] of c.cookies) o.cookies.set(k, v);
    return o;
  };

  it('logging out on one process ends the session there at once and on the other within AUTH_CACHE_MS', async () => {
    const { client: here } = await user('two-sessions');
    const far = there(here);
    expect((await far.get('/api/user/self')).status).toBe(200); // now cached over there
    const replay = new HttpClient(t.url);
    for (const [k, v] of here.cookies) replay.cookies.set(k, v);
    expect((await here.get('/api/user/logout')).status).toBe(200);
    expect((await replay.get('/api/user/self')).status).toBe(401);
    await sleep(AUTH_CACHE_MS + 300);
    expect((await far.get('/api/user/self')).status).toBe(401);
  });

  it('disabling a user on one process ends their session on the other within AUTH_CACHE_MS', async () => {
    const { client: here, id } = await user('disabled-elsewhere');
    const far = there(here);
    expect((await far.get('/api/user/self')).status).toBe(200);
    expect((await t.root.put(`/api/user/${id}`, { status: 2 })).status).toBe(200);
    await sleep(AUTH_CACHE_MS + 300);
    expect((await far.get('/api/user/self')).status).toBe(401);
  });

  it('disabling an API key on one process: refused there at once and on the other within AUTH_CACHE_MS', async () => {
    const { client } = await user('key-owner');
    const { id, key } = (await client.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data;
    const here = t.anon.withAuth(`Bearer ${key}`);
    const far = new HttpClient(other.url).withAuth(`Bearer ${key}`);
    expect((await here.get('/v1/models')).status).toBe(200);
    expect((await far.get('/v1/models')).status).toBe(200);
    expect((await client.put('/api/token/?status_only=1', { id, status: 2 })).status).toBe(200);
    const at = await here.get('/v1/models');
    expect([at.status, at.body.error?.code]).toEqual([401, 'token_disabled']);
    await sleep(AUTH_CACHE_MS + 300);
    const later = await far.get('/v1/models');
    expect([later.status, later.body.error?.code]).toEqual([401, 'token_disabled']);
  });

  it('deleting an API key on one process: refused there at once and on the other within AUTH_CACHE_MS', async () => {
    const { client } = await user('key-deleter');
    const { id, key } = (await client.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data;
    const here = t.anon.withAuth(`Bearer ${key}`);
    const far = new HttpClient(other.url).withAuth(`Bearer ${key}`);
    expect((await far.get('/v1/models')).status).toBe(200);
    expect((await here.get('/v1/models')).status).toBe(200);
    expect((await client.delete(`/api/token/${id}`)).status).toBe(200);
    expect((await here.get('/v1/models')).body.error?.code).toBe('invalid_api_key');
    await sleep(AUTH_CACHE_MS + 300);
    const later = await far.get('/v1/models');
    expect([later.status, later.body.error?.code]).toEqual([401, 'invalid_api_key']);
  });
});

describe('X-Total-Count on a large table (30,000 items)', () => {
  beforeAll(async () => {
    // Scores 0.00–9.99, 30 items each; one statement, then fresh planner statistics.
    await t.platform.db.raw(`
      insert into content_items (id, source, url, summary, content, score, analyzed_at, created_at, updated_at)
      select gen_random_uuid(), 'bulk', 'https://bulk.example/' || i, 'seeded summary', 'seeded content', (i % 1000) / 100.0, now(), now(), now()
      from generate_series(1, 30000) as i`);
    await t.platform.db.raw('analyze content_items');
  });

  it('a filter the planner expects to match more than 20,000 items gets the estimate, marked X-Total-Count-Estimated: true', async () => {
    const res = await t.root.get('/api/content?minScore=0&limit=1');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-total-count-estimated')).toBe('true');
    const total = Number(res.headers.get('x-total-count'));
    expect(total).toBeGreaterThan(20_000);
    expect(total).toBeLessThan(40_000);
  });

  it('a narrow filter gets the exact count and no X-Total-Count-Estimated', async () => {
    const res = await t.root.get('/api/content?minScore=9.99&limit=1');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-total-count')).toBe('30');
    expect(res.headers.get('x-total-count-estimated')).toBeNull();
  });
});

describe('job metrics on /metrics', () => {
  let upstream: FakeOpenAI;
  beforeAll(async () => {
    upstream = await new FakeOpenAI().start();
  });
  afterAll(async () => {
    await upstream?.stop();
  });
  const scrape = async () => {
    const res = await t.anon.get('/metrics');
    expect(res.status).toBe(200);
    return res.text;
  };

  it('switchyard_job_duration_seconds counts a completed content.batch job', async () => {
    const series = { queue: 'content', name: 'content.batch', outcome: 'completed' };
    const before = metricValue(await scrape(), 'switchyard_job_duration_seconds_count', series);
    const res = await t.root.post('/api/content/batch', [item('https://metrics.example/1')]);
    expect(res.status, res.text).toBe(200);
    expect(metricValue(await scrape(), 'switchyard_job_duration_seconds_count', series)).toBe(before + 1);
  });

  it('switchyard_job_failures_total counts each failed attempt of embeddings.create (2 retried, 1 final)', async () => {
    const res0 = await t.root.post('/api/channel/', { type: 'openai', name: 'down', base_url: upstream.url, key: 'sk-x', models: 'down-model', price: 1 });
    expect(res0.status, res0.text).toBe(201);
    upstream.behaviour = { kind: 'status', status: 500 };
    const labels = (final: string) => ({ queue: 'embeddings', name: 'embeddings.create', final });
    const text0 = await scrape();
    const [retried0, final0] = [
      metricValue(text0, 'switchyard_job_failures_total', labels('false')),
      metricValue(text0, 'switchyard_job_failures_total', labels('true')),
    ];
    const failed0 = metricValue(text0, 'switchyard_job_duration_seconds_count', { queue: 'embeddings', name: 'embeddings.create', outcome: 'failed' });
    // The API relays upstream calls itself now; a job for one (as an older API queued them) still runs
    // on the workers, and its attempts are what is counted here.
    await expect(
      t.platform.jobs.run('embeddings.create', { requests: [{ model: 'down-model', inputs: ['x'], tokens: [1] }] }, { owner: null, waitMs: 15_000 }),
    ).rejects.toMatchObject({ status: 502 });
    const text = await scrape();
    expect(metricValue(text, 'switchyard_job_failures_total', labels('false'))).toBe(retried0 + 2);
    expect(metricValue(text, 'switchyard_job_failures_total', labels('true'))).toBe(final0 + 1);
    expect(metricValue(text, 'switchyard_job_duration_seconds_count', { queue: 'embeddings', name: 'embeddings.create', outcome: 'failed' })).toBe(failed0 + 3);
  });
});

describe('a worker process (workers/main.ts) with METRICS_PORT, and job retention (JOB_KEEP_COMPLETED_SECONDS=1)', () => {
  let api: TestApp;
  let worker: Spawned;
  let metricsUrl: string;
  beforeAll(async () => {
    // The API runs no workers: every job here runs in the spawned worker process.
    api = await startTestApp({ workers: false, env: { JOB_KEEP_COMPLETED_SECONDS: '1' } });
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    worker = spawnEntry('worker', [], { ...api.testEnv.env, METRICS_PORT: String(port), WORKER_QUEUES: 'content', LOG_LEVEL: 'info' });
    await worker.waitFor(/workers started/);
  });
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await api?.close();
  });

  it('serves /metrics on METRICS_PORT, with the job metrics of the jobs that process ran', async () => {
    const res = await api.root.post('/api/content/batch', [item('https://worker-metrics.example/1')]);
    expect(res.status, res.text).toBe(200);
    const scraped = await fetch(metricsUrl);
    expect(scraped.status).toBe(200);
    const text = await scraped.text();
    expect(text).toMatch(/^switchyard_process_resident_memory_bytes \d+/m);
    expect(metricValue(text, 'switchyard_job_duration_seconds_count', { queue: 'content', name: 'content.batch', outcome: 'completed' })).toBe(1);
  });

  it('a completed job past its retention is removed, and GET /api/jobs/:id answers 404', async () => {
    const submitted = await api.root.post('/api/content/batch', [item('https://retired.example/1')], { prefer: 'respond-async' });
    expect(submitted.status).toBe(202);
    const statusUrl = submitted.body.statusUrl as string;
    let state = '';
    for (let i = 0; i < 100 && state !== 'completed'; i++) {
      state = (await api.root.get(statusUrl)).body.state;
      if (state !== 'completed') await sleep(100);
    }
    expect(state).toBe('completed');
    // BullMQ trims by age when a later job completes: let a second pass, then complete another.
    await sleep(1_500);
    expect((await api.root.post('/api/content/batch', [item('https://retired.example/2')])).status).toBe(200);
    const gone = await api.root.get(statusUrl);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: 'Job not found' });
  });
});

describe('the maxmemory-policy check at start (the real server entry, a private redis-server)', () => {
  let redis: PrivateRedis;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    await redis?.stop();
  });

  async function setPolicy(policy: string) {
    const r = new Redis(redis.url);
    await r.config('SET', 'maxmemory-policy', policy);
    await r.quit();
  }

  it('warns at start when the policy is not noeviction (allkeys-lru), and not when it is', async () => {
    const env = await createTestEnv({ env: { REDIS_URL: redis.url } });
    cleanups.push(() => env.cleanup());
    const warning = /has maxmemory-policy allkeys-lru/;

    await setPolicy('allkeys-lru');
    const evicting = await spawnServer(['api'], env.env);
    cleanups.push(() => evicting.stop('SIGKILL'));
    const line = JSON.parse(await evicting.waitFor(warning, 90_000));
    expect(line).toMatchObject({ level: 40, policy: 'allkeys-lru' });
    // One line: what is wrong (which Redis, which policy), and what to set.
    expect(line.msg).toBe(
      `Redis at 127.0.0.1:${redis.port} has maxmemory-policy allkeys-lru: when its memory is full it evicts keys, and jobs are lost. ` +
        'Set maxmemory-policy noeviction (redis-cli CONFIG SET maxmemory-policy noeviction, and in redis.conf so that it stays)',
    );
    expect((await evicting.stop()).code).toBe(0);

    await setPolicy('noeviction');
    const safe = await spawnServer(['api'], env.env);
    cleanups.push(() => safe.stop('SIGKILL'));
    expect(safe.output()).toMatch(/Switchyard listening/);
    expect(safe.output()).not.toMatch(/maxmemory-policy/);
    expect((await safe.stop()).code).toBe(0);
  });
});
