// Quota: reservations, charges, settlements and refunds, each with its log row, many calls to a round trip.
import { randomUUID } from 'node:crypto';
import { type Db, rawFast, rolledBackByItsData } from '../db.js';
import type { Logger } from '../log.js';
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

/** Quota held for a call until it settles or refunds it: nothing (`id` null) when the call costs nothing. */
export interface Reservation {
  payer: Payer;
  amount: number;
  id: string | null;
}

export type Reserved = { ok: true; reservation: Reservation } | QuotaShortfall;

/** One movement of quota, as switchyard_ledger (migration 009) takes it. */
export interface LedgerOp {
  k: 'reserve' | 'charge' | 'settle' | 'refund';
  payer: Payer;
  /** reserve, charge: the amount taken; settle, refund: the amount that was reserved. */
  amount: number;
  /** settle: the real cost. */
  actual?: number;
  /** reserve, settle, refund: the reservation's id; reserve: in how many seconds the sweep gives it back if it is still held. */
  reservation?: string | null;
  ttlSeconds?: number;
  /** The row written when the operation takes effect (in the same transaction). */
  log?: LogEntry;
}

export interface LedgerAnswer {
  op: number;
  outcome: 'ok' | 'user' | 'token';
  left_amount: number | string;
}

/** How often an API process gives back the reservations of calls whose process died (switchyard_sweep_reservations). */
const SWEEP_EVERY_MS = 30_000;

/**
 * The one way quota moves for calls. Every operation is atomic on its own: a reservation or a
 * charge takes from the user and, for a limited key, from the key too, both or neither, and never
 * below zero however many calls race for the same balance; a settlement or a charge commits with
 * its consume row, a refund with its error row, or neither does.
 *
 * A reservation is recorded with the balances it took from (quota_reservations) until its call
 * settles or refunds it. If the process making the call dies first, the reservation outlives its
 * expiry (`reservationTtlMs`, longer than any call may last) and a sweep run by every API process
 * gives it back with an error row: no quota stays taken without a row that says why.
 *
 * Operations asked for while a round trip is out go together in the next one, as one statement
 * (migration 009's switchyard_ledger): a busy API process makes one round trip for many calls,
 * where each call made two of its own (and Postgres did two commits for it). Each caller still
 * waits until the statement carrying its operation has committed; nothing is acknowledged early, so
 * a crash loses no charge that a caller was told about.
 */
