// The free-call recorder on real Postgres: which calls get a row of their own, what the aggregated rows say, what a
// flush writes (request counts, keys' last use) and when the timer writes a minute that is over (written against the
// survivors of the ledger mutation run, docs/mutation-testing.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageRecorder } from '../../src/accounts/usage.js';
import { parseConfig } from '../../src/config.js';
import { createDb, type Db, migrateLatest } from '../../src/db.js';
import type { Logger } from '../../src/log.js';
import { LOG_TYPE, type LogEntry } from '../../src/logs/schema.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';
import { until } from '../helpers/until.js';

let env: TestEnv;
let db: Db;
const warnings: string[] = [];
const log = { warn: (_: unknown, msg: string) => warnings.push(msg) } as unknown as Logger;
/** Long enough that no timer fires during a test that flushes by hand. */
const NO_TIMER = 3_600_000;

beforeAll(async () => {
  env = await createTestEnv();
  db = await createDb(parseConfig(env.env));
  await migrateLatest(db);
});
afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

let seq = 0;
async function newUser(): Promise<number> {
  const name = `free-${++seq}`;
  const [u] = await db('users').insert({ username: name, password_hash: 'x', display_name: name, role: 1, status: 1, quota: 0 }).returning('id');
  return u.id as number;
}
async function newKey(userId: number): Promise<number> {
  const [k] = await db('tokens')
    .insert({ user_id: userId, name: 'k', key_hash: `free-key-${++seq}`.padEnd(64, '0'), created_time: 0, accessed_time: 0, key_hint: 'sk-…', status: 1 })
    .returning('id');
  return k.id as number;
}
const call = (userId: number, tokenId: number | null, modelName: string, createdAt: number, more: Partial<LogEntry> = {}): LogEntry => ({
  type: LOG_TYPE.consume,
  userId,
  tokenId,
  modelName,
  createdAt,
  content: `${modelName} call`,
  ...more,
});
const rowsOf = (userId: number) =>
  db('logs')
    .where({ user_id: userId, type: LOG_TYPE.consume })
    .orderBy('id')
    .select('token_id', 'model_name', 'request_count', 'prompt_tokens', 'elapsed_time', 'created_at', 'request_id', 'content');
const requestCount = async (userId: number) => Number((await db('users').where({ id: userId }).first('request_count')).request_count);
/** The start (Unix seconds) of the minute `back` minutes before this one. */
const minuteStart = (back: number) => (Math.floor(Date.now() / 60_000) - back) * 60;

