// The embeddings cache: vectors by (model, dimensions, sha256(input)), so an input never goes upstream twice.
// Postgres holds every vector; each API process keeps its most used ones in memory, printed as well.
import { type Db, rawFast, rolledBackByItsData } from '../db.js';
import { Batcher } from '../batcher.js';

export interface CachedVector {
  /** float32 little-endian, exactly as the upstream sent it. */
  vector: Buffer;
  tokens: number;
  /** The vector as a JSON array of shortest float32 decimals (ASCII), once a float answer needed it (memory only). */
  json?: Buffer;
}

/**
 * A buffer of its own, of its exact size: a small Buffer is often a slice of Node's shared 8 KB pool, and
 * kept for long it would hold the whole slab while the budget counts only its own bytes.
 */
function own(b: Buffer): Buffer {
  if (b.byteOffset === 0 && b.buffer.byteLength === b.length) return b;
  const copy = Buffer.allocUnsafeSlow(b.length);
  b.copy(copy);
  return copy;
}

/** Bytes an entry holds besides its vector and text (the Map entry, the key, the objects). */
const ENTRY_OVERHEAD = 256;
const sizeOf = (key: string, v: CachedVector) => ENTRY_OVERHEAD + key.length * 2 + v.vector.length + (v.json?.length ?? 0);

/**
 * The most recently used vectors, up to `maxBytes` (vectors and their printed JSON). A vector for an
 * input never changes once cached, so a copy in memory is never stale, whichever process wrote it.
 * Vectors come in when they are read back from Postgres (asked for a second time), not when they
 * arrive from the upstream: inputs seen once — most of a gateway's traffic — would only push out the
 * hot ones and keep the garbage collector busy.
 */
export class HotVectors {
  private entries = new Map<string, CachedVector>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get size() {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  get(key: string): CachedVector | undefined {
    const v = this.entries.get(key);
    if (v) {
      // Most recently used last: eviction takes from the front.
      this.entries.delete(key);
      this.entries.set(key, v);
    }
    return v;
  }

  set(key: string, v: CachedVector): void {
    if (this.maxBytes <= 0) return;
    v.vector = own(v.vector);
    const old = this.entries.get(key);
    if (old) {
      this.bytes -= sizeOf(key, old);
      this.entries.delete(key);
    }
    this.entries.set(key, v);
    this.bytes += sizeOf(key, v);
    this.evict();
  }

  /** Keeps an entry's printed form with it (and counts its size). */
  setJson(key: string, v: CachedVector, json: Buffer): void {
    if (v.json !== undefined || this.entries.get(key) !== v) return;
    v.json = own(json);
    this.bytes += json.length;
    this.evict();
  }

  private evict() {
    for (const [key, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(key);
      this.bytes -= sizeOf(key, v);
    }
  }
}

interface Lookup {
  model: string;
  dimensions: number;
  hashes: string[];
}

interface NewVectors {
  model: string;
  dimensions: number;
  rows: { hash: string; vector: Buffer; tokens: number }[];
}

/**
 * Reads and writes of the Postgres cache, each a batch of the calls that asked meanwhile (one
 * statement for many calls, see src/batcher.ts), with the hot vectors in front.
 */
export class VectorCache {
  readonly hot: HotVectors;
  private readonly reads: Batcher<Lookup, Map<string, CachedVector>>;
  private readonly writes: Batcher<NewVectors, undefined>;

  constructor(db: Db, maxMemoryBytes: number) {
    this.hot = new HotVectors(maxMemoryBytes);
    const opts = { maxBatch: 64, maxInFlight: 1, retryAlone: rolledBackByItsData };
    this.reads = new Batcher((lookups) => readBatch(db, lookups), opts);
    this.writes = new Batcher((rows) => writeBatch(db, rows), opts);
  }

  static key(model: string, dimensions: number, hash: string) {
    return `${dimensions}\u0000${hash}\u0000${model}`;
  }

  /** The cached vectors of these inputs (by hash): from memory, and the rest from Postgres. */
  async lookup(model: string, dimensions: number, hashes: string[]): Promise<Map<string, CachedVector>> {
    const found = new Map<string, CachedVector>();
    const cold = new Set<string>();
    for (const h of hashes) {
      if (found.has(h) || cold.has(h)) continue;
      const v = this.hot.get(VectorCache.key(model, dimensions, h));
      if (v) found.set(h, v);
      else cold.add(h);
    }
    if (cold.size === 0) return found;
    const read = await this.reads.submit({ model, dimensions, hashes: [...cold] });
    for (const [h, v] of read) {
      this.hot.set(VectorCache.key(model, dimensions, h), v);
      found.set(h, v);
    }
    return found;
  }

  /** Keeps new vectors in Postgres (memory takes them when they are asked for again: see HotVectors). */
  async store(model: string, dimensions: number, rows: { hash: string; vector: Buffer; tokens: number }[]): Promise<void> {
    if (rows.length === 0) return;
    await this.writes.submit({ model, dimensions, rows });
  }
}

async function readBatch(db: Db, lookups: Lookup[]): Promise<Map<string, CachedVector>[]> {
  // One statement per (model, dimensions) in the batch: nearly always one (migration 010's switchyard_cache_read).
  const groups = new Map<string, Lookup[]>();
  for (const l of lookups) {
    const k = `${l.dimensions}\u0000${l.model}`;
    groups.set(k, [...(groups.get(k) ?? []), l]);
  }
  const found = new Map<Lookup, Map<string, CachedVector>>();
  await Promise.all(
    [...groups.values()].map(async (group) => {
      const { model, dimensions } = group[0]!;
      const hashes = [...new Set(group.flatMap((l) => l.hashes))];
      // Hashes are hex: the array literal needs no quoting (and works the same on PGlite as on node-postgres).
      const { rows } = await rawFast<{ hash: string; vec: Buffer | Uint8Array; toks: number }>(
        db,
        'select hash, vec, toks from switchyard_cache_read(?, ?, ?::text[])',
        [model, dimensions, `{${hashes.filter((h) => /^[0-9a-f]{64}$/.test(h)).join(',')}}`],
      );
      const byHash = new Map<string, CachedVector>();
      for (const r of rows)
        byHash.set(r.hash, { vector: Buffer.isBuffer(r.vec) ? r.vec : Buffer.from(r.vec.buffer, r.vec.byteOffset, r.vec.byteLength), tokens: r.toks });
      for (const l of group) found.set(l, new Map(l.hashes.filter((h) => byHash.has(h)).map((h) => [h, byHash.get(h)!])));
    }),
  );
  return lookups.map((l) => found.get(l)!);
}

async function writeBatch(db: Db, batch: NewVectors[]): Promise<undefined[]> {
  const rows = batch.flatMap((b) => b.rows.map((r) => ({ m: b.model, d: b.dimensions, h: r.hash, v: r.vector.toString('base64'), t: r.tokens })));
  await rawFast(db, 'select switchyard_cache_write(?::jsonb)', [JSON.stringify(rows)]);
  return batch.map(() => undefined);
}
