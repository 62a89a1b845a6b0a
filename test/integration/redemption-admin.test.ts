// Redemption codes over HTTP against real Postgres and Redis: what an admin is told and what the admin log keeps when
// codes are made, changed, refused and deleted (written against the survivors of the redemption mutation run,
// docs/mutation-testing.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let alice: HttpClient;

beforeAll(async () => {
  t = await startTestApp({ workers: false });
  expect((await t.root.post('/api/user/', { username: 'codeuser', password: 'codeuser-password' })).status).toBe(201);
  alice = new HttpClient(t.url);
  await alice.login('codeuser', 'codeuser-password');
});

afterAll(async () => {
  await t?.close();
});

/** Makes `count` codes named `name`: their ids, lowest first, and keys. */
async function makeCodes(name: string, quota: number, count = 1): Promise<{ ids: number[]; keys: string[] }> {
  const res = await t.root.post('/api/redemption/', { name, quota, count });
  expect(res.status, res.text).toBe(201);
  const keys = res.body.data as string[];
  const rows = await t.platform.db('redemptions').whereIn('key', keys).orderBy('id').select('id');
  return { ids: rows.map((r: { id: number }) => r.id), keys };
}

/** The admin log's rows that name code #id (its exact number, not a longer one). */
async function logRowsNaming(id: number): Promise<string[]> {
  const rows = await t.platform.db('logs').where('content', 'like', `%redemption code%#${id}%`).orderBy('id').pluck('content');
  return (rows as string[]).filter((c) => new RegExp(`#${id}(?!\\d)`).test(c));
}

describe('redemption codes: what admins are told and what the log keeps', () => {
  it('an unknown code is refused with "Invalid redemption code", not with the message of a used or disabled one', async () => {
    const res = await alice.post('/api/user/topup', { key: '0'.repeat(32) });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, message: 'Invalid redemption code' });
  });

  it('creating one code logs it as "#id"; creating several logs "#first-#last"', async () => {
    const one = await makeCodes('single-code', 4);
    expect(await logRowsNaming(one.ids[0]!)).toEqual([`Created 1 redemption code(s) #${one.ids[0]} "single-code" worth 4 quota each by root (#1)`]);
    const three = await makeCodes('three-codes', 5, 3);
    const [first, , last] = three.ids;
    expect(await logRowsNaming(first!)).toEqual([`Created 3 redemption code(s) #${first}-#${last} "three-codes" worth 5 quota each by root (#1)`]);
  });

  it('a used code cannot be changed: 400 "already been used", the row and the log as they were', async () => {
    const { ids, keys } = await makeCodes('spent', 6);
    expect((await alice.post('/api/user/topup', { key: keys[0] })).status).toBe(200);
    const before = await t.platform.db('redemptions').where({ id: ids[0] }).first();
    expect(before.status).toBe(3);
    const res = await t.root.put('/api/redemption/', { id: ids[0], name: 'renamed', quota: 600, status: 1 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, message: 'This redemption code has already been used' });
    const statusOnly = await t.root.put('/api/redemption/?status_only=1', { id: ids[0], status: 1 });
    expect(statusOnly.status).toBe(400);
    expect(await t.platform.db('redemptions').where({ id: ids[0] }).first()).toEqual(before);
    expect(await logRowsNaming(ids[0]!)).toEqual([`Created 1 redemption code(s) #${ids[0]} "spent" worth 6 quota each by root (#1)`]);
  });

  it('a change logs each field that changed (name, quota, status), joined by ", "; a change to the same values logs nothing', async () => {
    const { ids } = await makeCodes('before', 7);
    const id = ids[0]!;
    expect((await t.root.put('/api/redemption/', { id, name: 'after', quota: 8 })).status).toBe(200);
    expect((await t.root.put('/api/redemption/?status_only=1', { id, status: 2 })).status).toBe(200);
    const same = await t.root.put('/api/redemption/', { id, name: 'after', quota: 8, status: 2 });
    expect(same.status).toBe(200);
    expect(same.body.data).toMatchObject({ id, name: 'after', quota: 8, status: 2 });
    expect(await logRowsNaming(id)).toEqual([
      `Created 1 redemption code(s) #${id} "before" worth 7 quota each by root (#1)`,
      `Changed redemption code #${id}: name "before" → "after", quota 7 → 8 by root (#1)`,
      `Changed redemption code #${id}: status 1 → 2 by root (#1)`,
    ]);
  });

  it('reading, changing or deleting a code that does not exist is 404 "Redemption code not found"', async () => {
    const { ids } = await makeCodes('gone-soon', 3);
    const id = ids[0]!;
    expect((await t.root.delete(`/api/redemption/${id}`)).status).toBe(200);
    const notFound = { success: false, message: 'Redemption code not found' };
    for (const res of [
      await t.root.get(`/api/redemption/${id}`),
      await t.root.put('/api/redemption/', { id, quota: 9 }),
      await t.root.delete(`/api/redemption/${id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual(notFound);
    }
  });
});
