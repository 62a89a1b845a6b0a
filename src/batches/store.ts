// Files and batches in Postgres: a file's bytes in parts (read back one part at a time), a batch's row, its checked
// requests (one row per input line), its lines' outcomes (one row per line, written once) and its ended chunks.
import crypto from 'node:crypto';
import type { Db } from '../db.js';
import type { BatchRow, BatchStatus, FileRow } from './schema.js';

/** A file's bytes are stored in parts of at most this size: an upload or a download holds one part at a time. */
export const PART_BYTES = 1024 * 1024;

const randomId = (prefix: string) => `${prefix}${crypto.randomBytes(12).toString('hex')}`;
export const newFileId = () => randomId('file-');
export const newBatchId = () => randomId('batch_');

// ---- files ----------------------------------------------------------------------------------------------------------

export async function createFile(db: Db, f: { id: string; ownerId: number; filename: string; purpose: string; expiresAt: Date | null }): Promise<void> {
  await db('files').insert({ id: f.id, owner_id: f.ownerId, filename: f.filename, purpose: f.purpose, status: 'uploading', expires_at: f.expiresAt });
}

/**
 * Runs `make` (a count and an insert) with the owner's users row locked: two requests of one owner at once count one
 * after the other, so a per-user limit holds under concurrency.
 */
export async function asOwner<T>(db: Db, ownerId: number, make: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    await trx('users').where({ id: ownerId }).forUpdate().first('id');
    return make(trx);
  });
}

export async function addPart(db: Db, fileId: string, seq: number, data: Buffer): Promise<void> {
  await db('file_parts').insert({ file_id: fileId, seq, data });
}

/** The upload is whole: listed and readable from now on. */
export async function finishFile(db: Db, id: string, bytes: number, purpose: string): Promise<FileRow> {
  const [row] = await db('files').where({ id }).update({ status: 'uploaded', bytes, purpose }).returning('*');
  return row as FileRow;
}

export async function dropFile(db: Db, id: string): Promise<void> {
  await db('files').where({ id }).delete();
}

export async function getFile(db: Db, ownerId: number, id: string): Promise<FileRow | undefined> {
  return db('files').where({ id, owner_id: ownerId, status: 'uploaded' }).first<FileRow | undefined>();
}

export const fileById = (db: Db, id: string) => db('files').where({ id, status: 'uploaded' }).first<FileRow | undefined>();

export async function countFiles(db: Db, ownerId: number): Promise<number> {
  const [{ n }] = await db('files').where({ owner_id: ownerId }).count<{ n: string }[]>({ n: '*' });
  return Number(n);
}

export async function listFiles(db: Db, ownerId: number, q: { purpose?: string; limit: number; order: 'asc' | 'desc'; after?: string }): Promise<FileRow[]> {
  const query = db('files').where({ owner_id: ownerId, status: 'uploaded' });
  if (q.purpose) query.andWhere({ purpose: q.purpose });
  if (q.after) {
    const cursor = db('files').where({ id: q.after, owner_id: ownerId }).select('created_at', 'id');
    query.andWhere(db.raw('(created_at, id)'), q.order === 'desc' ? '<' : '>', cursor);
  }
  return query
    .orderBy([
      { column: 'created_at', order: q.order },
      { column: 'id', order: q.order },
    ])
    .limit(q.limit + 1);
}

/** A file's bytes, a part at a time (a batch's output or error file: its outcome lines, a page at a time). */
export async function* readFile(db: Db, file: Pick<FileRow, 'id' | 'batch_id' | 'batch_ok'>): AsyncGenerator<Buffer> {
  if (file.batch_id !== null) {
    for await (const page of outcomePages(db, file.batch_id, file.batch_ok === true)) yield Buffer.from(page);
    return;
  }
  for (let seq = 0; ; seq++) {
    const part = await db('file_parts').where({ file_id: file.id, seq }).first<{ data: Buffer | Uint8Array } | undefined>('data');
    if (!part) return;
    yield Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data);
  }
}

/** What a download holds in memory at most between reads (a line may be bigger: it is sent alone). */
const PAGE_BYTES = 4 * 1024 * 1024;

