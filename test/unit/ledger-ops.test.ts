// The quota ledger's operations as switchyard_ledger reads them, and its answers as callers see them, without services:
// who pays (user, key, limited or not), amounts (rounded, a charge never negative), the reservation's id and expiry, the
// consume row's quota, and the 403 insufficient_quota that names whose balance is short.
import { describe, expect, it } from 'vitest';
import { assertTaken, encodeLedgerOp, ledgerOps, type Payer, QuotaLedger, type Reservation, takenOf } from '../../src/accounts/ledger.js';
import type { Db } from '../../src/db.js';
import { AppError } from '../../src/errors.js';
import { LOG_TYPE, type LogEntry } from '../../src/logs/schema.js';

const limited: Payer = { userId: 5, token: { id: 9, unlimited: false } };
const unlimited: Payer = { userId: 5, token: { id: 9, unlimited: true } };
const session: Payer = { userId: 5, token: null };
const consume: LogEntry = { type: LOG_TYPE.consume, userId: 5, tokenId: 9, modelName: 'm', createdAt: 1_700_000_000, content: 'm: 3 tokens' };

describe('an operation as the ledger statement reads it', () => {
  it('names the user, the key and whether the key is limited; a call without a key has neither', () => {
    expect(encodeLedgerOp({ k: 'charge', payer: limited, amount: 3 }, 0)).toMatchObject({ i: 0, k: 'charge', u: 5, t: 9, l: true });
    expect(encodeLedgerOp({ k: 'charge', payer: unlimited, amount: 3 }, 1)).toMatchObject({ i: 1, u: 5, t: 9, l: false });
    expect(encodeLedgerOp({ k: 'charge', payer: session, amount: 3 }, 2)).toMatchObject({ i: 2, u: 5, t: null, l: false });
  });

  it('carries whole amounts, the reservation, its expiry and its log row, or nulls for what it has not', () => {
    expect(encodeLedgerOp({ k: 'reserve', payer: limited, amount: 2.6, reservation: 'r-1', ttlSeconds: 40 }, 3)).toEqual({
      i: 3,
      k: 'reserve',
      u: 5,
      t: 9,
      l: true,
      a: 3,
      c: 0,
      r: 'r-1',
      x: 40,
      log: null,
    });
    const settle = encodeLedgerOp({ k: 'settle', payer: limited, amount: 10, actual: 4.4, reservation: 'r-1', log: consume }, 0);
    expect(settle).toMatchObject({ k: 'settle', a: 10, c: 4, r: 'r-1', x: null });
    expect(settle.log).toMatchObject({ type: LOG_TYPE.consume, user_id: 5, token_id: 9, model_name: 'm', created_at: 1_700_000_000 });
    expect(encodeLedgerOp({ k: 'refund', payer: limited, amount: 10 }, 0)).toMatchObject({ r: null, x: null, log: null });
  });

  it('a charge takes its amount (never below zero) and its consume row says so; a settlement bills the actual cost', () => {
    expect(ledgerOps.charge(limited, 7, consume)).toEqual({ k: 'charge', payer: limited, amount: 7, log: { ...consume, quota: 7 } });
    expect(ledgerOps.charge(limited, -2, consume)).toEqual({ k: 'charge', payer: limited, amount: 0, log: { ...consume, quota: 0 } });
    const reservation: Reservation = { payer: limited, amount: 10, id: 'r-2' };
    expect(ledgerOps.settle(reservation, 4, consume)).toEqual({
      k: 'settle',
      payer: limited,
      amount: 10,
      actual: 4,
      reservation: 'r-2',
      log: { ...consume, quota: 4 },
    });
  });

  it('a reservation has an id only when it takes something, and expires after the ledger TTL in whole seconds', () => {
    const ledger = new QuotaLedger({} as Db, { reservationTtlMs: 65_200 });
    const { op, reservation } = ledger.prepareReservation(limited, 12);
    expect(reservation.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(op).toEqual({ k: 'reserve', payer: limited, amount: 12, reservation: reservation.id, ttlSeconds: 66 });
    expect(ledger.prepareReservation(limited, 0).reservation.id).toBeNull();
    expect(ledger.prepareReservation(limited, 1).reservation.id).not.toBeNull();
  });
});

describe("the ledger's answers", () => {
  it('ok, or short with whose balance and what is left', () => {
    expect(takenOf({ outcome: 'ok', left_amount: 0 })).toEqual({ ok: true });
    expect(takenOf({ outcome: 'user', left_amount: '12' })).toEqual({ ok: false, which: 'user', left: 12 });
    expect(takenOf({ outcome: 'token', left_amount: 3 })).toEqual({ ok: false, which: 'token', left: 3 });
  });

  it("short is a 403 insufficient_quota naming the cost and whose balance, the account's or the key's", () => {
    expect(() => assertTaken({ ok: true }, 5)).not.toThrow();
    const short = (which: 'user' | 'token') => {
      try {
        assertTaken({ ok: false, which, left: 2 }, 5);
      } catch (err) {
        return err as AppError;
      }
      throw new Error('not refused');
    };
    const user = short('user');
    expect(user).toBeInstanceOf(AppError);
    expect(user.toJSON()).toMatchObject({
      status: 403,
      message: "Insufficient quota: this call costs 5 and your account's quota has 2 left.",
      code: 'insufficient_quota',
      type: 'insufficient_quota',
    });
    expect(short('token').message).toBe("Insufficient quota: this call costs 5 and this API key's remain_quota has 2 left.");
  });
});
