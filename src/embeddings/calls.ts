// An upstream call's two round trips to Postgres, each shared by the calls that make it at the same time:
// begin (what the cache has, and the charge or the reservation) and finish (the new vectors, and the settlement).
import { type Db, rawFast, rolledBackByItsData } from '../db.js';
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

type Round = { begin: BeginRequest } | { finish: FinishRequest };
type RoundAnswer = Begun | Taken;

/**
 * Migration 010's switchyard_embeddings_round: a relayed call costs two statements (the cache read with
 * its reservation, the cache write with its settlement), a call the cache answers one (read and charged
 * together); and the begins and finishes of the calls made while a statement is out share the next one.
 */
export class UpstreamCalls {
  private readonly rounds: Batcher<Round, RoundAnswer>;

  constructor(db: Db) {
    // One call's bad row (a refused log row, say) must not fail the others it shares a statement with.
    this.rounds = new Batcher((items) => round(db, items), { maxBatch: 64, maxInFlight: 1, retryAlone: rolledBackByItsData });
  }

  async begin(req: BeginRequest): Promise<Begun> {
    return (await this.rounds.submit({ begin: req })) as Begun;
  }

  async finish(req: FinishRequest): Promise<void> {
    await this.rounds.submit({ finish: req });
  }
}

// Hashes are hex (sha256): an array literal of them needs no quoting.
const hexHash = /^[0-9a-f]{64}$/;

async function round(db: Db, items: Round[]): Promise<RoundAnswer[]> {
  const begins: object[] = [];
  const settles: object[] = [];
  const rows: object[] = [];
  items.forEach((item, i) => {
    if ('begin' in item) {
      const c = item.begin;
      // The function decides charge or reservation by counting what it found against these: none may be dropped.
      const h = c.hashes;
      if (!h.every((x) => hexHash.test(x))) throw new Error('input hashes must be sha256 hex');
      begins.push({ i, m: c.model, d: c.dimensions, h, charge: encodeLedgerOp(c.charge, i), reserve: c.reserve ? encodeLedgerOp(c.reserve, i) : null });
    } else {
      const c = item.finish;
      for (const r of c.rows) rows.push({ m: c.model, d: c.dimensions, h: r.hash, v: r.vector.toString('base64'), t: r.tokens });
      settles.push(encodeLedgerOp(c.settle, i));
    }
  });
  const { rows: answers } = await rawFast<{ i: number; hash: string | null; vec: Buffer | Uint8Array | null; toks: number | null } & Partial<LedgerAnswer>>(
    db,
    'select i, hash, vec, toks, outcome, left_amount from switchyard_embeddings_round(?::jsonb, ?::jsonb, ?::jsonb)',
    [JSON.stringify(rows), JSON.stringify(begins), JSON.stringify(settles)],
  );
  const out: RoundAnswer[] = items.map((item) => ('begin' in item ? { found: new Map(), charged: false, taken: { ok: true } } : { ok: true }));
  for (const a of answers) {
    const o = out[a.i]!;
    if (a.hash !== null && a.vec && 'found' in o) {
      const v = a.vec;
      o.found.set(a.hash, { vector: Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength), tokens: a.toks ?? 0 });
    } else if (a.outcome) {
      const taken = takenOf({ outcome: a.outcome, left_amount: a.left_amount ?? 0 });
      if ('found' in o) o.taken = taken;
      else out[a.i] = taken;
    }
  }
  items.forEach((item, i) => {
    if ('begin' in item) {
      const o = out[i] as Begun;
      o.charged = item.begin.hashes.every((h) => o.found.has(h));
    }
  });
  return out;
}