describe('the free-call recorder on Postgres', () => {
  it('aggregates one row per (user, key, model, minute): its call count, summed tokens, mean elapsed time, latest time and a summary; a lone call keeps its own request id and content', async () => {
    const u1 = await newUser();
    const u2 = await newUser();
    const [k1, k2] = [await newKey(u1), await newKey(u1)];
    const m = minuteStart(10);
    const recorder = new UsageRecorder(db, log, 0, NO_TIMER);
    await recorder.record(u1, k1, call(u1, k1, 'agg-m1', m + 20, { promptTokens: 3, elapsedMs: 10, requestId: 'a1' }));
    await recorder.record(u1, k1, call(u1, k1, 'agg-m1', m + 5, { promptTokens: 4, elapsedMs: 30, requestId: 'a2' }));
    await recorder.record(u1, k2, call(u1, k2, 'agg-m1', m + 6, { promptTokens: 1, elapsedMs: 8, requestId: 'b1', content: 'other key' }));
    await recorder.record(u1, k1, call(u1, k1, 'agg-m2', m + 7, { requestId: 'c1', content: 'other model' }));
    await recorder.record(u1, k1, call(u1, k1, 'agg-m1', m + 65, { requestId: 'd1', content: 'next minute' }));
    await recorder.record(u2, null, call(u2, null, 'agg-m1', m + 8, { requestId: 'e1', content: 'no key' }));
    await recorder.record(u2, null); // a free call that is not logged, only counted
    expect(await rowsOf(u1)).toEqual([]);
    const before = Math.floor(Date.now() / 1000);
    await recorder.flush();
    const after = Math.floor(Date.now() / 1000);
    const hhmm = new Date(m * 1000).toISOString().slice(11, 16);
    expect(await rowsOf(u1)).toEqual(
      expect.arrayContaining([
        {
          token_id: k1,
          model_name: 'agg-m1',
          request_count: 2,
          prompt_tokens: 7,
          elapsed_time: 20,
          created_at: m + 20,
          request_id: null,
          content: `agg-m1: 2 free calls in the minute from ${hhmm} UTC, 7 tokens`,
        },
        { token_id: k2, model_name: 'agg-m1', request_count: 1, prompt_tokens: 1, elapsed_time: 8, created_at: m + 6, request_id: 'b1', content: 'other key' },
        {
          token_id: k1,
          model_name: 'agg-m2',
          request_count: 1,
          prompt_tokens: 0,
          elapsed_time: 0,
          created_at: m + 7,
          request_id: 'c1',
          content: 'other model',
        },
        {
          token_id: k1,
          model_name: 'agg-m1',
          request_count: 1,
          prompt_tokens: 0,
          elapsed_time: 0,
          created_at: m + 65,
          request_id: 'd1',
          content: 'next minute',
        },
      ]),
    );
    expect(await rowsOf(u1)).toHaveLength(4);
    expect((await rowsOf(u2)).map((r) => [r.token_id, r.request_id, r.content])).toEqual([[null, 'e1', 'no key']]);
    expect([await requestCount(u1), await requestCount(u2)]).toEqual([5, 2]);
    for (const k of [k1, k2]) {
      const { accessed_time } = await db('tokens').where({ id: k }).first('accessed_time');
      expect(accessed_time).toBeGreaterThanOrEqual(before);
      expect(accessed_time).toBeLessThanOrEqual(after);
    }
    expect(warnings).toEqual([]);
  });

  it('a flush writes the request count of calls that have no row, and the rows of calls made without a key', async () => {
    const u = await newUser();
    const recorder = new UsageRecorder(db, log, 0, NO_TIMER);
    await recorder.record(u, null);
    await recorder.record(u, null);
    await recorder.flush();
    expect(await requestCount(u)).toBe(2);
    await recorder.record(u, null, call(u, null, 'keyless', minuteStart(3), { requestId: 'k1' }));
    await recorder.flush();
    expect((await rowsOf(u)).map((r) => r.request_id)).toEqual(['k1']);
    expect(await requestCount(u)).toBe(3);
    expect(warnings).toEqual([]);
  });

  it("calls with rows of their own: the flush still stamps their key's last use, and writes no warning", async () => {
    const u = await newUser();
    const k = await newKey(u);
    const recorder = new UsageRecorder(db, log, 60, NO_TIMER);
    await recorder.record(u, k, call(u, k, 'own-row', minuteStart(0)));
    expect(await rowsOf(u)).toHaveLength(1);
    const before = Math.floor(Date.now() / 1000);
    await recorder.flush();
    expect(Number((await db('tokens').where({ id: k }).first('accessed_time')).accessed_time)).toBeGreaterThanOrEqual(before);
    expect(await requestCount(u)).toBe(1);
    expect(warnings).toEqual([]);
  });

  it('the per-minute limit of own rows counts each (user, key, model) apart', async () => {
    const u = await newUser();
    const [k1, k2] = [await newKey(u), await newKey(u)];
    const recorder = new UsageRecorder(db, log, 1, NO_TIMER);
    const at = minuteStart(0);
    await recorder.record(u, k1, call(u, k1, 'limit-a', at));
    await recorder.record(u, k2, call(u, k2, 'limit-a', at));
    await recorder.record(u, k1, call(u, k1, 'limit-b', at));
    // Each is the first of its (user, key, model): written at once, before any flush.
    expect((await rowsOf(u)).map((r) => [r.token_id, r.model_name])).toEqual([
      [k1, 'limit-a'],
      [k2, 'limit-a'],
      [k1, 'limit-b'],
    ]);
    await recorder.flush();
  });

  it("a late call of a minute still counts against that minute's limit after another (user, key, model) moved on to the next minute", async () => {
    const u = await newUser();
    const recorder = new UsageRecorder(db, log, 2, NO_TIMER);
    const m = minuteStart(5);
    await recorder.record(u, null, call(u, null, 'late-x', m + 1));
    await recorder.record(u, null, call(u, null, 'late-x', m + 2));
    await recorder.record(u, null, call(u, null, 'late-y', m + 61));
    await recorder.record(u, null, call(u, null, 'late-x', m + 3)); // the third of late-x's minute: aggregated
    expect((await rowsOf(u)).filter((r) => r.model_name === 'late-x')).toHaveLength(2);
    await recorder.flush();
    expect((await rowsOf(u)).filter((r) => r.model_name === 'late-x')).toHaveLength(3);
  });

  it("the timer writes the aggregated rows of a minute that is over, and keeps this minute's until it ends", async () => {
    // Both calls must fall in this minute's clock: not too near its end.
    const second = new Date().getUTCSeconds();
    if (second > 50) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    const u = await newUser();
    const recorder = new UsageRecorder(db, log, 0, 20);
    await recorder.record(u, null, call(u, null, 'tick-past', minuteStart(2) + 1));
    await recorder.record(u, null, call(u, null, 'tick-now', Math.floor(Date.now() / 1000)));
    const rows = await until(
      'the past minute written',
      () => rowsOf(u),
      (r) => r.length > 0,
    );
    expect(rows.map((r) => r.model_name)).toEqual(['tick-past']);
    expect(await requestCount(u)).toBe(2);
    await recorder.flush();
    expect((await rowsOf(u)).map((r) => r.model_name)).toEqual(['tick-past', 'tick-now']);
  });
});
