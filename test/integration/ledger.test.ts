// The quota ledger on real Postgres: operations made at the same time share statements, and every limit still holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createDb, type Db, migrateLatest } from '../../src/db.js';
import { type Payer, QuotaLedger } from '../../src/accounts/ledger.js';
import { LOG_TYPE, type LogEntry } from '../../src/logs/schema.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';

let env: TestEnv;
let db: Db;
let ledger: QuotaLedger;

beforeAll(async () => {
  env = await createTestEnv();
  db = await createDb(parseConfig(env.env));
  await migrateLatest(db);
  ledger = new QuotaLedger(db, { reservationTtlMs: 60_000 });
});
afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

let seq = 0;
async function newPayer(quota: number, token?: { remain: number } | 'unlimited'): Promise<Payer> {
  const name = `ledger-${++seq}`;
  const [u] = await db('users').insert({ username: name, password_hash: 'x', display_name: name, role: 1, status: 1, quota }).returning('id');
  const userId = u.id as number;
  if (!token) return { userId, token: null };
  const [k] = await db('tokens')
    .insert({
      user_id: userId,
      name: 'k',
      key_hash: name.padEnd(64, '0'),
      created_time: 0,
      accessed_time: 0,
      key_hint: 'sk-…',
      status: 1,
      remain_quota: token === 'unlimited' ? 0 : token.remain,
      unlimited_quota: token === 'unlimited',
    })
    .returning('id');
  return { userId, token: { id: k.id as number, unlimited: token === 'unlimited' } };
}
const consume = (p: Payer, model = 'ledger-model'): LogEntry => ({
  type: LOG_TYPE.consume,
  userId: p.userId,
  tokenId: p.token?.id ?? null,
  modelName: model,
  promptTokens: 7,
  content: `${model}: 7 tokens`,
});
const userRow = async (p: Payer) => db('users').where({ id: p.userId }).first('quota', 'used_quota', 'request_count');
const consumeRows = async (p: Payer) =>
  (await db('logs').where({ user_id: p.userId, type: LOG_TYPE.consume }).count<{ count: string }[]>('* as count'))[0]!.count;

