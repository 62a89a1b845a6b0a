// An admin's channel serves the admin and the users below them, never root (issue 22 item 6 follow-up): not root's
// texts (routing), not root's vectors later (the cache), not root's price. Two fake upstreams: root's and the admin's.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { generate } from '../../src/embeddings/generate.js';
import { up as purgeCache } from '../../migrations/014_channel_cache_purge.js';

let t: TestApp;
let rootUp: FakeOpenAI;
let adminUp: FakeOpenAI;
const keys: Record<'root' | 'admin' | 'otherAdmin' | 'common', string> = { root: '', admin: '', otherAdmin: '', common: '' };
let admin: HttpClient;

const QUOTA = 1_000_000;
const embed = (who: keyof typeof keys, model: string, input: string[]) =>
  t.anon.post('/v1/embeddings', { model, input, encoding_format: 'float' }, { authorization: `Bearer ${keys[who]}` });
const models = async (who: keyof typeof keys) =>
  ((await t.anon.get('/v1/models', { authorization: `Bearer ${keys[who]}` })).body.data as { id: string }[]).map((m) => m.id);
const quotaOf = async (username: string) => (await t.platform.db('users').where({ username }).first('quota')).quota as number;
const inputsSeen = (up: FakeOpenAI) => up.calls.flatMap((c) => (Array.isArray(c.body.input) ? c.body.input : [c.body.input]));

