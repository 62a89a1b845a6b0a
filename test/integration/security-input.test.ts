// Issue 10, items 9, 13 and 18 on real Postgres and Redis: NUL characters are a 400 naming the field,
// JSON nesting is bounded in the body parser, and content items are changed only by their creator or an admin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { domainToASCII } from 'node:url';
import { z } from 'zod';
import { parseConfig } from '../../src/config.js';
import { createDb } from '../../src/db.js';
import { MAX_JSON_DEPTH } from '../../src/http/body.js';
import { migrationSource } from '../../migrations/index.js';
import { parse } from '../../src/validate.js';
import { NOT_OWNER_DELETE, NOT_OWNER_UPSERT } from '../../src/content/schema.js';
import * as contentStore from '../../src/content/store.js';
import { HttpClient } from '../helpers/http.js';
import { baseline, within } from '../helpers/pace.js';
import { createTestEnv, startTestApp, type TestApp } from '../helpers/services.js';

const M005 = '005_content_owner';
const NUL = 'must not contain NUL (\\u0000) characters';

let t: TestApp;
let alice: HttpClient; // common user
let bob: HttpClient; // common user
let admin: HttpClient; // role 10
const ids: Record<string, number> = {};

let seq = 0;
const SOURCE = `sec-${Math.random().toString(36).slice(2, 8)}`;
function item(over: Record<string, unknown> = {}) {
  seq++;
  return { source: SOURCE, url: `https://example.com/sec/${Date.now()}-${seq}`, title: `T${seq}`, summary: 's', content: `c${seq}`, score: 5, ...over };
}
const row = (url: string) => t.platform.db('content_items').where({ url }).first();
const count = async () => Number((await t.platform.db('content_items').count({ n: '*' }))[0]!.n);

async function user(name: string, role = 1): Promise<HttpClient> {
  const res = await t.root.post('/api/user/', { username: name, password: `${name}-password`, role });
  expect(res.status).toBe(201);
  ids[name] = res.body.data.id;
  const c = new HttpClient(t.url);
  await c.login(name, `${name}-password`);
  return c;
}

beforeAll(async () => {
  // Retries wait at least 10 s (½ × JOB_BACKOFF_MS): an answer within a bound well under that was the first attempt.
  t = await startTestApp({ env: { JOB_BACKOFF_MS: '20000' } });
  alice = await user('alice');
  bob = await user('bob');
  admin = await user('admin1', 10);
});
afterAll(async () => {
  await t?.close();
});

