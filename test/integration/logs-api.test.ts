// The one-api log API over HTTP: /api/log/* listings, filters, search, stat, delete, /api/user/dashboard and /api/status,
// and who sees which rows (a common user only theirs; an admin never root's or another admin's). Rows are seeded
// through the logs store into a window of yesterday, so the rows the app writes itself (user creation) stay out of it.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertLogs } from '../../src/logs/store.js';
import { DAY_SECONDS, dayStart } from '../../src/logs/partitions.js';
import type { LogEntry } from '../../src/logs/schema.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
const users: Record<string, { id: number; client: HttpClient }> = {};
const now = Math.floor(Date.now() / 1000);
/** The seeded window: yesterday 10:00-11:00 UTC (its partition exists from the migration on). */
const W0 = dayStart(now) - DAY_SECONDS + 10 * 3600;
const W1 = W0 + 3600;
const inWindow = `start_timestamp=${W0}&end_timestamp=${W1}`;

async function addUser(username: string, role: number) {
  const res = await t.root.post('/api/user/', { username, password: `${username}-password`, role });
  expect(res.status, res.text).toBe(201);
  const client = new HttpClient(t.url);
  await client.login(username, `${username}-password`);
  users[username] = { id: res.body.data.id, client };
}

const seed = (userId: number, username: string, over: Partial<LogEntry>): LogEntry => ({
  type: 2,
  userId,
  username,
  content: 'seed',
  createdAt: W0 + 100,
  ...over,
});

beforeAll(async () => {
  t = await startTestApp({ workers: false });
  await addUser('alice', 1);
  await addUser('bob', 1);
  await addUser('admin1', 10);
  await addUser('admin2', 10);
  const { alice, bob, admin2 } = users;
  await insertLogs(t.platform.db, [
    seed(alice!.id, 'alice', {
      tokenName: 'ka',
      modelName: 'm1',
      channelId: 7,
      quota: 10,
      promptTokens: 40,
      createdAt: W0 + 500,
      content: 'seed alice m1',
      requestId: 'req-alice-1',
    }),
    seed(alice!.id, 'alice', { tokenName: 'kb', modelName: 'm2', channelId: 8, quota: 20, promptTokens: 60, createdAt: W0 + 400, content: 'seed alice m2' }),
    seed(alice!.id, 'alice', { type: 1, quota: 500, createdAt: W0 + 300, content: 'seed alice redeemed code #1' }),
    seed(alice!.id, 'alice', { type: 5, modelName: 'm1', statusCode: 502, createdAt: W0 + 600, content: 'seed alice m1 failed with 502' }),
    seed(bob!.id, 'bob', { modelName: 'm1', quota: 5, channelId: 7, createdAt: W0 + 450, content: 'seed bob m1' }),
    seed(admin2!.id, 'admin2', { modelName: 'm1', quota: 7, createdAt: W0 + 460, content: 'seed admin2 m1' }),
    seed(1, 'root', { modelName: 'm1', quota: 1000, createdAt: W0 + 470, content: 'seed root m1 private' }),
    seed(0, '', { type: 4, createdAt: W0 + 480, content: 'seed system channel disabled' }),
    seed(99_999, 'ghost', { modelName: 'm1', quota: 3, createdAt: W0 + 490, content: 'seed ghost m1' }),
  ]);
});
afterAll(async () => {
  await t?.close();
});

const get = async (c: HttpClient, path: string) => {
  const res = await c.get(path);
  expect(res.status, `${path}: ${res.text}`).toBe(200);
  expect(res.body.success).toBe(true);
  return res;
};
const contents = (rows: { content: string }[]) => rows.map((r) => r.content);