describe('QuotaLedger', () => {
  it('40 concurrent charges of 10 against a quota of 205: 20 go through, sharing fewer statements than charges; each has its consume row', async () => {
    const p = await newPayer(205, 'unlimited');
    const before = ledger.stats;
    const results = await Promise.all(Array.from({ length: 40 }, () => ledger.charge(p, 10, consume(p))));
    expect(results.filter((r) => r.ok)).toHaveLength(20);
    expect(results.filter((r) => !r.ok)).toEqual(Array.from({ length: 20 }, () => ({ ok: false, which: 'user', left: 5 })));
    expect(await userRow(p)).toEqual({ quota: 5, used_quota: 200, request_count: 20 });
    expect(Number(await consumeRows(p))).toBe(20);
    const after = ledger.stats;
    expect(after.operations - before.operations).toBe(40);
    expect(after.batches - before.batches).toBeLessThan(40);
  });

  it('a limited key runs out before its user: the user keeps what the key could not take', async () => {
    const p = await newPayer(1_000, { remain: 30 });
    const results = await Promise.all(Array.from({ length: 6 }, () => ledger.reserve(p, 10)));
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    expect(results.filter((r) => !r.ok)).toEqual(Array.from({ length: 3 }, () => ({ ok: false, which: 'token', left: 0 })));
    expect((await userRow(p))!.quota).toBe(970);
    expect((await db('tokens').where({ id: p.token!.id }).first('remain_quota')).remain_quota).toBe(0);
  });

  it('settles a reservation at its real cost (the difference goes back) and refunds a failed one with its error row', async () => {
    const p = await newPayer(100, { remain: 100 });
    const first = await ledger.reserve(p, 50);
    if (!first.ok) throw new Error('reserve failed');
    expect(await db('quota_reservations').where({ user_id: p.userId }).select('amount')).toEqual([{ amount: 50 }]);
    await ledger.settle(first.reservation, 30, consume(p));
    expect(await userRow(p)).toEqual({ quota: 70, used_quota: 30, request_count: 1 });
    expect(await db('tokens').where({ id: p.token!.id }).first('remain_quota', 'used_quota')).toEqual({ remain_quota: 70, used_quota: 30 });
    const second = await ledger.reserve(p, 40);
    if (!second.ok) throw new Error('reserve failed');
    await ledger.refund(second.reservation, { type: LOG_TYPE.error, userId: p.userId, statusCode: 502, content: 'upstream failed' });
    expect(await db('quota_reservations').where({ user_id: p.userId })).toEqual([]);
    expect(await userRow(p)).toEqual({ quota: 70, used_quota: 30, request_count: 1 });
    const rows = await db('logs').where({ user_id: p.userId }).orderBy('id').select('type', 'quota', 'status_code');
    expect(rows).toEqual([
      { type: LOG_TYPE.consume, quota: 30, status_code: null },
      { type: LOG_TYPE.error, quota: 0, status_code: 502 },
    ]);
  });

  it('a real cost above the reservation takes only what the user and a limited key have left: the charge, used_quota and the log row say what was taken', async () => {
    // The key is the shorter: 50 held, a cost of 800 reported, 30 more is all the key has.
    const p = await newPayer(1_000, { remain: 80 });
    const held = await ledger.reserve(p, 50);
    if (!held.ok) throw new Error('reserve failed');
    await ledger.settle(held.reservation, 800, consume(p));
    expect(await userRow(p)).toEqual({ quota: 920, used_quota: 80, request_count: 1 });
    expect(await db('tokens').where({ id: p.token!.id }).first('remain_quota', 'used_quota')).toEqual({ remain_quota: 0, used_quota: 80 });
    // The user is the shorter: an unlimited key, 40 left after the reservation.
    const q = await newPayer(100, 'unlimited');
    const held2 = await ledger.reserve(q, 60);
    if (!held2.ok) throw new Error('reserve failed');
    await ledger.settle(held2.reservation, 9_000_000, consume(q));
    expect(await userRow(q)).toEqual({ quota: 0, used_quota: 100, request_count: 1 });
    const rows = await db('logs').whereIn('user_id', [p.userId, q.userId]).orderBy('id').select('user_id', 'quota');
    expect(rows).toEqual([
      { user_id: p.userId, quota: 80 },
      { user_id: q.userId, quota: 100 },
    ]);
  });

  it('a reservation left by a call that never ended is given back once it expires, with an error row; settling it late charges in full', async () => {
    const short = new QuotaLedger(db, { reservationTtlMs: 1_000 });
    const p = await newPayer(100, { remain: 100 });
    const held = await short.reserve(p, 40);
    if (!held.ok) throw new Error('reserve failed');
    expect(await short.sweep()).toBe(0); // not expired yet
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await short.sweep()).toBe(1);
    expect(await userRow(p)).toEqual({ quota: 100, used_quota: 0, request_count: 0 });
    expect((await db('tokens').where({ id: p.token!.id }).first('remain_quota')).remain_quota).toBe(100);
    const rows = await db('logs').where({ user_id: p.userId }).select('type', 'token_id', 'content');
    expect(rows).toEqual([{ type: LOG_TYPE.error, token_id: p.token!.id, content: expect.stringMatching(/40 quota reserved for it was given back/) }]);
    // The call's process was not dead after all: its settlement takes the whole cost, nothing is given back twice.
    await short.settle(held.reservation, 30, consume(p));
    expect(await userRow(p)).toEqual({ quota: 70, used_quota: 30, request_count: 1 });
    expect((await db('tokens').where({ id: p.token!.id }).first('remain_quota')).remain_quota).toBe(70);
  });

  it('one operation whose row is refused fails alone: the others of its batch go through', async () => {
    await db.raw(`create function refuse_bad_model() returns trigger language plpgsql as $$ begin raise exception 'refused for this test'; end $$`);
    await db.raw(
      `create trigger refuse_bad_model before insert on logs for each row when (new.model_name = 'refused-model') execute function refuse_bad_model()`,
    );
    try {
      const p = await newPayer(1_000, 'unlimited');
      const outcomes = await Promise.allSettled(
        ['fine-model', 'refused-model', 'fine-model', 'fine-model'].map((model) => ledger.charge(p, 10, consume(p, model))),
      );
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect(await userRow(p)).toEqual({ quota: 970, used_quota: 30, request_count: 3 });
    } finally {
      await db.raw('drop trigger refuse_bad_model on logs');
      await db.raw('drop function refuse_bad_model()');
    }
  });

  it('two processes charging the same users in opposite orders never deadlock, and every charge is counted once', async () => {
    const other = await createDb(parseConfig(env.env));
    try {
      const second = new QuotaLedger(other, { reservationTtlMs: 60_000 });
      const a = await newPayer(1_000_000, 'unlimited');
      const b = await newPayer(1_000_000, 'unlimited');
      const retriedBefore = ledger.stats.retriedAlone;
      const burst = (l: QuotaLedger, first: Payer, then: Payer) =>
        Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? l.charge(then, 1, consume(then)) : l.charge(first, 1, consume(first)))));
      for (let round = 0; round < 20; round++) {
        const results = (await Promise.all([burst(ledger, a, b), burst(second, b, a)])).flat();
        expect(results.every((r) => r.ok)).toBe(true);
      }
      // No batch failed (a deadlock aborts one; its operations would then have been run again one by one).
      expect([ledger.stats.retriedAlone - retriedBefore, second.stats.retriedAlone]).toEqual([0, 0]);
      expect(await userRow(a)).toEqual({ quota: 1_000_000 - 600, used_quota: 600, request_count: 600 });
      expect(await userRow(b)).toEqual({ quota: 1_000_000 - 600, used_quota: 600, request_count: 600 });
    } finally {
      await other.destroy();
    }
  });
});
