// Quota: reservations, charges, settlements and refunds, each with its log row, many calls to a round trip.
import { type Db, isDbUnavailable, rawFast } from '../db.js';
import { AppError } from '../errors.js';
import { Batcher } from '../batcher.js';
import type { LogEntry } from '../logs/schema.js';
import { logRecord } from '../logs/store.js';

/** Who pays for a call: the user and, when the call came with an API key, that key. */
export interface Payer {
  userId: number;
  token: { id: number; unlimited: boolean } | null;
}

export type QuotaShortfall = { ok: false; which: 'user' | 'token'; left: number };
export type Taken = { ok: true } | QuotaShortfall;

/** One movement of quota, as switchyard_ledger (migration 009) takes it. */
export interface LedgerOp {
  k: 'reserve' | 'charge' | 'settle' | 'refund';
  payer: Payer;
  /** reserve, charge: the amount taken; settle, refund: the amount that was reserved. */
  amount: number;
  /** settle: the real cost. */
  actual?: number;
  /** The row written when the operation takes effect (in the same transaction). */
  log?: LogEntry;
}

export interface LedgerAnswer {
  op: number;
  outcome: 'ok' | 'user' | 'token';
  left_amount: number | string;
}

/**
 * The one way quota moves for calls. Every operation is atomic on its own: a reservation or a
 * charge takes from the user and, for a limited key, from the key too, both or neither, and never
 * below zero however many calls race for the same balance; a settlement or a charge commits with
 * its consume row, a refund with its error row, or neither does.
 *
 * Operations asked for while a round trip is out go together in the next one, as one statement
 * (migration 009's switchyard_ledger): a busy API process makes one round trip for many calls,
 * where each call made two of its own (and Postgres did two commits for it). Each caller still
 * waits until the statement carrying its operation has committed; nothing is acknowledged early, so
 * a crash loses no charge that a caller was told about.
 */
export class QuotaLedger {
  private readonly batcher: Batcher<LedgerOp, Taken>;

  constructor(db: Db, opts = { maxBatch: 256, maxInFlight: 1 }) {
    this.batcher = new Batcher((ops) => this.apply(db, ops), { ...opts, retryAlone: (err) => !isDbUnavailable(err) });
  }

  /** Round trips made, operations carried, and operations run again alone after their batch failed. */
  get stats() {
    return { batches: this.batcher.batches, operations: this.batcher.items, retriedAlone: this.batcher.retriedAlone };
  }

  /** Takes `amount` before a call whose cost is known only afterwards (settle or refund it). */
  reserve(payer: Payer, amount: number): Promise<Taken> {
    if (amount <= 0) return Promise.resolve({ ok: true });
    return this.batcher.submit(ledgerOps.reserve(payer, amount));
  }

  /** Takes a cost known in advance and counts the call, with its consume row: a reservation and its settlement at once. */
  charge(payer: Payer, amount: number, consume: LogEntry): Promise<Taken> {
    return this.batcher.submit(ledgerOps.charge(payer, amount, consume));
  }

  /** A reservation's real cost: the difference goes back (or is taken, never below zero); the consume row is written with it. */
  async settle(payer: Payer, reserved: number, actual: number, consume: LogEntry): Promise<void> {
    await this.batcher.submit(ledgerOps.settle(payer, reserved, actual, consume));
  }

  /** Gives a whole reservation back (the call failed), with the call's error row when given. */
  async refund(payer: Payer, reserved: number, failure?: LogEntry): Promise<void> {
    if (reserved <= 0 && !failure) return;
    await this.batcher.submit({ k: 'refund', payer, amount: Math.max(0, reserved), log: failure });
  }

  private async apply(db: Db, ops: LedgerOp[]): Promise<Taken[]> {
    const { rows } = await rawFast<LedgerAnswer>(db, 'select op, outcome, left_amount from switchyard_ledger(?::jsonb)', [
      JSON.stringify(ops.map(encodeLedgerOp)),
    ]);
    const out: Taken[] = ops.map(() => ({ ok: true }));
    for (const r of rows) out[r.op] = takenOf(r);
    return out;
  }
}

/** The operations, for statements that carry them with other work (src/embeddings/calls.ts). */
export const ledgerOps = {
  reserve: (payer: Payer, amount: number): LedgerOp => ({ k: 'reserve', payer, amount }),
  charge: (payer: Payer, amount: number, consume: LogEntry): LedgerOp => ({
    k: 'charge',
    payer,
    amount: Math.max(0, amount),
    log: { ...consume, quota: Math.max(0, amount) },
  }),
  settle: (payer: Payer, reserved: number, actual: number, consume: LogEntry): LedgerOp => ({
    k: 'settle',
    payer,
    amount: reserved,
    actual,
    log: { ...consume, quota: actual },
  }),
};

/** An operation as switchyard_ledger reads it (`i`: its place in the batch, echoed as `op` in the answer). */
export function encodeLedgerOp(o: LedgerOp, i: number) {
  return {
    i,
    k: o.k,
    u: o.payer.userId,
    t: o.payer.token?.id ?? null,
    l: o.payer.token ? !o.payer.token.unlimited : false,
    a: Math.round(o.amount),
    c: Math.round(o.actual ?? 0),
    log: o.log ? logRecord(o.log) : null,
  };
}

export const takenOf = (r: Pick<LedgerAnswer, 'outcome' | 'left_amount'>): Taken =>
  r.outcome === 'ok' ? { ok: true } : { ok: false, which: r.outcome, left: Number(r.left_amount) };

/** Answers 403 (OpenAI's insufficient_quota) when a reservation or charge found the user's quota or the key's remain_quota short. */
export function assertTaken(r: Taken, cost: number): void {
  if (r.ok) return;
  const whose = r.which === 'user' ? "your account's quota" : "this API key's remain_quota";
  throw new AppError(403, `Insufficient quota: this call costs ${cost} and ${whose} has ${r.left} left.`, {
    code: r.which === 'user' ? 'insufficient_user_quota' : 'insufficient_token_quota',
    type: 'insufficient_quota',
  });
}
