// User groups (one-api's `group`): a user's calls take only the channels that serve their group, and every priced call
// costs its price times the group's ratio (GROUP_RATIO; a group it does not name: 1). Defaults keep the old behaviour:
// every user and channel in 'default', ratio 1. Two fake upstreams: one behind the 'default' channels, one behind 'vip's.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { modelPrice } from '../../src/embeddings/batch-service.js';
import { groupRatio } from '../../src/embeddings/models.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let defaultUp: FakeOpenAI;
let vipUp: FakeOpenAI;

const QUOTA = 1_000_000;
const PRICE = 1_000; // quota per 1K tokens: a call's cost is its tokens times the ratio
const RATIOS = { vip: 2.5, cheap: 0.3 };

interface Member {
  id: number;
  key: string;
  client: HttpClient;
}
const members: Record<'vip' | 'plain' | 'cheap' | 'stranger', Member> = {} as never;

const embed = (m: Member, model: string, input: string[]) =>
  t.anon.post('/v1/embeddings', { model, input, encoding_format: 'float' }, { authorization: `Bearer ${m.key}` });
const models = async (m: Member) => ((await t.anon.get('/v1/models', { authorization: `Bearer ${m.key}` })).body.data as { id: string }[]).map((x) => x.id);
const quotaOf = async (m: Member) => Number((await t.platform.db('users').where({ id: m.id }).first('quota')).quota);
const lastConsume = async (m: Member) => t.platform.db('logs').where({ user_id: m.id, type: 2 }).orderBy('id', 'desc').first();
const inputsSeen = (up: FakeOpenAI) => up.calls.flatMap((c) => (Array.isArray(c.body.input) ? c.body.input : [c.body.input]));