describe('item 9: a NUL (U+0000) in a string is a 400 naming the field', () => {
  it('POST /api/content with a NUL in any string field answers 400 "Invalid field <name>" and stores nothing', async () => {
    const before = await count();
    for (const field of ['source', 'url', 'title', 'summary', 'content', 'analyzedBy']) {
      const value = field === 'url' ? 'https://example.com/nul/a\u0000b' : 'a\u0000b';
      const res = await alice.post('/api/content', item({ [field]: value }));
      expect(res.status, field).toBe(400);
      expect(res.body).toEqual({ error: `Invalid field ${field}: ${NUL}` });
    }
    expect(await count()).toBe(before);
  });

  it('GET /api/content?source= with a NUL answers 400 "Invalid source"', async () => {
    const res = await alice.get('/api/content?source=a%00b');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: `Invalid source: ${NUL}` });
  });

  it('display_name, token name and ?keyword= with a NUL answer 400 in the one-api envelope, naming the field', async () => {
    const self = await alice.put('/api/user/self', { display_name: 'a\u0000b' });
    expect(self.status).toBe(400);
    expect(self.body).toEqual({ success: false, message: `display_name: ${NUL}` });
    const token = await alice.post('/api/token/', { name: 'a\u0000b' });
    expect(token.status).toBe(400);
    expect(token.body).toEqual({ success: false, message: `name: ${NUL}` });
    for (const path of ['/api/token/search?keyword=a%00b', '/api/user/search?keyword=a%00b']) {
      const res = await t.root.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body, path).toEqual({ success: false, message: `keyword: ${NUL}` });
    }
  });

  it('parse() names the path of a NUL nested in arrays and in object keys, with the key printable', () => {
    const schema = z.object({ list: z.array(z.string()), map: z.record(z.string(), z.string()) });
    expect(() => parse(schema, { list: ['ok', 'a\u0000'], map: {} })).toThrow(`list.1: ${NUL}`);
    expect(() => parse(schema, { list: [], map: { 'k\u0000': 'v' } })).toThrow(`map.k\\u0000: ${NUL}`);
    expect(parse(schema, { list: ['ok'], map: { k: 'v' } })).toEqual({ list: ['ok'], map: { k: 'v' } });
  });

  it('a NUL item in /api/content/batch fails only its own entry: the others are stored, without retries', async () => {
    const entries = [item(), item({ title: 'x\u0000y' }), item()];
    const healthy = await baseline(() => alice.post('/api/content/batch', [item(), item(), item()]));
    const started = Date.now();
    const res = await alice.post('/api/content/batch', entries);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: 2, failed: 1, total: 3 });
    expect(res.body.errors).toEqual([{ index: 1, url: entries[1]!.url, error: `Invalid field title: ${NUL}` }]);
    expect(res.body.created.map((c: { index: number }) => c.index)).toEqual([0, 2]);
    expect(await row(entries[0]!.url)).toBeTruthy();
    expect(await row(entries[1]!.url)).toBeUndefined();
    // A retry would wait at least 10 s (JOB_BACKOFF_MS 20 s, jitter ½): an answer within 20 × a healthy batch's time was the first attempt.
    expect(Date.now() - started).toBeLessThan(Math.min(within(0, healthy), 9_000));
  });

  it('a value Postgres refuses becomes a 400 that is never retried, not a retriable 500', async () => {
    // What checkItem now refuses, handed to the store directly: the defence behind the validation.
    const bad = { ...item({ title: 'x\u0000y' }), analyzedBy: null, analyzedAt: null, urlKey: 'https://example.com/bad' };
    const caller = { id: ids.alice!, role: 1 };
    await expect(contentStore.upsertItems(t.platform.db, [bad], caller)).rejects.toMatchObject({ status: 400, retriable: false });
    await expect(contentStore.upsertItem(t.platform.db, bad, caller)).rejects.toMatchObject({ status: 400, retriable: false });
  });
});

describe('issue 22 item 9: a NUL in an object key of a body is a 400, like one in a value, also where the key is not a field', () => {
  it('POST /api/content with a NUL in a key (top level or nested in an unknown field) answers 400 naming it, and stores nothing', async () => {
    const before = await count();
    const top = await alice.post('/api/content', { ...item(), 'x\u0000y': 1 });
    expect(top.status).toBe(400);
    expect(top.body).toEqual({ error: `Invalid field x\\u0000y: ${NUL}` });
    const nested = await alice.post('/api/content', { ...item(), extra: [{ 'k\u0000': 'v' }] });
    expect(nested.status).toBe(400);
    expect(nested.body).toEqual({ error: `Invalid field extra.0.k\\u0000: ${NUL}` });
    expect(await count()).toBe(before);
  });

  it('in /api/content/batch an entry with a NUL key fails alone', async () => {
    const entries = [item(), { ...item(), 'a\u0000': true }];
    const res = await alice.post('/api/content/batch', entries);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: 1, failed: 1, total: 2 });
    expect(res.body.errors).toEqual([{ index: 1, url: entries[1]!.url, error: `Invalid field a\\u0000: ${NUL}` }]);
    expect(await row(entries[1]!.url)).toBeUndefined();
  });

  it('routes validated by parse() refuse a NUL key that their schema would drop (one-api envelope)', async () => {
    const res = await alice.post('/api/token/', { name: 'nul-key', 'x\u0000': 1 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, message: `x\\u0000: ${NUL}` });
    expect(() => parse(z.object({ a: z.string() }), { a: 'ok', 'b\u0000': 'v' })).toThrow(`b\\u0000: ${NUL}`);
  });
});

