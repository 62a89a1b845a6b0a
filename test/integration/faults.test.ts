// Faults: Postgres going away and coming back, SIGTERM with work in flight, and fuzzed JSON that must never 500.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedEndpoints } from '../../src/http/app.js';
import { HttpClient } from '../helpers/http.js';
import { baseline, within } from '../helpers/pace.js';
import { PrivatePostgres } from '../helpers/postgres-server.js';
import { createTestEnv, startTestApp, type TestApp, type TestEnv } from '../helpers/services.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';
import { item } from '../shared/content-suite.js';

describe('Postgres stops and comes back', () => {
  let db: PrivatePostgres;
  let t: TestApp;
  beforeAll(async () => {
    db = await PrivatePostgres.create();
    // No credential cache: every request needs the database.
    t = await startTestApp({ env: { DATABASE_URL: db.url, AUTH_CACHE_MS: '0', JOB_BACKOFF_MS: '300', JOB_ATTEMPTS: '8' } });
  });
  afterAll(async () => {
    await db.start().catch(() => {});
    await t?.close();
    await db.destroy();
  });

  it('answers 503 JSON in every area while it is down, within its connect timeout and 20 × the healthy call, and recovers by itself', async () => {
    const key = (await t.root.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
    expect((await t.root.post('/api/content', item())).status).toBe(201);

    const checks: [string, () => Promise<{ status: number; body: any }>, (b: any) => boolean][] = [
      ['GET /api/content', () => t.root.get('/api/content'), (b) => typeof b.error === 'string'],
      ['POST /api/content', () => t.root.post('/api/content', item()), (b) => typeof b.error === 'string'],
      ['POST /api/content/batch', () => t.root.post('/api/content/batch', [item()]), (b) => typeof b.error === 'string'],
      ['POST /api/user/login', () => t.anon.post('/api/user/login', { username: 'root', password: 'whatever-password' }), (b) => b.success === false],
      ['GET /api/token/', () => t.root.get('/api/token/'), (b) => b.success === false],
      [
        'POST /v1/embeddings',
        () => t.anon.post('/v1/embeddings', { model: 'local-hash-v1', input: 'x' }, { authorization: `Bearer ${key}` }),
        (b) => typeof b.error?.message === 'string',
      ],
      ['POST /api/mail-new', () => t.root.post('/api/mail-new', { email: 'a@example.test' }), (b) => typeof b.error === 'string'],
    ];
    // Each call's time with the database up, this run: the bound on its outage answer grows with the machine's load.
    const healthy = new Map<string, number>();
    for (const [label, call] of checks) healthy.set(label, await baseline(call, 3));
    await db.stop();
    for (const [label, call, shaped] of checks) {
      const started = Date.now();
      const res = await call();
      // A connection to the stopped server is refused at once, or given up after 1.5 s (connectionTimeoutMillis).
      expect(Date.now() - started, label).toBeLessThan(within(1_500, healthy.get(label)!));
      expect(res.status, label).toBe(503);
      expect(shaped(res.body), `${label}: ${JSON.stringify(res.body)}`).toBe(true);
    }
    const ready = await t.anon.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.postgres).toMatch(/unavailable/);

    // A job that meets the outage retries with backoff and completes once the database is back.
    const jobId = await t.platform.jobs.enqueue('content.batch', { items: [item({ source: 'outage' })] }, { owner: null });
    await new Promise((r) => setTimeout(r, 700));
    await db.start();

    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await t.root.get('/api/content')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    expect((await t.root.post('/api/content/batch', [item()])).body.success).toBe(1);
    expect((await t.anon.get('/readyz')).status).toBe(200);
    let state = '';
    for (let i = 0; i < 100 && state !== 'completed'; i++) {
      state = (await t.platform.jobs.view((await t.platform.jobs.getJob(jobId))!)).state;
      if (state !== 'completed') await new Promise((r) => setTimeout(r, 100));
    }
    expect(state).toBe('completed');
    expect((await t.root.get('/api/stats')).body.bySource.outage).toBe(1);
  });
});

