// The embeddings cache: vectors by (model, dimensions, sha256(input)), so an input never goes upstream twice.
import type { Knex } from 'knex';
import { NO_FLUSH, type Db } from '../db.js';

export interface CachedVector {
  vector: Buffer;
  tokens: number;
}

export async function readCache(db: Db, model: string, dimensions: number, hashes: string[]): Promise<Map<string, CachedVector>> {
  if (hashes.length === 0) return new Map();
  const rows = await db('embedding_cache')
    .where({ model, dimensions })
    .whereIn('input_hash', [...new Set(hashes)])
    .select<{ input_hash: string; vector: Buffer | Uint8Array; tokens: number }[]>('input_hash', 'vector', 'tokens');
  return new Map(rows.map((r) => [r.input_hash, { vector: Buffer.from(r.vector), tokens: r.tokens }]));
}

export async function writeCache(db: Db, model: string, dimensions: number, rows: { hash: string; vector: Buffer; tokens: number }[]): Promise<void> {
  if (rows.length === 0) return;
  const unique = [...new Map(rows.map((r) => [r.hash, r])).values()];
  // One statement, and a cache row lost to a crash of Postgres is only asked for again: no need to wait for its flush.
  const insert = db('embedding_cache')
    .insert(unique.map((r) => ({ model, dimensions, input_hash: r.hash, vector: r.vector, tokens: r.tokens })))
    .onConflict(['model', 'dimensions', 'input_hash'])
    .ignore()
    .toSQL();
  await db.raw(`with flush as (select ${NO_FLUSH}), cached as (${insert.sql}) select count(*) from flush`, insert.bindings as Knex.RawBinding[]);
}