async function channel(up: FakeOpenAI, model: string, priority: number, group?: string): Promise<number> {
  const res = await t.root.post('/api/channel/', {
    type: 'openai',
    name: `${model}-${group ?? 'unset'}-${priority}`,
    key: `sk-${model}-${priority}-0123456789`,
    base_url: up.url,
    models: model,
    price: PRICE,
    priority,
    ...(group === undefined ? {} : { group }),
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id;
}

/** A common user (in `group`, or left out for the default), signed in, with an unlimited key: only the user's quota moves. */
async function member(username: string, group?: string): Promise<Member> {
  const made = await t.root.post('/api/user/', { username, password: `${username}-password`, quota: QUOTA, ...(group === undefined ? {} : { group }) });
  expect(made.status, made.text).toBe(201);
  const client = new HttpClient(t.url);
  expect((await client.login(username, `${username}-password`)).status).toBe(200);
  const key = (await client.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key as string;
  return { id: made.body.data.id, key, client };
}

beforeAll(async () => {
  defaultUp = await new FakeOpenAI().start();
  vipUp = await new FakeOpenAI().start();
  t = await startTestApp({ env: { GROUP_RATIO: JSON.stringify(RATIOS), LOCAL_MODEL_PRICE: String(PRICE) } });
  // 'grouped-model': the default group's channel has the higher priority; the vip group's is its only other one.
  await channel(defaultUp, 'grouped-model', 100); // no group given: 'default'
  await channel(vipUp, 'grouped-model', 0, 'vip');
  await channel(vipUp, 'vip-only-model', 0, 'vip');
  await channel(defaultUp, 'shared-model', 0, 'default, vip,cheap');
  members.vip = await member('group-vip', 'vip');
  members.plain = await member('group-plain');
  members.cheap = await member('group-cheap', 'cheap');
  members.stranger = await member('group-stranger', 'unnamed'); // a group GROUP_RATIO does not name
}, 60_000);
afterAll(async () => {
  await t?.close();
  await defaultUp?.stop();
  await vipUp?.stop();
});
beforeEach(() => {
  defaultUp.calls.length = 0;
  vipUp.calls.length = 0;
});

describe('users have a group', () => {
  it('a user made without one is in default; an admin sets it when creating and changing a user; /api/user/self shows it', async () => {
    expect((await members.plain.client.get('/api/user/self')).body.data.group).toBe('default');
    expect((await members.vip.client.get('/api/user/self')).body.data.group).toBe('vip');
    expect((await t.root.get(`/api/user/${members.cheap.id}`)).body.data.group).toBe('cheap');
    const bad = await t.root.post('/api/user/', { username: 'group-bad', password: 'group-bad-password', group: 'no spaces, please' });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.text).toMatch(/group/);
    expect((await t.root.put(`/api/user/${members.plain.id}`, { group: '' })).status).toBe(400);
    // The admins' group list (one-api's GET /api/group/): GROUP_RATIO's names and the default one.
    const listed = await t.root.get('/api/group/');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toEqual(['cheap', 'default', 'vip']);
    expect((await members.plain.client.get('/api/group/')).status).toBe(403);
  });

  it("a changed group applies to the user's next call (their cached credentials are forgotten), with a manage row saying so", async () => {
    const mover = await member('group-mover');
    const before = await embed(mover, 'grouped-model', ['mover before']);
    expect(before.status, before.text).toBe(200);
    expect(inputsSeen(defaultUp)).toEqual(['mover before']);
    const changed = await t.root.put(`/api/user/${mover.id}`, { group: 'vip' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data.group).toBe('vip');
    expect((await embed(mover, 'grouped-model', ['mover after'])).status).toBe(200);
    expect(inputsSeen(vipUp)).toEqual(['mover after']);
    expect(inputsSeen(defaultUp)).toEqual(['mover before']);
    const manage = await t.platform.db('logs').where({ user_id: mover.id, type: 3 }).orderBy('id', 'desc').first();
    expect(manage.content).toContain('group default → vip');
  });
});

describe('routing by group', () => {
  it("a vip user's calls take only the channels serving vip: the default group's channel of higher priority is never called", async () => {
    for (let i = 0; i < 4; i++) {
      const res = await embed(members.vip, 'grouped-model', [`vip text ${i}`]);
      expect(res.status, res.text).toBe(200);
    }
    expect(inputsSeen(defaultUp)).toEqual([]);
    expect(inputsSeen(vipUp)).toEqual(['vip text 0', 'vip text 1', 'vip text 2', 'vip text 3']);
    // A default user's take the default channel (priority 100) as before, and never the vip one.
    for (let i = 0; i < 2; i++) expect((await embed(members.plain, 'grouped-model', [`plain text ${i}`])).status).toBe(200);
    expect(inputsSeen(defaultUp)).toEqual(['plain text 0', 'plain text 1']);
    expect(inputsSeen(vipUp)).toHaveLength(4);
  });

  it("a default user never reaches a vip-only channel: its model is unknown to them (404, not in /v1/models); a vip user's is listed and served", async () => {
    const refused = await embed(members.plain, 'vip-only-model', ['plain wants vip']);
    expect(refused.status, refused.text).toBe(404);
    expect(refused.body.error.code).toBe('model_not_found');
    expect(inputsSeen(vipUp)).toEqual([]);
    expect(await models(members.plain)).not.toContain('vip-only-model');
    expect(await models(members.stranger)).not.toContain('vip-only-model');
    expect(await models(members.plain)).toEqual(expect.arrayContaining(['grouped-model', 'shared-model', 'local-hash-v1']));
    expect(await models(members.vip)).toEqual(expect.arrayContaining(['vip-only-model', 'grouped-model', 'shared-model', 'local-hash-v1']));
    expect((await embed(members.vip, 'vip-only-model', ['vip wants vip'])).status).toBe(200);
    expect(inputsSeen(vipUp)).toEqual(['vip wants vip']);
  });

  it('a channel serving several groups ("default, vip,cheap") serves each; a user of a group no channel serves finds no upstream model', async () => {
    for (const who of [members.vip, members.plain]) expect((await embed(who, 'shared-model', [`shared ${who.id}`])).status).toBe(200);
    expect(inputsSeen(defaultUp)).toEqual([`shared ${members.vip.id}`, `shared ${members.plain.id}`]);
    const none = await embed(members.stranger, 'grouped-model', ['stranger text']);
    expect(none.status, none.text).toBe(404);
    expect(await models(members.stranger)).toEqual(['local-hash-v1', 'use-lite']);
  });
});

describe('the group ratio', () => {
  /** One call by `m`: the quota it took, the consume row's quota, and its usage's tokens. */
  async function charged(m: Member, model: string, text: string) {
    const before = await quotaOf(m);
    const res = await embed(m, model, [text]);
    expect(res.status, res.text).toBe(200);
    const tokens = res.body.usage.prompt_tokens as number;
    expect(tokens).toBeGreaterThan(0);
    return { taken: before - (await quotaOf(m)), logged: Number((await lastConsume(m)).quota), tokens };
  }

  it('a relayed call costs its price times the group ratio, taken from the quota and written in its log row', async () => {
    const vip = await charged(members.vip, 'grouped-model', 'priced vip text');
    expect(vip.taken).toBe(Math.ceil(vip.tokens * RATIOS.vip));
    expect(vip.logged).toBe(vip.taken);
    const cheap = await charged(members.cheap, 'shared-model', 'priced cheap text');
    expect(cheap.taken).toBe(Math.ceil(cheap.tokens * RATIOS.cheap));
    expect(cheap.logged).toBe(cheap.taken);
  });

  it('a built-in model call costs LOCAL_MODEL_PRICE times the group ratio', async () => {
    const vip = await charged(members.vip, 'local-hash-v1', 'a built-in model text for the vip group');
    expect(vip.taken).toBe(Math.ceil(vip.tokens * RATIOS.vip));
    expect(vip.logged).toBe(vip.taken);
  });

  it("defaults unchanged: the default group's calls and those of a group GROUP_RATIO does not name cost the price (ratio 1)", async () => {
    for (const [m, model] of [
      [members.plain, 'grouped-model'],
      [members.plain, 'local-hash-v1'],
      [members.stranger, 'local-hash-v1'],
    ] as const) {
      const c = await charged(m, model, `unratioed text for ${m.id} on ${model}`);
      expect(c.taken).toBe(c.tokens);
      expect(c.logged).toBe(c.tokens);
    }
    // Unset, GROUP_RATIO is {"default":1}: every group's ratio is 1.
    const plain = parseConfig({});
    expect(plain.GROUP_RATIO).toEqual({ default: 1 });
    expect(['default', 'vip', 'constructor', '__proto__'].map((g) => groupRatio(plain, g))).toEqual([1, 1, 1, 1]);
  });

  it("a batch's lines are priced at the group's ratio too (the batches' price is the same resolved price)", async () => {
    const user = await t.platform.db('users').where({ id: members.vip.id }).first();
    expect(await modelPrice(t.platform, user, 'grouped-model')).toBe(PRICE * RATIOS.vip);
    expect(await modelPrice(t.platform, { ...user, group: 'default' }, 'grouped-model')).toBe(PRICE);
  });

  it('GROUP_RATIO must be a JSON object of group names to ratios from 0 to 1000', () => {
    for (const bad of ['[1]', '{"vip":"2"}', '{"vip":-1}', '{"vip":1001}', '{"no spaces":1}', 'vip=2', 'null']) {
      expect(() => parseConfig({ GROUP_RATIO: bad }), bad).toThrow(/GROUP_RATIO/);
    }
    expect(parseConfig({ GROUP_RATIO: '{"vip":0,"default":1.2}' }).GROUP_RATIO).toEqual({ vip: 0, default: 1.2 });
  });
});
