// An upstream call's two round trips to Postgres, each shared by the calls that make it at the same time:
// begin (what the cache has, and the charge or the reservation) and finish (the new vectors, and the settlement).
import { type Db, isDbUnavailable } from '../db.js';
import { Batcher } from '../batcher.js';
import { encodeLedgerOp, type LedgerAnswer, type LedgerOp, type Taken, takenOf } from '../accounts/ledger.js';
import type { CachedVector } from './store.js';

export interface BeginRequest {
  model: string;
  dimensions: number;
  /** The inputs' hashes the process does not hold in memory (distinct, at least one). */
  hashes: string[];
  /** Taken when the cache has every one of them (the cost is known: nothing goes upstream). */
  charge: LedgerOp;
  /** Taken otherwise, before the upstream is called; null when the call costs nothing. */
  reserve: LedgerOp | null;
}

export interface Begun {
  found: Map<string, CachedVector>;
  /** The cache had every input, and the call was charged (taken.ok) or refused. */
  charged: boolean;
  taken: Taken;
}

export interface FinishRequest {
  model: string;
  dimensions: number;
  rows: { hash: string; vector: Buffer; tokens: number }[];
  settle: LedgerOp;
}

/**
 * Migration 010's switchyard_embeddings_begin and _finish: a relayed call costs two statements (the
 * cache read with its reservation, the cache write with its settlement), a call the cache answers
 * one (read and charged together), and calls made while a statement is out share the next one.
 */
export class UpstreamCalls {
  private readonly begins: Batcher<BeginRequest, Begun>;
  private readonly finishes: Batcher<FinishRequest, Taken>;

  constructor(db: Db) {
    // One call's bad row (a refused log row, say) must not fail the others it shares a statement with.
    const opts = { maxBatch: 64, maxInFlight: 1, retryAlone: (err: unknown) => !isDbUnavailable(err) };
    this.begins = new Batcher((calls) => begin(db, calls), opts);
    this.finishes = new Batcher((calls) => finish(db, calls), opts);
  }

  begin(req: BeginRequest): Promise<Begun> {
    return this.begins.submit(req);
  }

  async finish(req: FinishRequest): Promise<void> {
    await this.finishes.submit(req);
  }
}

// Hashes are hex (sha256): an array literal of them needs no quoting.
const hexHash = /^[0-9a-f]{64}$/;

async function begin(db: Db, calls: BeginRequest[]): Promise<Begun[]> {
  const json = calls.map((c, i) => ({
    i,
    m: c.model,
    d: c.dimensions,
    h: c.hashes.filter((h) => hexHash.test(h)),
    charge: encodeLedgerOp(c.charge, i),
    reserve: c.reserve ? encodeLedgerOp(c.reserve, i) : null,
  }));
  const { rows } = await db.raw<{ rows: ({ i: number; hash: string | null; vec: Buffer | Uint8Array | null; toks: number | null } & Partial<LedgerAnswer>)[] }>(
    'select i, hash, vec, toks, outcome, left_amount from switchyard_embeddings_begin(?::jsonb)',
    [JSON.stringify(json)],
  );
  const out: Begun[] = calls.map(() => ({ found: new Map(), charged: false, taken: { ok: true } }));
  for (const r of rows) {
    const o = out[r.i]!;
    if (r.hash !== null && r.vec) {
      const v = r.vec;
      o.found.set(r.hash, { vector: Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength), tokens: r.toks ?? 0 });
    } else if (r.outcome) o.taken = takenOf({ outcome: r.outcome, left_amount: r.left_amount ?? 0 });
  }
  calls.forEach((c, i) => {
    out[i]!.charged = c.hashes.every((h) => out[i]!.found.has(h));
  });
  return out;
}

async function finish(db: Db, calls: FinishRequest[]): Promise<Taken[]> {
  const rows = calls.flatMap((c) => c.rows.map((r) => ({ m: c.model, d: c.dimensions, h: r.hash, v: r.vector.toString('base64'), t: r.tokens })));
  const { rows: answers } = await db.raw<{ rows: LedgerAnswer[] }>('select op, outcome, left_amount from switchyard_embeddings_finish(?::jsonb, ?::jsonb)', [
    JSON.stringify(rows),
    JSON.stringify(calls.map((c, i) => encodeLedgerOp(c.settle, i))),
  ]);
  const out: Taken[] = calls.map(() => ({ ok: true }));
  for (const a of answers) out[a.op] = takenOf(a);
  return out;
}