/**
 * A batch's outcome lines (`ok`: those that succeeded, else the others) in line order, as pages of JSONL of about
 * PAGE_BYTES: the lines' sizes are read first, then as many lines as fit.
 */
async function* outcomePages(db: Db, batchId: string, ok: boolean, pageSize = 512): AsyncGenerator<string> {
  let after = -1;
  for (;;) {
    const sizes: { line: number; n: number }[] = await db('batch_results')
      .where({ batch_id: batchId, ok })
      .andWhere('line', '>', after)
      .orderBy('line')
      .limit(pageSize)
      .select('line', db.raw('octet_length(output)::int as n'));
    if (!sizes.length) return;
    let bytes = 0;
    let last = sizes[0]!.line;
    for (const r of sizes) {
      if (bytes > 0 && bytes + r.n > PAGE_BYTES) break;
      bytes += r.n;
      last = r.line;
    }
    const rows: { output: string }[] = await db('batch_results')
      .where({ batch_id: batchId, ok })
      .andWhere('line', '>', after)
      .andWhere('line', '<=', last)
      .orderBy('line')
      .select('output');
    yield rows.map((r) => `${r.output}\n`).join('');
    after = last;
  }
}

/**
 * A batch's output and error files, made once its outcomes are all written: rows that name the outcomes (their bytes
 * counted here), under ids derived from the batch; none for a kind of outcome it has none of.
 */
export async function resultFiles(
  db: Db,
  f: { batchId: string; ownerId: number; ids: { output: string; errors: string }; expiresAt: Date },
): Promise<{ output: string | null; errors: string | null; completed: number; failed: number }> {
  const sums: { ok: boolean; n: number | string; bytes: number | string }[] = await db('batch_results')
    .where({ batch_id: f.batchId })
    .groupBy('ok')
    .select('ok', db.raw('count(*) as n'), db.raw('sum(octet_length(output) + 1) as bytes'));
  const out = { output: null as string | null, errors: null as string | null, completed: 0, failed: 0 };
  for (const r of sums) {
    const which = r.ok ? 'output' : 'errors';
    const id = f.ids[which];
    await db('files')
      .insert({
        id,
        owner_id: f.ownerId,
        filename: `${f.batchId}_${r.ok ? 'output' : 'error'}.jsonl`,
        purpose: 'batch_output',
        bytes: Number(r.bytes),
        status: 'uploaded',
        expires_at: f.expiresAt,
        batch_id: f.batchId,
        batch_ok: r.ok,
      })
      .onConflict('id')
      .ignore();
    out[which] = id;
    if (r.ok) out.completed = Number(r.n);
    else out.failed = Number(r.n);
  }
  return out;
}

/** Deletes files (and, for a batch's output or error file, the outcome lines that are its bytes). */
async function deleteFiles(db: Db, query: (q: ReturnType<Db>) => ReturnType<Db>): Promise<number> {
  return db.transaction(async (trx): Promise<number> => {
    const rows: { id: string; batch_id: string | null; batch_ok: boolean | null }[] = await query(trx('files')).select('id', 'batch_id', 'batch_ok');
    for (const r of rows) if (r.batch_id !== null) await trx('batch_results').where({ batch_id: r.batch_id, ok: r.batch_ok }).delete();
    if (!rows.length) return 0;
    return trx('files')
      .whereIn(
        'id',
        rows.map((r) => r.id),
      )
      .delete();
  });
}

export async function deleteFile(db: Db, ownerId: number, id: string): Promise<boolean> {
  return (await deleteFiles(db, (q) => q.where({ id, owner_id: ownerId }))) > 0;
}

/** Files past their expiry, deleted with their parts (up to `limit` at a time); answers how many. */
export async function deleteExpiredFiles(db: Db, now: Date, limit = 500): Promise<number> {
  return deleteFiles(db, (q) => q.where('expires_at', '<', now).limit(limit));
}

/** Uploads that never finished (their process died mid-way), older than `before`. */
export async function deleteStaleUploads(db: Db, before: Date): Promise<number> {
  return db('files').where({ status: 'uploading' }).andWhere('created_at', '<', before).delete();
}