export class QuotaLedger {
  private readonly batcher: Batcher<LedgerOp, Taken>;
  private sweeping?: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    private readonly opts: { reservationTtlMs: number; maxBatch?: number; maxInFlight?: number },
  ) {
    this.batcher = new Batcher((ops) => this.apply(ops), {
      maxBatch: opts.maxBatch ?? 256,
      maxInFlight: opts.maxInFlight ?? 1,
      retryAlone: rolledBackByItsData,
    });
  }

  /** Round trips made, operations carried, and operations run again alone after their batch failed. */
  get stats() {
    return { batches: this.batcher.batches, operations: this.batcher.items, retriedAlone: this.batcher.retriedAlone };
  }

  /** A reservation of `amount` as an operation, for a statement that carries it with other work (src/embeddings/calls.ts). */
  prepareReservation(payer: Payer, amount: number): { op: LedgerOp; reservation: Reservation } {
    const reservation: Reservation = { payer, amount, id: amount > 0 ? randomUUID() : null };
    return { op: { k: 'reserve', payer, amount, reservation: reservation.id, ttlSeconds: Math.ceil(this.opts.reservationTtlMs / 1000) }, reservation };
  }

  /** Takes `amount` before a call whose cost is known only afterwards (settle or refund the reservation). */
  async reserve(payer: Payer, amount: number): Promise<Reserved> {
    const { op, reservation } = this.prepareReservation(payer, amount);
    if (amount <= 0) return { ok: true, reservation };
    const taken = await this.batcher.submit(op);
    return taken.ok ? { ok: true, reservation } : taken;
  }

  /** Takes a cost known in advance and counts the call, with its consume row: a reservation and its settlement at once. */
  charge(payer: Payer, amount: number, consume: LogEntry): Promise<Taken> {
    return this.batcher.submit(ledgerOps.charge(payer, amount, consume));
  }

  /** A reservation's real cost: the difference goes back (or is taken, never below zero); the consume row is written with it. */
  async settle(reservation: Reservation, actual: number, consume: LogEntry): Promise<void> {
    await this.batcher.submit(ledgerOps.settle(reservation, actual, consume));
  }

  /** Gives a whole reservation back (the call failed), with the call's error row when given. */
  async refund(reservation: Reservation, failure?: LogEntry): Promise<void> {
    if (reservation.amount <= 0 && !failure) return;
    await this.batcher.submit({ k: 'refund', payer: reservation.payer, amount: Math.max(0, reservation.amount), reservation: reservation.id, log: failure });
  }

  /** Gives back the reservations past their expiry now (up to `limit`); answers how many. */
  async sweep(limit = 500): Promise<number> {
    const { rows } = await rawFast<{ n: number }>(this.db, 'select switchyard_sweep_reservations(?) as n', [limit]);
    return rows[0]?.n ?? 0;
  }

  /** Sweeps every 30 s from now on (API processes); idempotent. */
  startSweeping(log: Logger): void {
    this.sweeping ??= setInterval(() => {
      this.sweep().then(
        (n) => n && log.warn({ returned: n }, 'gave back quota reservations of calls whose process stopped'),
        (err) => log.warn({ err }, 'could not sweep quota reservations; trying again in 30 s'),
      );
    }, SWEEP_EVERY_MS).unref();
  }

  stopSweeping(): void {
    clearInterval(this.sweeping);
    this.sweeping = undefined;
  }

  private async apply(ops: LedgerOp[]): Promise<Taken[]> {
    const { rows } = await rawFast<LedgerAnswer>(this.db, 'select op, outcome, left_amount from switchyard_ledger(?::jsonb)', [
      JSON.stringify(ops.map(encodeLedgerOp)),
    ]);
    const out: Taken[] = ops.map(() => ({ ok: true }));
    for (const r of rows) out[r.op] = takenOf(r);
    return out;
  }
}

/**
 * Quota operations inside a caller's own transaction (src/batches: a chunk's results and their charge commit together,
 * or neither does). Answers each operation's outcome, in order.
 */
export async function ledgerInTransaction(trx: Db, ops: LedgerOp[]): Promise<Taken[]> {
  const { rows } = await trx.raw<{ rows: LedgerAnswer[] }>('select op, outcome, left_amount from switchyard_ledger(?::jsonb)', [
    JSON.stringify(ops.map(encodeLedgerOp)),
  ]);
  const out: Taken[] = ops.map(() => ({ ok: true }));
  for (const r of rows) out[r.op] = takenOf(r);
  return out;
}

/** The operations, for statements that carry them with other work (src/embeddings/calls.ts). */
export const ledgerOps = {
  charge: (payer: Payer, amount: number, consume: LogEntry): LedgerOp => ({
    k: 'charge',
    payer,
    amount: Math.max(0, amount),
    log: { ...consume, quota: Math.max(0, amount) },
  }),
  settle: (reservation: Reservation, actual: number, consume: LogEntry): LedgerOp => ({
    k: 'settle',
    payer: reservation.payer,
    amount: reservation.amount,
    actual,
    reservation: reservation.id,
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
    r: o.reservation ?? null,
    x: o.ttlSeconds ?? null,
    log: o.log ? logRecord(o.log) : null,
  };
}

export const takenOf = (r: Pick<LedgerAnswer, 'outcome' | 'left_amount'>): Taken =>
  r.outcome === 'ok' ? { ok: true } : { ok: false, which: r.outcome, left: Number(r.left_amount) };

/**
 * Answers 403 insufficient_quota (type and code, as OpenAI's own) when a reservation or charge found the user's quota or
 * the key's remain_quota short; the message says which of the two.
 */
export function assertTaken<T extends Taken | Reserved>(r: T, cost: number): asserts r is Extract<T, { ok: true }> {
  if (r.ok) return;
  const whose = r.which === 'user' ? "your account's quota" : "this API key's remain_quota";
  throw new AppError(403, `Insufficient quota: this call costs ${cost} and ${whose} has ${r.left} left.`, {
    code: 'insufficient_quota',
    type: 'insufficient_quota',
  });
}