describe('GET /api/log/self', () => {
  it("lists only the caller's rows, newest first, with one-api's fields and request_id; X-Total-Count counts them", async () => {
    const res = await get(users.alice!.client, `/api/log/self?${inWindow}`);
    expect(contents(res.body.data)).toEqual(['seed alice m1 failed with 502', 'seed alice m1', 'seed alice m2', 'seed alice redeemed code #1']);
    expect(res.headers.get('x-total-count')).toBe('4');
    const row = res.body.data[1];
    expect(row).toMatchObject({
      type: 2,
      username: 'alice',
      token_name: 'ka',
      model_name: 'm1',
      quota: 10,
      prompt_tokens: 40,
      completion_tokens: 0,
      channel: 7,
      elapsed_time: 0,
      request_id: 'req-alice-1',
      created_at: W0 + 500,
    });
    expect(Object.keys(row)).toEqual(
      expect.arrayContaining([
        'id',
        'created_at',
        'type',
        'content',
        'username',
        'token_name',
        'model_name',
        'quota',
        'prompt_tokens',
        'completion_tokens',
        'channel',
        'elapsed_time',
        'request_id',
      ]),
    );
  });

  it('filters by type, token_name, model_name and the time range; username and channel are not for it (ignored)', async () => {
    const c = users.alice!.client;
    const of = async (q: string) => contents((await get(c, `/api/log/self?${inWindow}&${q}`)).body.data);
    expect(await of('type=2')).toEqual(['seed alice m1', 'seed alice m2']);
    expect(await of('type=5')).toEqual(['seed alice m1 failed with 502']);
    expect(await of('token_name=kb')).toEqual(['seed alice m2']);
    expect(await of('model_name=m1')).toEqual(['seed alice m1 failed with 502', 'seed alice m1']);
    expect(contents((await get(c, `/api/log/self?start_timestamp=${W0 + 350}&end_timestamp=${W0 + 500}`)).body.data)).toEqual([
      'seed alice m1',
      'seed alice m2',
    ]);
    // Empty values are "not given", as one-api frontends send them.
    expect(await of('token_name=&model_name=&type=0')).toHaveLength(4);
    expect(await of('username=bob&channel=7')).toHaveLength(4);
  });

  it('pages with p (from 0) and page_size', async () => {
    const res = await get(users.alice!.client, `/api/log/self?${inWindow}&p=1&page_size=3`);
    expect(contents(res.body.data)).toEqual(['seed alice redeemed code #1']);
    expect(res.headers.get('x-total-count')).toBe('4');
  });

  it('counts up to 10,000 rows and then says so (X-Total-Count-Capped); pages reach the newest 10,000', async () => {
    await addUser('carol', 1);
    const { id } = users.carol!;
    await t.platform.db.raw(
      `insert into logs (created_at, type, user_id, username, model_name, quota, content)
       select ?::bigint - g, 2, ?::int, 'carol', 'bulk', 1, 'bulk ' || g from generate_series(1, 10005) g`,
      [W0 - 60, id],
    );
    const c = users.carol!.client;
    const first = await get(c, '/api/log/self?type=2&page_size=100');
    expect(first.headers.get('x-total-count')).toBe('10000');
    expect(first.headers.get('x-total-count-capped')).toBe('true');
    const last = await get(c, '/api/log/self?type=2&page_size=100&p=99');
    expect(last.body.data).toHaveLength(100);
    expect((await c.get('/api/log/self?type=2&page_size=100&p=100')).status).toBe(400);
    // A narrower range is counted exactly again, and reaches the older rows.
    const narrow = await get(c, `/api/log/self?type=2&page_size=10&end_timestamp=${W0 - 60 - 10000}`);
    expect(narrow.headers.get('x-total-count')).toBe('6');
    expect(narrow.headers.get('x-total-count-capped')).toBeNull();
    expect(contents(narrow.body.data)).toEqual(['bulk 10000', 'bulk 10001', 'bulk 10002', 'bulk 10003', 'bulk 10004', 'bulk 10005']);
  });

  it('answers one-api paths with a trailing slash too (/api/log/self/)', async () => {
    const res = await get(users.alice!.client, `/api/log/self/?${inWindow}`);
    expect(res.body.data).toHaveLength(4);
  });

  it('refuses bad input with a 400 envelope naming the parameter', async () => {
    const c = users.alice!.client;
    for (const [q, param] of [
      ['page_size=101', 'page_size'],
      ['page_size=0', 'page_size'],
      ['p=-1', 'p'],
      ['p=1000&page_size=100', 'p'],
      ['type=6', 'type'],
      ['start_timestamp=yesterday', 'start_timestamp'],
      [`token_name=${'x'.repeat(51)}`, 'token_name'],
      [`model_name=${'m'.repeat(201)}`, 'model_name'],
    ] as const) {
      const res = await c.get(`/api/log/self?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.success, q).toBe(false);
      expect(res.body.message, q).toContain(param);
    }
  });

  it('wants credentials (401 envelope)', async () => {
    const res = await t.anon.get('/api/log/self');
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ success: false });
  });
});

describe('GET /api/log/ (admins)', () => {
  it('is refused to a common user (403)', async () => {
    const res = await users.alice!.client.get('/api/log/');
    expect(res.status).toBe(403);
    expect(res.body.success).toBe(false);
  });

  it("shows an admin the rows of users below them, the system's and deleted users', never root's or another admin's", async () => {
    const rows = (await get(users.admin1!.client, `/api/log/?${inWindow}&page_size=100`)).body.data;
    expect(contents(rows).sort()).toEqual(
      [
        'seed alice m1 failed with 502',
        'seed alice m1',
        'seed alice m2',
        'seed alice redeemed code #1',
        'seed bob m1',
        'seed system channel disabled',
        'seed ghost m1',
      ].sort(),
    );
  });

  it('shows root every row', async () => {
    const rows = (await get(t.root, `/api/log/?${inWindow}&page_size=100`)).body.data;
    expect(contents(rows)).toEqual(expect.arrayContaining(['seed root m1 private', 'seed admin2 m1', 'seed bob m1', 'seed system channel disabled']));
    expect(rows).toHaveLength(9);
  });

  it('filters by username (a deleted user by the name on their rows) and channel; naming root or an equal admin is 403', async () => {
    const c = users.admin1!.client;
    expect(contents((await get(c, `/api/log/?${inWindow}&username=alice&type=2`)).body.data)).toEqual(['seed alice m1', 'seed alice m2']);
    expect(contents((await get(c, `/api/log/?${inWindow}&username=ghost`)).body.data)).toEqual(['seed ghost m1']);
    expect(contents((await get(c, `/api/log/?${inWindow}&channel=7`)).body.data)).toEqual(['seed alice m1', 'seed bob m1']);
    for (const name of ['root', 'admin2']) {
      const res = await c.get(`/api/log/?username=${name}`);
      expect(res.status, name).toBe(403);
      expect(res.body.success).toBe(false);
    }
    // Root may name anyone.
    expect(contents((await get(t.root, `/api/log/?${inWindow}&username=root`)).body.data)).toEqual(['seed root m1 private']);
  });
});

describe('search', () => {
  it("/api/log/self/search finds the caller's rows by model, type number, request id or words, and nobody else's", async () => {
    const c = users.alice!.client;
    const of = async (kw: string) => contents((await get(c, `/api/log/self/search?keyword=${kw}&${inWindow}`)).body.data);
    expect(await of('m2')).toEqual(['seed alice m2']);
    expect(await of('5')).toEqual(['seed alice m1 failed with 502']);
    expect(await of('req-alice-1')).toEqual(['seed alice m1']);
    expect(await of('redeemed')).toEqual(['seed alice redeemed code #1']);
    expect(await of('bob')).toEqual([]);
    expect(await of('private')).toEqual([]);
  });

  it('/api/log/search (admins) finds by username too, but never root rows for an admin; root finds them', async () => {
    const kw = (c: HttpClient, k: string) => get(c, `/api/log/search?keyword=${k}&${inWindow}`).then((r) => contents(r.body.data));
    expect(await kw(users.admin1!.client, 'bob')).toEqual(['seed bob m1']);
    expect(await kw(users.admin1!.client, 'private')).toEqual([]);
    expect(await kw(users.admin1!.client, 'admin2')).toEqual([]);
    expect(await kw(t.root, 'private')).toEqual(['seed root m1 private']);
    expect((await users.bob!.client.get('/api/log/search?keyword=x')).status).toBe(403);
  });

  it('a search that runs past 5 s is refused (400 search_too_broad), here one waiting on a lock of the log table', async () => {
    const db = new pg.Client({ connectionString: t.testEnv.dbUrl });
    await db.connect();
    try {
      // statement_timeout counts the time a statement waits for a lock: the search cannot finish in 5 s.
      await db.query('begin');
      await db.query('lock table logs in access exclusive mode');
      const started = Date.now();
      const res = await users.alice!.client.get(`/api/log/self/search?keyword=seed&${inWindow}`);
      expect(res.status, res.text).toBe(400);
      expect(res.body.message).toMatch(/ran past 5 s/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
    } finally {
      await db.query('rollback').catch(() => {});
      await db.end();
    }
  }, 120_000);

  it('refuses a keyword over 100 characters', async () => {
    const res = await users.alice!.client.get(`/api/log/self/search?keyword=${'k'.repeat(101)}`);
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('keyword');
  });
});

describe('stat', () => {
  it("/api/log/self/stat sums the caller's consume quota under the filters (type picks another type), with rpm and tpm of the last minute", async () => {
    const c = users.alice!.client;
    expect((await get(c, `/api/log/self/stat?${inWindow}`)).body.data).toEqual({ quota: 30, rpm: 0, tpm: 0 });
    expect((await get(c, `/api/log/self/stat?${inWindow}&model_name=m2`)).body.data.quota).toBe(20);
    expect((await get(c, `/api/log/self/stat?${inWindow}&type=1`)).body.data.quota).toBe(500);
    await insertLogs(t.platform.db, [
      seed(users.alice!.id, 'alice', { quota: 2, promptTokens: 11, completionTokens: 4, requestCount: 3, createdAt: Math.floor(Date.now() / 1000) - 5 }),
    ]);
    expect((await get(c, '/api/log/self/stat?model_name=nothing')).body.data).toEqual({ quota: 0, rpm: 0, tpm: 0 });
    const recent = (await get(c, '/api/log/self/stat')).body.data;
    expect([recent.rpm, recent.tpm]).toEqual([3, 15]);
  });

  it('/api/log/stat sums what the admin may see: root and other admins are left out for an admin, not for root', async () => {
    expect((await get(users.admin1!.client, `/api/log/stat?${inWindow}`)).body.data.quota).toBe(30 + 5 + 3);
    expect((await get(t.root, `/api/log/stat?${inWindow}`)).body.data.quota).toBe(30 + 5 + 3 + 7 + 1000);
    expect((await get(users.admin1!.client, `/api/log/stat?${inWindow}&username=bob`)).body.data.quota).toBe(5);
    expect((await users.admin1!.client.get('/api/log/stat?username=root')).status).toBe(403);
    expect((await users.alice!.client.get('/api/log/stat')).status).toBe(403);
  });
});

describe('GET /api/user/dashboard', () => {
  it("gives the caller's consume rows of the last 7 UTC days per day and model, in one-api's shape (request_count of aggregated rows counted)", async () => {
    const { id } = users.bob!;
    const today = dayStart(Math.floor(Date.now() / 1000));
    await insertLogs(t.platform.db, [
      seed(id, 'bob', { modelName: 'dash', quota: 4, promptTokens: 10, createdAt: today + 60 }),
      seed(id, 'bob', { modelName: 'dash', quota: 6, promptTokens: 20, completionTokens: 1, requestCount: 5, createdAt: today + 120 }),
      seed(id, 'bob', { modelName: 'dash', quota: 100, createdAt: today - 8 * DAY_SECONDS }),
      seed(id, 'bob', { type: 1, modelName: 'dash', quota: 100, createdAt: today + 10 }),
      seed(users.alice!.id, 'alice', { modelName: 'dash', quota: 100, createdAt: today + 10 }),
    ]);
    const rows = (await get(users.bob!.client, '/api/user/dashboard')).body.data as { Day: string; ModelName: string }[];
    const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10);
    expect(rows.filter((r) => r.ModelName === 'dash')).toEqual([
      { Day: day(today), ModelName: 'dash', RequestCount: 6, Quota: 10, PromptTokens: 30, CompletionTokens: 1 },
    ]);
    // Yesterday's seeded m1 row is within the 7 days.
    expect(rows).toContainEqual({ Day: day(W0), ModelName: 'm1', RequestCount: 1, Quota: 5, PromptTokens: 0, CompletionTokens: 0 });
  });

  it('is not taken for GET /api/user/:id (a common user gets it, 200)', async () => {
    expect((await users.alice!.client.get('/api/user/dashboard')).status).toBe(200);
    expect((await t.anon.get('/api/user/dashboard')).status).toBe(401);
  });
});

describe('GET /api/status', () => {
  it('answers anyone, without credentials: version, start time, the name, no self-registration, the quota unit, retention', async () => {
    const res = await t.anon.get('/api/status');
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const d = res.body.data;
    expect(d).toMatchObject({
      version: '0.1.0',
      system_name: 'Switchyard',
      register_enabled: false,
      quota_per_unit: 1,
      display_in_currency: false,
      log_retention_days: 30,
    });
    expect(d.start_time).toBeGreaterThan(now - 3600);
    expect(d.start_time).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });
});

describe('on embedded PGlite (npm start without DATABASE_URL)', () => {
  let e: TestApp;
  beforeAll(async () => {
    e = await startTestApp({ embedded: true, workers: false });
  });
  afterAll(async () => {
    await e?.close();
  });

  it('lists, searches, sums, draws the dashboard and deletes the same way', async () => {
    const t0 = Math.floor(Date.now() / 1000) - 30;
    await insertLogs(e.platform.db, [
      { type: 2, userId: 1, username: 'root', modelName: 'pglite-model', quota: 9, promptTokens: 3, content: 'pglite consume', createdAt: t0 },
      { type: 2, userId: 1, username: 'root', modelName: 'pglite-model', quota: 1, content: 'pglite old', createdAt: t0 - 20 * DAY_SECONDS },
    ]);
    const list = await get(e.root, '/api/log/self?model_name=pglite-model');
    expect(contents(list.body.data)).toEqual(['pglite consume', 'pglite old']);
    expect(contents((await get(e.root, '/api/log/search?keyword=pglite')).body.data)).toEqual(['pglite consume', 'pglite old']);
    expect((await get(e.root, '/api/log/self/stat?model_name=pglite-model')).body.data).toEqual({ quota: 10, rpm: 1, tpm: 3 });
    expect((await get(e.root, '/api/user/dashboard')).body.data).toContainEqual(expect.objectContaining({ ModelName: 'pglite-model', Quota: 9 }));
    const del = await e.root.delete(`/api/log/?target_timestamp=${t0 - DAY_SECONDS}`);
    expect(del.body).toEqual({ success: true, message: '', data: 1 });
  });
});

describe('DELETE /api/log/', () => {
  it('is for root only; wants a target_timestamp in the past', async () => {
    expect((await users.admin1!.client.delete(`/api/log/?target_timestamp=${W0}`)).status).toBe(403);
    for (const q of ['', 'target_timestamp=', 'target_timestamp=abc', `target_timestamp=${now + 3600}`]) {
      const res = await t.root.delete(`/api/log/?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body).toMatchObject({ success: false });
      expect(res.body.message).toContain('target_timestamp');
    }
  });

  it('deletes every row created before the target, answers how many, and keeps the later ones', async () => {
    const target = W0 + 470; // before: alice's top-up (300), m2 (400), bob (450), admin2 (460), bob's dashboard row 8 days ago
    const before = Number((await t.platform.db('logs').where('created_at', '<', target).count({ n: '*' }))[0]!.n);
    expect(before).toBeGreaterThanOrEqual(5);
    const res = await t.root.delete(`/api/log/?target_timestamp=${target}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ success: true, message: '', data: before });
    expect(Number((await t.platform.db('logs').where('created_at', '<', target).count({ n: '*' }))[0]!.n)).toBe(0);
    expect(contents((await get(t.root, `/api/log/?${inWindow}&page_size=100`)).body.data).sort()).toEqual(
      ['seed alice m1 failed with 502', 'seed alice m1', 'seed root m1 private', 'seed system channel disabled', 'seed ghost m1'].sort(),
    );
  });
});