// ---- batches --------------------------------------------------------------------------------------------------------

export async function createBatch(
  db: Db,
  b: {
    id: string;
    ownerId: number;
    tokenId: number | null;
    inputFileId: string;
    endpoint: string;
    completionWindow: string;
    metadata: Record<string, string> | null;
    expiresAt: Date;
    outputExpiresSeconds: number | null;
  },
): Promise<BatchRow> {
  const [row] = await db('batches')
    .insert({
      id: b.id,
      owner_id: b.ownerId,
      token_id: b.tokenId,
      input_file_id: b.inputFileId,
      endpoint: b.endpoint,
      completion_window: b.completionWindow,
      status: 'validating',
      metadata: b.metadata ? JSON.stringify(b.metadata) : null,
      created_at: db.fn.now(),
      expires_at: b.expiresAt,
      output_expires_seconds: b.outputExpiresSeconds,
    })
    .returning('*');
  return row as BatchRow;
}

/** The owner's batches that have not ended. */
export async function countRunningBatches(db: Db, ownerId: number): Promise<number> {
  const [{ n }] = await db('batches')
    .where({ owner_id: ownerId })
    .whereIn('status', ['validating', 'in_progress', 'finalizing', 'cancelling'])
    .count<{ n: string }[]>({ n: '*' });
  return Number(n);
}

export async function deleteBatch(db: Db, id: string): Promise<void> {
  await db('batches').where({ id }).delete();
}

/** Batches not ended whose window closed before `before`. */
export async function unendedBefore(db: Db, before: Date, limit = 100): Promise<BatchRow[]> {
  return db('batches').whereIn('status', ['validating', 'in_progress', 'finalizing', 'cancelling']).andWhere('expires_at', '<', before).limit(limit);
}

export const batchById = (db: Db, id: string) => db('batches').where({ id }).first<BatchRow | undefined>();

export const getBatch = (db: Db, ownerId: number, id: string) => db('batches').where({ id, owner_id: ownerId }).first<BatchRow | undefined>();

export async function listBatches(db: Db, ownerId: number, q: { limit: number; after?: string }): Promise<BatchRow[]> {
  const query = db('batches').where({ owner_id: ownerId });
  if (q.after) {
    const cursor = db('batches').where({ id: q.after, owner_id: ownerId }).select('created_at', 'id');
    query.andWhere(db.raw('(created_at, id)'), '<', cursor);
  }
  return query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(q.limit + 1);
}

/** Moves a batch to `to` (with its timestamp, and more fields) only from one of `from`; answers the row when it moved. */
export async function moveBatch(
  db: Db,
  id: string,
  from: readonly BatchStatus[],
  to: BatchStatus,
  more: Record<string, unknown> = {},
): Promise<BatchRow | undefined> {
  const [row] = await db('batches')
    .where({ id })
    .whereIn('status', from as BatchStatus[])
    .update({ status: to, [`${to}_at`]: db.fn.now(), ...more })
    .returning('*');
  return row as BatchRow | undefined;
}

/** Sets fields of a batch in one of `from` (its status unchanged). */
export async function updateBatch(db: Db, id: string, from: readonly BatchStatus[], fields: Record<string, unknown>): Promise<void> {
  await db('batches')
    .where({ id })
    .whereIn('status', from as BatchStatus[])
    .update(fields);
}

/** A batch's checked requests, inserted (again: a validation that is run again after a crash writes the same rows). */
export async function addRequests(db: Db, batchId: string, rows: { line: number; custom_id: string; request: string }[]): Promise<void> {
  if (!rows.length) return;
  // The rows as three arrays: four bound values in all, not four per row (quicker to build, send and plan).
  await db.raw(
    `insert into batch_requests (batch_id, line, custom_id, request)
     select ?, * from unnest(?::int[], ?::text[], ?::text[]) on conflict (batch_id, line) do nothing`,
    [batchId, rows.map((r) => r.line), rows.map((r) => r.custom_id), rows.map((r) => r.request)],
  );
}