describe('issue 22 item 9: one content item per url, however its scheme, host, port or fragment are written', () => {
  it('case of scheme and host, a default port, an empty path and a fragment do not make a second item; the item keeps the url first sent', async () => {
    const n = `${Date.now()}`;
    const first = await alice.post('/api/content', item({ url: `https://example.com/norm-${n}/Page` }));
    expect(first.status, first.text).toBe(201);
    for (const url of [`HTTPS://EXAMPLE.com/norm-${n}/Page`, `https://example.com:443/norm-${n}/Page`, `https://Example.Com/norm-${n}/Page#frag`]) {
      const again = await alice.post('/api/content', item({ url, title: url }));
      expect(again.status, url).toBe(200);
      expect(again.body).toMatchObject({ id: first.body.id, url: `https://example.com/norm-${n}/Page`, title: url });
    }
    const bare = await alice.post('/api/content', item({ url: `http://host-${n}.example` }));
    expect(bare.status).toBe(201);
    expect((await alice.post('/api/content', item({ url: `HTTP://HOST-${n}.EXAMPLE:80/` }))).body.id).toBe(bare.body.id);
    const idn = await alice.post('/api/content', item({ url: `https://bücher-${n}.example/x` }));
    expect(idn.status).toBe(201);
    expect((await alice.post('/api/content', item({ url: `https://${domainToASCII(`bücher-${n}.example`)}/x` }))).body.id).toBe(idn.body.id);
    // Still different items: another scheme, another port, another path (paths are case-sensitive), another query.
    for (const url of [
      `http://example.com/norm-${n}/Page`,
      `https://example.com:8443/norm-${n}/Page`,
      `https://example.com/norm-${n}/page`,
      `https://example.com/norm-${n}/Page?q=1`,
    ])
      expect((await alice.post('/api/content', item({ url }))).status, url).toBe(201);
  });

  it('a batch with two spellings of one url stores one item and refuses the second as a duplicate; another user cannot replace it by respelling it', async () => {
    const n = `${Date.now()}`;
    const entries = [item({ url: `https://batch-${n}.example/a` }), item({ url: `https://BATCH-${n}.example:443/a#b` })];
    const res = await alice.post('/api/content/batch', entries);
    expect(res.body).toMatchObject({ success: 1, failed: 1 });
    expect(res.body.errors).toEqual([{ index: 1, url: entries[1]!.url, error: 'Duplicate url in batch' }]);
    const respelt = await bob.post('/api/content', item({ url: `https://Batch-${n}.Example/a` }));
    expect(respelt.status).toBe(409);
    expect(res.body.created[0].url).toBe(entries[0]!.url);
  });

  for (const embedded of [false, true]) {
    it(`migration 013 on ${embedded ? 'PGlite' : 'Postgres'}: stored items get their url key (the first of a clash keeps it, later ones stay apart); down() gives url back its unique index`, async () => {
      const env = await createTestEnv({ embedded });
      const db = await createDb(parseConfig(env.env));
      const insert = (id: string, url: string, key?: string) =>
        db('content_items').insert({
          id,
          source: 's',
          url,
          summary: 's',
          content: 'c',
          score: 1,
          analyzed_at: new Date(),
          created_at: new Date(),
          updated_at: new Date(),
          ...(key ? { url_key: key } : {}),
        });
      const keys = async () => Object.fromEntries((await db('content_items').orderBy('id').select('id', 'url_key')).map((r) => [r.id.slice(-1), r.url_key]));
      try {
        await db.migrate.latest({ migrationSource });
        await db.migrate.down({ migrationSource, name: '013_content_url_key' });
        expect(await db.schema.hasColumn('content_items', 'url_key')).toBe(false);
        await insert('01900000-0000-7000-8000-000000000001', 'https://EXAMPLE.com:443/m#x');
        await insert('01900000-0000-7000-8000-000000000002', 'https://example.com/m');
        await insert('01900000-0000-7000-8000-000000000003', 'https://other.example');
        await db.migrate.up({ migrationSource, name: '013_content_url_key' });
        expect(await keys()).toEqual({
          1: 'https://example.com/m',
          2: 'https://example.com/m#01900000-0000-7000-8000-000000000002',
          3: 'https://other.example/',
        });
        await expect(insert('01900000-0000-7000-8000-000000000004', 'https://x.example', 'https://other.example/')).rejects.toMatchObject({ code: '23505' });
        await db.migrate.down({ migrationSource, name: '013_content_url_key' });
        expect(await db.schema.hasColumn('content_items', 'url_key')).toBe(false);
        await expect(insert('01900000-0000-7000-8000-000000000005', 'https://other.example')).rejects.toMatchObject({ code: '23505' });
        await db.migrate.up({ migrationSource, name: '013_content_url_key' });
        expect(Object.keys(await keys())).toHaveLength(3);
        // A row inserted by SQL alone, with no key, is keyed by its url as written.
        await insert('01900000-0000-7000-8000-000000000006', 'https://sql.example/x');
        expect((await keys())[6]).toBe('https://sql.example/x');
      } finally {
        await db.destroy();
        await env.cleanup();
      }
    });
  }
});