async function channel(by: HttpClient, up: FakeOpenAI, model: string, priority: number, price: number): Promise<number> {
  const res = await by.post('/api/channel/', {
    type: 'openai',
    name: `${model}-${priority}`,
    key: `sk-${model}-${priority}-0123456789`,
    base_url: up.url,
    models: model,
    price,
    priority,
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id;
}

async function keyOf(username: string, role: number): Promise<{ client: HttpClient; key: string }> {
  const made = await t.root.post('/api/user/', { username, password: `${username}-password`, role, quota: QUOTA });
  expect(made.status, made.text).toBe(201);
  const client = new HttpClient(t.url);
  await client.login(username, `${username}-password`);
  return { client, key: (await client.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key };
}

beforeAll(async () => {
  rootUp = await new FakeOpenAI().start();
  adminUp = await new FakeOpenAI().start();
  t = await startTestApp({ workers: false });
  await t.platform.db('users').where({ username: 'root' }).update({ quota: QUOTA });
  keys.root = (await t.root.post('/api/token/', { name: 'root-key', unlimited_quota: true })).body.data.key;
  const a = await keyOf('routing-admin', 10);
  admin = a.client;
  keys.admin = a.key;
  keys.otherAdmin = (await keyOf('routing-other-admin', 10)).key;
  keys.common = (await keyOf('routing-common', 1)).key;
});
afterAll(async () => {
  await t?.close();
  await rootUp?.stop();
  await adminUp?.stop();
});
beforeEach(() => {
  rootUp.calls.length = 0;
  adminUp.calls.length = 0;
});

describe("an admin's channel does not serve root", () => {
  it("root's call never reaches an admin's channel, whatever its priority; the admin's own calls and a common user's do", async () => {
    await channel(t.root, rootUp, 'route-model', 0, 10);
    await channel(admin, adminUp, 'route-model', 100, 10);
    const root = await embed('root', 'route-model', ['root secret text']);
    expect(root.status, root.text).toBe(200);
    expect(inputsSeen(adminUp)).toEqual([]);
    expect(inputsSeen(rootUp)).toEqual(['root secret text']);
    // Another admin is not below this admin either.
    expect((await embed('otherAdmin', 'route-model', ['other admin text'])).status).toBe(200);
    expect(inputsSeen(adminUp)).toEqual([]);
    // The rule serves the maker and the users below: their calls take the admin's channel (priority 100).
    for (const who of ['admin', 'common'] as const) expect((await embed(who, 'route-model', [`${who} text`])).status).toBe(200);
    expect(inputsSeen(adminUp)).toEqual(['admin text', 'common text']);
    expect(inputsSeen(rootUp)).toEqual(['root secret text', 'other admin text']);
  });

  it("a model only an admin's channel serves is unknown to root (404, not listed), and known to the admin and a common user", async () => {
    await channel(admin, adminUp, 'admin-only-model', 0, 10);
    const root = await embed('root', 'admin-only-model', ['root text']);
    expect(root.status, root.text).toBe(404);
    expect(root.body.error.code).toBe('model_not_found');
    expect(await models('root')).not.toContain('admin-only-model');
    expect(await models('otherAdmin')).not.toContain('admin-only-model');
    expect(inputsSeen(adminUp)).toEqual([]);
    for (const who of ['admin', 'common'] as const) {
      expect(await models(who)).toContain('admin-only-model');
      expect((await embed(who, 'admin-only-model', [`${who} only`])).status).toBe(200);
    }
    expect(inputsSeen(adminUp)).toEqual(['admin only', 'common only']);
  });

  it("a vector an admin's channel answered is never served to root from the cache; root's channel's vectors are cached for everyone", async () => {
    await channel(t.root, rootUp, 'cache-model', 0, 10);
    const adminChannel = await channel(admin, adminUp, 'cache-model', 100, 10);
    adminUp.fixed.set('shared text', [9, 9, 9, 9]);
    rootUp.fixed.set('shared text', [0.5, 0.25, 0.125, 1]);
    const common = await embed('common', 'cache-model', ['shared text']);
    expect(common.body.data[0].embedding).toEqual([9, 9, 9, 9]);
    const root = await embed('root', 'cache-model', ['shared text']);
    expect(root.status, root.text).toBe(200);
    expect(root.body.data[0].embedding).toEqual([0.5, 0.25, 0.125, 1]);
    expect(inputsSeen(rootUp)).toEqual(['shared text']);
    // Nor once the admin's channel is gone.
    expect((await admin.delete(`/api/channel/${adminChannel}`)).status).toBe(200);
    expect((await embed('root', 'cache-model', ['shared text'])).body.data[0].embedding).toEqual([0.5, 0.25, 0.125, 1]);
    // Root's channel's answer was cached: asked again (by anyone), it does not go upstream.
    expect((await embed('common', 'cache-model', ['shared text'])).body.data[0].embedding).toEqual([0.5, 0.25, 0.125, 1]);
    expect(inputsSeen(rootUp)).toEqual(['shared text']);
    expect(inputsSeen(adminUp)).toEqual(['shared text']);
  });

  it("a deleted maker's channel does not become one that serves root: it is disabled, and root's call does not reach it", async () => {
    // Admin B makes a channel; root demotes B; admin A (now above B) points it at A's server; A deletes B.
    const b = await keyOf('routing-maker-b', 10);
    const model = 'orphan-model';
    const id = await channel(b.client, rootUp, model, 0, 1);
    const bId = (await t.platform.db('users').where({ username: 'routing-maker-b' }).first('id')).id as number;
    expect((await t.root.put(`/api/user/${bId}`, { role: 1 })).status).toBe(200);
    const edit = await admin.put('/api/channel/', { id, base_url: adminUp.url, key: 'sk-admin-takes-over-0123', priority: 100 });
    expect(edit.status, edit.text).toBe(200);
    expect((await admin.delete(`/api/user/${bId}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_200)); // the directory reloads channels every 2 s
    const row = await t.platform.db('channels').where({ id }).first();
    expect(row.created_by).toBeNull();
    expect(row.status).toBe(2);
    expect(row.status_reason).toMatch(/maker .* was deleted/);
    const res = await embed('root', model, ['root text for an orphan']);
    expect(res.status).not.toBe(200);
    expect(inputsSeen(adminUp)).not.toContain('root text for an orphan');
  });

  it("root's price is computed over root's channels only: an admin's never-routed channel with a huge price does not raise it", async () => {
    await channel(t.root, rootUp, 'price-model', 0, 10);
    await channel(admin, adminUp, 'price-model', -100, 1_000_000);
    const before = await quotaOf('root');
    const res = await embed('root', 'price-model', ['a priced text']);
    expect(res.status, res.text).toBe(200);
    expect(res.body.usage.prompt_tokens).toBe(10); // the fake's count
    expect(before - (await quotaOf('root'))).toBe(1); // ceil(10 × 10 / 1000), not 10,000
    // The admin's own calls pay the admin's own price.
    const adminBefore = await quotaOf('routing-admin');
    expect((await embed('admin', 'price-model', ['an admin text'])).status).toBe(200);
    expect(adminBefore - (await quotaOf('routing-admin'))).toBe(10_000);
    expect(inputsSeen(adminUp)).toEqual([]);
  });

  it("a worker's upstream job (queued by an older API) follows the rule too: by its caller, or, without one, root's channels only", async () => {
    await channel(t.root, rootUp, 'job-model', 0, 10);
    await channel(admin, adminUp, 'job-model', 100, 10);
    const id = async (username: string) => (await t.platform.db('users').where({ username }).first('id')).id as number;
    const job = async (caller: number | undefined, text: string) =>
      (await generate(t.platform, [{ model: 'job-model', inputs: [text], tokens: [3], caller }]))[0]!;
    for (const [caller, text] of [
      [await id('root'), 'job root'],
      [undefined, 'job nobody'],
      [await id('routing-common'), 'job common'],
    ] as const)
      expect((await job(caller, text)).ok).toBe(true);
    expect(inputsSeen(rootUp)).toEqual(['job root', 'job nobody']);
    expect(inputsSeen(adminUp)).toEqual(['job common']);
  });

  it("migration 014 drops what was cached, before the rule, for the models an admin's channel serves; root-only models keep theirs", async () => {
    await channel(t.root, rootUp, 'purge-root-model', 0, 10);
    await channel(admin, adminUp, 'purge-admin-model,purge-other', 0, 10);
    const row = (model: string) => ({
      model,
      dimensions: 0,
      input_hash: model
        .padEnd(64, '0')
        .slice(0, 64)
        .replace(/[^0-9a-f]/g, 'a'),
      vector: Buffer.alloc(16),
      tokens: 1,
    });
    await t.platform.db('embedding_cache').insert(['purge-root-model', 'purge-admin-model', 'purge-other'].map(row));
    await purgeCache(t.platform.db);
    expect((await t.platform.db('embedding_cache').where('model', 'like', 'purge-%').pluck('model')).sort()).toEqual(['purge-root-model']);
  });
});
