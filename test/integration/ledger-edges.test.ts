// The quota ledger's edges on real Postgres: reservations of nothing, refunds with and without an error row, and the
// operations run inside a caller's transaction (written against the survivors of the ledger mutation run,
// docs/mutation-testing.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Payer, QuotaLedger, ledgerInTransaction, ledgerOps } from '../../src/accounts/ledger.js';
import { parseConfig } from '../../src/config.js';
import { createDb, type Db, migrateLatest } from '../../src/db.js';
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
async function newUser(quota: number): Promise<Payer> {
  const name = `edges-${++seq}`;
  const [u] = await db('users').insert({ username: name, password_hash: 'x', display_name: name, role: 1, status: 1, quota }).returning('id');
  return { userId: u.id as number, token: null };
}
const quotaOf = async (p: Payer) => Number((await db('users').where({ id: p.userId }).first('quota')).quota);
const rowsOf = (p: Payer, type: number) => db('logs').where({ user_id: p.userId, type }).pluck('content');
const failure = (p: Payer): LogEntry => ({ type: LOG_TYPE.error, userId: p.userId, modelName: 'edge-model', content: 'upstream failed' });

describe('QuotaLedger edges', () => {
  it('a reservation of nothing takes nothing and makes no round trip; refunding it without an error row makes none either', async () => {
    const p = await newUser(10);
    const before = ledger.stats.operations;
    const r = await ledger.reserve(p, 0);
    expect(r).toEqual({ ok: true, reservation: { payer: p, amount: 0, id: null } });
    if (!r.ok) throw new Error('unreachable');
    await ledger.refund(r.reservation);
    expect(ledger.stats.operations).toBe(before);
    expect(await quotaOf(p)).toBe(10);
  });

  it("refunding a free call's reservation with an error row writes that row (and gives nothing back)", async () => {
    const p = await newUser(10);
    const r = await ledger.reserve(p, 0);
    if (!r.ok) throw new Error('unreachable');
    await ledger.refund(r.reservation, failure(p));
    expect(await rowsOf(p, LOG_TYPE.error)).toEqual(['upstream failed']);
    expect(await quotaOf(p)).toBe(10);
  });

  it('refunding a reservation without an error row gives all of it back and writes no row', async () => {
    const p = await newUser(100);
    const r = await ledger.reserve(p, 30);
    if (!r.ok) throw new Error('reservation refused');
    expect(await quotaOf(p)).toBe(70);
    await ledger.refund(r.reservation);
    expect(await quotaOf(p)).toBe(100);
    expect(await db('logs').where({ user_id: p.userId }).pluck('id')).toEqual([]);
  });
});

describe("the ledger inside a caller's transaction", () => {
  it('answers each operation in order (a charge taken, the next short of quota) and is undone with the transaction', async () => {
    const p = await newUser(50);
    const consume: LogEntry = { type: LOG_TYPE.consume, userId: p.userId, modelName: 'edge-model', content: 'edge call' };
    const rolledBack = new Error('roll back');
    await expect(
      db.transaction(async (trx) => {
        const answers = await ledgerInTransaction(trx, [ledgerOps.charge(p, 20, consume), ledgerOps.charge(p, 40, consume)]);
        expect(answers).toEqual([{ ok: true }, { ok: false, which: 'user', left: 30 }]);
        expect(Number((await trx('users').where({ id: p.userId }).first('quota')).quota)).toBe(30);
        expect(await trx('logs').where({ user_id: p.userId, type: LOG_TYPE.consume }).pluck('quota')).toEqual([20]);
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    expect(await quotaOf(p)).toBe(50);
    expect(await rowsOf(p, LOG_TYPE.consume)).toEqual([]);
  });
});