describe('item 13: JSON nesting depth is bounded in the body parser', () => {
  it('a 200,000-deep JSON body to /api/content/batch answers 400 "nested too deeply", not 500', async () => {
    const depth = 200_000;
    const res = await alice.post('/api/content/batch', '['.repeat(depth) + ']'.repeat(depth));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: `JSON in request body is nested too deeply (at most ${MAX_JSON_DEPTH} levels of arrays and objects)` });
    // Every area gets it in its own shape, with the invalid_json code where the shape has one.
    const v1 = await t.anon.post('/v1/embeddings', `{"input":${'['.repeat(depth)}`);
    expect(v1.status).toBe(400);
    expect(v1.body.error.code).toBe('invalid_json');
  });

  it('64 levels are accepted and 65 refused; brackets and escaped quotes inside strings do not count', async () => {
    const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const ok = await alice.post('/api/content/batch', nested(MAX_JSON_DEPTH));
    expect(ok.status).toBe(200);
    expect(ok.body.errors).toEqual([{ index: 0, url: 'unknown', error: 'Item must be a JSON object' }]);
    expect((await alice.post('/api/content/batch', nested(MAX_JSON_DEPTH + 1))).status).toBe(400);
    const text = '"[{\\'.repeat(5_000);
    const stored = await alice.post('/api/content', item({ content: text, title: '\\' }));
    expect(stored.status).toBe(201);
    expect(stored.body.content).toBe(text);
  });
});