/** Lines a failed check answered at once (their outcome is written now, in the error file later). */
export async function addResults(db: Db, rows: { batch_id: string; line: number; ok: boolean; output: string }[]): Promise<number> {
  if (!rows.length) return 0;
  const inserted = await db('batch_results').insert(rows).onConflict(['batch_id', 'line']).ignore().returning('line');
  return inserted.length;
}

/** A validation run again from the start: what the last one wrote goes. */
export async function clearLines(db: Db, batchId: string): Promise<void> {
  await db('batch_results').where({ batch_id: batchId }).delete();
  await db('batch_requests').where({ batch_id: batchId }).delete();
}

/** The requests of lines [from, to) that have no outcome yet. */
export async function pendingRequests(db: Db, batchId: string, from: number, to: number): Promise<{ line: number; custom_id: string; request: string }[]> {
  return db('batch_requests as r')
    .where('r.batch_id', batchId)
    .andWhere('r.line', '>=', from)
    .andWhere('r.line', '<', to)
    .whereNotExists(db('batch_results as o').where('o.batch_id', batchId).andWhereRaw('o.line = r.line'))
    .orderBy('r.line')
    .select('r.line', 'r.custom_id', 'r.request');
}

/** Marks a chunk ended (once) and answers how many of the batch's chunks have. */
export async function chunkEnded(db: Db, batchId: string, chunk: number): Promise<number> {
  await db('batch_chunks').insert({ batch_id: batchId, chunk }).onConflict(['batch_id', 'chunk']).ignore();
  const [{ n }] = await db('batch_chunks').where({ batch_id: batchId }).count<{ n: string }[]>({ n: '*' });
  return Number(n);
}

/** Adds to a batch's counts (in the transaction that wrote the outcomes). */
export async function countLines(db: Db, batchId: string, completed: number, failed: number, promptTokens: number): Promise<void> {
  if (!completed && !failed) return;
  await db('batches')
    .where({ id: batchId })
    .update({
      completed: db.raw('completed + ?', [completed]),
      failed: db.raw('failed + ?', [failed]),
      prompt_tokens: db.raw('prompt_tokens + ?', [promptTokens]),
    });
}

/** The lines that never ran (cancelled or expired), a page at a time. */
export async function* unrun(db: Db, batchId: string, pageSize = 500): AsyncGenerator<{ line: number; custom_id: string }[]> {
  let after = -1;
  for (;;) {
    const rows: { line: number; custom_id: string }[] = await db('batch_requests as r')
      .where('r.batch_id', batchId)
      .andWhere('r.line', '>', after)
      .whereNotExists(db('batch_results as o').where('o.batch_id', batchId).andWhereRaw('o.line = r.line'))
      .orderBy('r.line')
      .limit(pageSize)
      .select('r.line', 'r.custom_id');
    if (rows.length) yield rows;
    if (rows.length < pageSize) return;
    after = rows.at(-1)!.line;
  }
}

/** Lines of a batch that ended expired before they ran (their error line says batch_expired). */
export async function countExpiredLines(db: Db, batchId: string): Promise<number> {
  const [{ n }] = await db('batch_results')
    .where({ batch_id: batchId, ok: false })
    .andWhere('output', 'like', '%"code":"batch_expired"%')
    .count<{ n: string }[]>({ n: '*' });
  return Number(n);
}

/** Once the batch has ended, its requests are no longer needed (its outcomes are its files' bytes). */
export async function dropRequests(db: Db, batchId: string): Promise<void> {
  await db('batch_requests').where({ batch_id: batchId }).delete();
  await db('batch_chunks').where({ batch_id: batchId }).delete();
}

/** The API key a batch was created with, as it is now (its models, its quota), or undefined once deleted. */
export async function batchToken(
  db: Db,
  tokenId: number,
): Promise<
  { id: number; name: string; status: number; models: string | null; unlimited_quota: boolean; expired_time: number; remain_quota: number } | undefined
> {
  return db('tokens').where({ id: tokenId }).first('id', 'name', 'status', 'models', 'unlimited_quota', 'expired_time', 'remain_quota');
}