describe('SIGTERM with work in flight', () => {
  let env: TestEnv;
  let api: Spawned & { url: string };
  let client: HttpClient;
  let db: pg.Client;
  const procs: Spawned[] = [];

  async function worker(): Promise<Spawned> {
    const w = spawnEntry('worker', [], { ...env.env, LOG_LEVEL: 'info' });
    procs.push(w);
    await w.waitFor(/workers started/);
    return w;
  }
  /** Holds the counter row of a source: a batch for it blocks inside its write until released. */
  async function hold(source: string) {
    await client.post('/api/content', item({ source }));
    await db.query('begin');
    await db.query('select * from content_stats where source = $1 for update', [source]);
    return () => db.query('rollback');
  }
  async function activeOn(w: Spawned, jobId: string) {
    for (let i = 0; i < 100; i++) {
      const job = (await client.get(`/api/jobs/${jobId}`)).body;
      if (job.state === 'active') return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`job ${jobId} never became active on ${w.proc.pid}`);
  }

  beforeAll(async () => {
    env = await createTestEnv({ env: { SHUTDOWN_TIMEOUT_MS: '4000', JOB_LOCK_MS: '2000', JOB_STALLED_INTERVAL_MS: '1000', CONTENT_CONCURRENCY: '1' } });
    api = await spawnServer(['api'], env.env);
    procs.push(api);
    client = new HttpClient(api.url);
    await client.login('root', env.env.ROOT_PASSWORD!);
    db = new pg.Client({ connectionString: env.dbUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end().catch(() => {});
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await env?.cleanup();
  });

  it('a worker stops taking jobs, finishes the active one, and exits 0', async () => {
    const w = await worker();
    const release = await hold('term-finish');
    const { jobId } = (await client.post('/api/content/batch', [item({ source: 'term-finish' })], { prefer: 'respond-async' })).body;
    await activeOn(w, jobId);
    w.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 800));
    expect(w.proc.exitCode).toBeNull(); // still finishing its job
    const queued = (await client.post('/api/content/batch', [item({ source: 'term-later' })], { prefer: 'respond-async' })).body.jobId;
    await release();
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect((await client.get(`/api/jobs/${jobId}`)).body.state).toBe('completed');
    // It took no new job while stopping.
    expect((await client.get(`/api/jobs/${queued}`)).body.state).toBe('waiting');
    const next = await worker();
    for (let i = 0; i < 100 && (await client.get(`/api/jobs/${queued}`)).body.state !== 'completed'; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await client.get(`/api/jobs/${queued}`)).body.state).toBe('completed');
    await next.stop();
  });

  it('a job still running when SHUTDOWN_TIMEOUT_MS runs out is left to another worker; its committed rows keep their ids, none added', async () => {
    const spawning = Date.now();
    const w = await worker();
    // How long starting a worker process takes in this run: the slack allowed past SHUTDOWN_TIMEOUT_MS below.
    const spawnMs = Date.now() - spawning;
    const release = await hold('term-timeout');
    const batch = Array.from({ length: 20 }, () => item({ source: 'term-timeout' }));
    const { jobId } = (await client.post('/api/content/batch', batch, { prefer: 'respond-async' })).body;
    await activeOn(w, jobId);
    const started = Date.now();
    w.proc.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(3_500);
    // (Held until released below, the job would keep a worker without the timeout from exiting at all.) Past the
    // timeout it closes its queues and connections: slack of three worker starts of this run (one was 2 s past it).
    expect(took).toBeLessThan(4_000 + 3 * spawnMs);
    // The worker is gone, but its insert still waits in Postgres: released, it commits (one autocommit statement).
    await release();
    let committed: { id: string; url: string }[] = [];
    for (let i = 0; i < 100 && committed.length < 21; i++) {
      committed = (await db.query("select id, url from content_items where source = 'term-timeout'")).rows;
      if (committed.length < 21) await new Promise((r) => setTimeout(r, 50));
    }
    expect(committed, 'the first attempt committed its 20 rows').toHaveLength(21);
    expect((await client.get(`/api/jobs/${jobId}`)).body.state).not.toBe('completed');
    const other = await worker();
    let job: { state: string; result: { success: number; created: { id: string; url: string }[] } | null } = { state: '', result: null };
    for (let i = 0; i < 200 && job.state !== 'completed'; i++) {
      job = (await client.get(`/api/jobs/${jobId}`)).body;
      if (job.state !== 'completed') await new Promise((r) => setTimeout(r, 100));
    }
    expect(job.state).toBe('completed');
    // The second attempt wrote the same 20 rows: same ids, nothing new.
    const idByUrl = new Map(committed.map((r) => [r.url, r.id]));
    expect(job.result!.success).toBe(20);
    for (const c of job.result!.created) expect(c.id, c.url).toBe(idByUrl.get(c.url));
    const { rows } = await db.query("select id, url from content_items where source = 'term-timeout'");
    expect(new Map(rows.map((r) => [r.url, r.id]))).toEqual(idByUrl);
    await other.stop();
  });

  it('the API finishes a request in flight, refuses new connections, and exits 0', async () => {
    const w = await worker();
    const release = await hold('term-api');
    const inFlight = client.post('/api/content/batch', [item({ source: 'term-api' })]);
    await new Promise((r) => setTimeout(r, 500));
    api.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await expect(fetch(`${api.url}/healthz`)).rejects.toThrow();
    await release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(1);
    expect(await api.exited).toEqual({ code: 0, signal: null });
    await w.stop();
  });
});