describe('item 18: content items are changed only by their creator or an admin', () => {
  for (const embedded of [false, true]) {
    it(`migration 005 on ${embedded ? 'PGlite' : 'Postgres'}: existing items get created_by null, a foreign key to users; down() removes both`, async () => {
      const env = await createTestEnv({ embedded });
      const db = await createDb(parseConfig(env.env));
      const insert = (id: string, extra: Record<string, unknown> = {}) =>
        db('content_items').insert({
          id,
          source: 's',
          url: `https://x.example/${id}`,
          summary: 's',
          content: 'c',
          score: 1,
          analyzed_at: new Date(),
          created_at: new Date(),
          updated_at: new Date(),
          ...extra,
        });
      try {
        await db.migrate.latest({ migrationSource });
        await db.migrate.down({ migrationSource, name: M005 });
        expect(await db.schema.hasColumn('content_items', 'created_by')).toBe(false);
        await insert('01900000-0000-7000-8000-000000000001');
        await db.migrate.up({ migrationSource, name: M005 });
        expect((await db('content_items').first()).created_by).toBeNull();
        await expect(insert('01900000-0000-7000-8000-000000000002', { url: 'https://x.example/2', created_by: 424242 })).rejects.toMatchObject({
          code: '23503',
        });
        await db.migrate.down({ migrationSource, name: M005 });
        expect(await db.schema.hasColumn('content_items', 'created_by')).toBe(false);
        await db.migrate.up({ migrationSource, name: M005 });
      } finally {
        await db.destroy();
        await env.cleanup();
      }
    });
  }

  it('an item records the user who created it in created_by', async () => {
    const created = (await alice.post('/api/content', item())).body;
    expect((await row(created.url)).created_by).toBe(ids.alice);
  });

  it("a common user's create onto another user's url is 409 {error} and leaves the item as it was; the creator's own upsert works", async () => {
    const mine = (await alice.post('/api/content', item({ score: 1 }))).body;
    const res = await bob.post('/api/content', item({ url: mine.url, score: 9, title: 'hijacked' }));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: NOT_OWNER_UPSERT });
    expect(await row(mine.url)).toMatchObject({ score: 1, title: mine.title, created_by: ids.alice });
    const again = await alice.post('/api/content', item({ url: mine.url, score: 2 }));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: mine.id, score: 2 });
  });

  it("a common user's delete of another user's item is 403 {error} and deletes nothing; the creator's delete works", async () => {
    const mine = (await alice.post('/api/content', item())).body;
    const res = await bob.delete(`/api/content/${mine.id}`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: NOT_OWNER_DELETE });
    expect(await row(mine.url)).toBeTruthy();
    expect((await bob.delete('/api/content/01900000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await alice.delete(`/api/content/${mine.id}`)).body).toEqual({ success: true });
  });

  it("an admin replaces and deletes another user's item; a replaced item keeps its creator", async () => {
    const mine = (await alice.post('/api/content', item({ score: 1 }))).body;
    const res = await admin.post('/api/content', item({ url: mine.url, score: 8 }));
    expect(res.status).toBe(200);
    expect(await row(mine.url)).toMatchObject({ score: 8, created_by: ids.alice });
    expect((await admin.delete(`/api/content/${mine.id}`)).status).toBe(200);
    expect(await row(mine.url)).toBeUndefined();
  });

  it("the role rule: an admin neither replaces nor deletes root's or another admin's items (one by one or in a batch); root does", async () => {
    const admin2 = await user('admin2', 10);
    for (const owner of [t.root, admin2]) {
      const theirs = (await owner.post('/api/content', item({ score: 2 }))).body;
      const replaced = await admin.post('/api/content', item({ url: theirs.url, score: 9 }));
      expect(replaced.status).toBe(409);
      expect(replaced.body).toEqual({ error: NOT_OWNER_UPSERT });
      const deleted = await admin.delete(`/api/content/${theirs.id}`);
      expect(deleted.status).toBe(403);
      expect(deleted.body).toEqual({ error: NOT_OWNER_DELETE });
      expect((await batch(admin, [item({ url: theirs.url, score: 9 })])).errors).toEqual([{ index: 0, url: theirs.url, error: NOT_OWNER_UPSERT }]);
      expect(await row(theirs.url)).toMatchObject({ score: 2 });
    }
    const admins = (await admin2.post('/api/content', item({ score: 2 }))).body;
    expect((await t.root.post('/api/content', item({ url: admins.url, score: 6 }))).status).toBe(200);
    expect(await row(admins.url)).toMatchObject({ score: 6, created_by: ids.admin2 });
    expect((await t.root.delete(`/api/content/${admins.id}`)).status).toBe(200);
  });

  it('a legacy item (created_by null) is replaced or deleted by admins only', async () => {
    const legacy = (await t.root.post('/api/content', item({ score: 3 }))).body;
    await t.platform.db('content_items').where({ id: legacy.id }).update({ created_by: null });
    for (const c of [alice, bob]) {
      expect((await c.post('/api/content', item({ url: legacy.url, score: 9 }))).status).toBe(409);
      expect((await c.delete(`/api/content/${legacy.id}`)).status).toBe(403);
    }
    expect((await batch(bob, [item({ url: legacy.url })])).errors).toEqual([{ index: 0, url: legacy.url, error: NOT_OWNER_UPSERT }]);
    expect(await row(legacy.url)).toMatchObject({ score: 3, created_by: null });
    expect((await admin.post('/api/content', item({ url: legacy.url, score: 4 }))).status).toBe(200);
    expect((await admin.delete(`/api/content/${legacy.id}`)).status).toBe(200);
  });

  it("a common user's batch reports entries onto another user's url per entry, stores the others, and changes nothing of theirs", async () => {
    const theirs = (await alice.post('/api/content', item({ score: 1 }))).body;
    const entries = [item(), item({ url: theirs.url, score: 9 }), item()];
    const res = await batch(bob, entries);
    expect(res).toMatchObject({ success: 2, failed: 1, total: 3 });
    expect(res.errors).toEqual([{ index: 1, url: theirs.url, error: NOT_OWNER_UPSERT }]);
    expect(res.created.map((c: { index: number }) => c.index)).toEqual([0, 2]);
    expect(await row(theirs.url)).toMatchObject({ score: 1, created_by: ids.alice });
    expect((await row(entries[0]!.url)).created_by).toBe(ids.bob);
    expect((await row(entries[2]!.url)).created_by).toBe(ids.bob);
    // Their own items are theirs to replace in a batch.
    expect(await batch(bob, [{ ...entries[0]!, score: 7 }])).toMatchObject({ success: 1, failed: 0 });
  });

  it("an admin's batch replaces another user's item and keeps its creator", async () => {
    const theirs = (await alice.post('/api/content', item({ score: 1 }))).body;
    const res = await batch(admin, [item({ url: theirs.url, score: 9 })]);
    expect(res).toMatchObject({ success: 1, failed: 0 });
    expect(await row(theirs.url)).toMatchObject({ score: 9, created_by: ids.alice });
  });

  it("the batch worker reads the submitter's role from Postgres when the job runs, not from the job", async () => {
    const theirs = (await alice.post('/api/content', item({ score: 1 }))).body;
    const run = async (owner: number | null) => {
      const outcome = await t.platform.jobs.run('content.batch', { items: [item({ url: theirs.url, score: 6 })] }, { owner, waitMs: 10_000 });
      expect(outcome.done).toBe(true);
      return outcome as { result?: unknown };
    };
    expect((await run(ids.bob!)).result).toMatchObject({ success: 0, errors: [{ index: 0, url: theirs.url, error: NOT_OWNER_UPSERT }] });
    expect((await run(null)).result).toMatchObject({ success: 0 }); // a job with no owner owns nothing
    await t.platform.db('users').where({ id: ids.bob }).update({ role: 10 });
    try {
      expect((await run(ids.bob!)).result).toMatchObject({ success: 1 });
    } finally {
      await t.platform.db('users').where({ id: ids.bob }).update({ role: 1 });
    }
    expect(await row(theirs.url)).toMatchObject({ score: 6, created_by: ids.alice });
    // A job whose submitter was disabled meanwhile fails once, for good: 403, not retried.
    await t.platform.db('users').where({ id: ids.bob }).update({ status: 2 });
    try {
      const healthy = await baseline(() => run(ids.alice!));
      const started = Date.now();
      await expect(run(ids.bob!)).rejects.toMatchObject({ status: 403 });
      // Not retried: a retry would wait at least 10 s (JOB_BACKOFF_MS 20 s, jitter ½).
      expect(Date.now() - started).toBeLessThan(Math.min(within(0, healthy), 9_000));
    } finally {
      await t.platform.db('users').where({ id: ids.bob }).update({ status: 1 });
    }
  });

  it('reading, listing and stats stay shared between users', async () => {
    const theirs = (await alice.post('/api/content', item())).body;
    expect((await bob.get(`/api/content/${theirs.id}`)).body).toEqual(theirs);
    const list = await bob.get(`/api/content?source=${SOURCE}&limit=1000`);
    expect(list.body.map((x: { id: string }) => x.id)).toContain(theirs.id);
    expect((await bob.get('/api/stats')).body.bySource[SOURCE]).toBeGreaterThan(0);
  });

  it('deleting a user keeps their items, which then belong to nobody (admin-only changes)', async () => {
    const temp = await user('temp');
    const theirs = (await temp.post('/api/content', item())).body;
    expect((await t.root.delete(`/api/user/${ids.temp}`)).status).toBe(200);
    expect(await row(theirs.url)).toMatchObject({ id: theirs.id, created_by: null });
    expect((await alice.delete(`/api/content/${theirs.id}`)).status).toBe(403);
  });
});

async function batch(c: HttpClient, entries: unknown[]) {
  const res = await c.post('/api/content/batch', entries);
  expect(res.status).toBe(200);
  return res.body;
}