describe('fuzzed requests never answer 500 and never hang', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { SYNC_WAIT_MS: '3000', MAIL_TIMEOUT_MS: '2000' } });
    key = (await t.root.post('/api/token/', { name: 'fuzz', unlimited_quota: true })).body.data.key;
  });
  afterAll(async () => {
    await t?.close();
  });

  // A small seeded generator: the same run every time, so a failure can be replayed.
  let seed = 20261122;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const STRINGS = [
    '',
    ' ',
    'a',
    'x'.repeat(5000),
    '🙂🚀💥',
    '\u0000\u0001',
    '"quoted"',
    "'; DROP TABLE users; --",
    '<script>alert(1)</script>',
    '١٢٣ عربى',
    '中文字符',
    '-1',
    '1e309',
    'NaN',
    'null',
    'https://example.com',
    'a@b.c',
    '../../etc/passwd',
    '%00',
    `sk-${'A'.repeat(48)}`,
  ];
  const NUMBERS = [0, -1, 1, 1.5, 1e21, -1e21, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, 0.1, 101, 2049, 3072];
  function value(depth = 0): unknown {
    const r = rand();
    if (depth > 4 || r < 0.3) return pick([...STRINGS, ...NUMBERS, true, false, null] as unknown[]);
    if (r < 0.65) return Array.from({ length: Math.floor(rand() * 5) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    const keys = [
      'email',
      'username',
      'password',
      'name',
      'input',
      'model',
      'url',
      'score',
      'source',
      'summary',
      'content',
      'quota',
      'role',
      'id',
      'status',
      'limit',
      'mailbox',
      'key',
      'lines',
      'auth',
      'to',
      'subject',
      'text',
      'expired_time',
      'models',
      'subnet',
      'count',
      'dimensions',
      'encoding_format',
      '__proto__',
      'constructor',
    ];
    for (let i = Math.floor(rand() * 8); i > 0; i--) o[pick(keys)] = value(depth + 1);
    return o;
  }
  const rawBodies = [
    '{',
    '[1,2',
    '{"a":}',
    'nul',
    '\u0000',
    '"unterminated',
    '['.repeat(50_000),
    '{"a":'.repeat(10_000),
    JSON.stringify({ deep: JSON.parse('['.repeat(2_000) + ']'.repeat(2_000)) }),
  ];

  it('across every endpoint, with random bodies, queries and path parameters', async () => {
    const failures: string[] = [];
    const skip = new Set(['GET /api/user/logout', 'GET /docs', 'GET /metrics', 'GET /openapi.json', 'GET /admin/queues']);
    let sent = 0;
    for (const e of documentedEndpoints(t.platform)) {
      const label = `${e.method.toUpperCase()} ${e.path}`;
      if (skip.has(label)) continue;
      for (let i = 0; i < 14; i++) {
        const path = e.path.replace(/:([A-Za-z]+)/g, () => encodeURIComponent(String(pick([...STRINGS, ...NUMBERS]))));
        const query = new URLSearchParams();
        for (let q = Math.floor(rand() * 4); q > 0; q--)
          query.set(
            pick(['limit', 'orderBy', 'order', 'q', 'cursor', 'minScore', 'since', 'p', 'page_size', 'status_only', 'email', 'queue', 'response_type']),
            String(pick([...STRINGS, ...NUMBERS])),
          );
        const url = `${t.url}${path}${query.size ? `?${query}` : ''}`;
        const body = e.method === 'get' || e.method === 'delete' ? undefined : i < rawBodies.length ? rawBodies[i] : JSON.stringify(value());
        const headers: Record<string, string> = { 'content-type': 'application/json', cookie: [...t.root.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
        if (e.path.startsWith('/v1')) headers.authorization = `Bearer ${key}`;
        sent++;
        try {
          const res = await fetch(url, { method: e.method.toUpperCase(), headers, body, signal: AbortSignal.timeout(15_000) });
          const text = await res.text();
          if (res.status >= 500) failures.push(`${label} ${res.status} ${url} ${body?.slice(0, 200)} → ${text.slice(0, 200)}`);
          else if (!/json/.test(res.headers.get('content-type') ?? '') && res.status !== 204 && !text.startsWith('<!doctype'))
            failures.push(`${label} not JSON: ${text.slice(0, 100)}`);
        } catch (err) {
          failures.push(`${label} ${(err as Error).name}: ${(err as Error).message} ${url}`);
        }
      }
    }
    expect(sent).toBeGreaterThan(700);
    expect(failures).toEqual([]);
    // The server is still fine afterwards.
    expect((await t.root.get('/api/user/self')).status).toBe(200);
  });
});
