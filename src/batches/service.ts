// The Files and Batch APIs (OpenAI's, for /v1/embeddings): uploads streamed into Postgres a part at a time, files and
// batches seen only by their owner (another user's is a 404), a batch created as a job (src/batches/run.ts), cancelled
// by asking its chunks to stop.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Principal } from '../accounts/auth.js';
import { AppError, badRequest, conflict, notFound, tooManyRequests } from '../errors.js';
import { recordJobOwner } from '../logs/jobs-service.js';
import type { Platform } from '../platform.js';
import * as s from './schema.js';
import { batchEvent } from './events.js';
import * as store from './store.js';

/** An upload that has not finished within this long is taken to be abandoned (its process died) and deleted. */
const STALE_UPLOAD_MS = 6 * 3_600_000;

const fileNotFound = (id: string) => notFound(`No such File object: ${id}`, { code: 'file_not_found', type: 'invalid_request_error', param: 'file_id' });
const batchNotFound = (id: string) =>
  notFound(`No batch found with id '${id}'.`, { code: 'batch_not_found', type: 'invalid_request_error', param: 'batch_id' });
/** openai-node retries a 409 or 429 unless told not to: a limit or an ended batch will answer the same again. */
const NO_RETRY = { 'x-should-retry': 'false' };
const invalid = (message: string, param: string | null) => badRequest(message, { param, type: 'invalid_request_error' });

const expiresIn = (p: Platform) => new Date(Date.now() + p.config.FILE_RETENTION_DAYS * 86_400_000);

/**
 * POST /v1/files: one `file` part (kept as it arrives, a part of PART_BYTES at a time, never whole in memory) and its
 * `purpose` (before or after the file: openai-node sends the file first). Over BATCH_MAX_FILE_BYTES is a 413 and
 * keeps nothing; so does any other failure.
 */
export async function upload(p: Platform, principal: Principal, req: IncomingMessage): Promise<s.FileRow> {
  const owner = principal.user.id;
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: { files: 1, fields: 8, fieldSize: 1024, parts: 12, fileSize: p.config.BATCH_MAX_FILE_BYTES } });
  } catch {
    throw invalid("The body must be multipart/form-data with a 'file' part and a 'purpose' field.", null);
  }
  // The file's row is made first, counted with the owner's others under a lock: uploads at once cannot pass the limit.
  const id = store.newFileId();
  await store.asOwner(p.db, owner, async (trx) => {
    if ((await store.countFiles(trx, owner)) >= p.config.FILES_PER_USER) {
      throw tooManyRequests(`You keep ${p.config.FILES_PER_USER} files already: delete some first.`, 60, {
        code: 'too_many_files',
        type: 'invalid_request_error',
        headers: NO_RETRY,
      });
    }
    await store.createFile(trx, { id, ownerId: owner, filename: 'upload.jsonl', purpose: 'batch', expiresAt: null });
  });
  try {
    return await receive(p, req, parser, id);
  } catch (err) {
    await store.dropFile(p.db, id).catch(() => {});
    throw err;
  }
}

/** The upload's parts: its fields, and its one file part kept as it arrives. */
async function receive(p: Platform, req: IncomingMessage, parser: busboy.Busboy, id: string): Promise<s.FileRow> {
  const fields: Record<string, string> = {};
  let filename = 'upload.jsonl';
  let stored: Promise<{ bytes: number } | AppError> | undefined;
  parser.on('field', (name, value) => {
    fields[name] = value;
  });
  parser.on('file', (name, stream, info) => {
    if (name !== 'file' || stored) {
      stream.resume();
      return;
    }
    filename = (info.filename ?? '').split(/[\\/]/).pop()!.slice(0, 255) || 'upload.jsonl';
    stored = storeUpload(p, id, stream, p.config.BATCH_MAX_FILE_BYTES);
  });
  const ended = new Promise<void>((resolve, reject) => {
    parser.on('close', resolve);
    parser.on('error', reject);
  });
  // A client that goes mid-upload: the parser (and the file part it is reading) fail, and what was kept is dropped.
  req.once('close', () => req.complete || parser.destroy(new Error('the client closed the connection mid-upload')));
  req.pipe(parser);
  try {
    await ended;
  } catch {
    await stored;
    throw invalid('The multipart body is malformed.', null);
  }
  const kept = await stored;
  if (!kept) throw invalid("Missing required parameter: 'file'.", 'file');
  if (kept instanceof AppError) throw kept;
  const purpose = fields.purpose;
  if (!purpose || !(s.UPLOAD_PURPOSES as readonly string[]).includes(purpose)) {
    throw purpose
      ? invalid(
          `Invalid value for 'purpose': this server takes files for ${s.UPLOAD_PURPOSES.map((x) => `'${x}'`).join(', ')} only, but got '${purpose.slice(0, 64)}'.`,
          'purpose',
        )
      : invalid("Missing required parameter: 'purpose'.", 'purpose');
  }
  const expiresAt = uploadExpiry(p, fields);
  await p.db('files').where({ id }).update({ expires_at: expiresAt, filename });
  return store.finishFile(p.db, id, kept.bytes, purpose);
}

/** `expires_after[anchor]` and `expires_after[seconds]` as OpenAI takes them (anchor created_at, 3600-2592000 s), or the default. */
function uploadExpiry(p: Platform, fields: Record<string, string>): Date {
  const anchor = fields['expires_after[anchor]'];
  const raw = fields['expires_after[seconds]'];
  if (anchor === undefined && raw === undefined) return expiresIn(p);
  const seconds = Number(raw);
  if (anchor !== 'created_at') throw invalid("Invalid value for 'expires_after[anchor]': expected 'created_at'.", 'expires_after[anchor]');
  if (!Number.isInteger(seconds) || seconds < 3600 || seconds > 2_592_000) {
    throw invalid("Invalid value for 'expires_after[seconds]': expected an integer from 3600 to 2592000.", 'expires_after[seconds]');
  }
  return new Date(Date.now() + seconds * 1000);
}

/** The file part's bytes into Postgres, a part at a time; an AppError (too large, a write that failed) keeps nothing. */
async function storeUpload(p: Platform, id: string, stream: Readable & { truncated?: boolean }, max: number): Promise<{ bytes: number } | AppError> {
  let seq = 0;
  let bytes = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      bytes += chunk.length;
      if (pendingBytes >= store.PART_BYTES) {
        await store.addPart(p.db, id, seq++, Buffer.concat(pending));
        pending = [];
        pendingBytes = 0;
      }
    }
    if (stream.truncated) {
      return new AppError(413, `The file is larger than ${max} bytes, the most one file may have.`, {
        code: 'file_too_large',
        type: 'invalid_request_error',
        param: 'file',
      });
    }
    if (pendingBytes) await store.addPart(p.db, id, seq, Buffer.concat(pending));
    return { bytes };
  } catch (err) {
    stream.resume();
    return err instanceof AppError ? err : new AppError(500, 'The file could not be stored.', { code: 'file_not_stored' });
  }
}

export async function getFile(p: Platform, principal: Principal, id: string): Promise<s.FileRow> {
  const found = s.fileIdOrNull(id) && (await store.getFile(p.db, principal.user.id, id));
  if (!found) throw fileNotFound(id);
  return found;
}

export async function listFiles(p: Platform, principal: Principal, q: s.FilesQuery) {
  const rows = await store.listFiles(p.db, principal.user.id, q);
  return s.page(rows.map(s.fileObject), q.limit);
}

export async function deleteFile(p: Platform, principal: Principal, id: string) {
  if (!s.fileIdOrNull(id) || !(await store.deleteFile(p.db, principal.user.id, id))) throw fileNotFound(id);
  return { id, object: 'file' as const, deleted: true };
}

/** A file's bytes as a stream, read a part at a time. */
export async function fileContent(p: Platform, principal: Principal, id: string): Promise<{ file: s.FileRow; body: Readable }> {
  const file = await getFile(p, principal, id);
  return { file, body: Readable.from(store.readFile(p.db, file)) };
}

// ---- batches --------------------------------------------------------------------------------------------------------

/** POST /v1/batches: the batch is recorded (validating) and its job queued; the input file is read by that job. */
export async function createBatch(p: Platform, principal: Principal, input: s.CreateBatch): Promise<s.BatchRow> {
  const file = s.fileIdOrNull(input.inputFileId) && (await store.getFile(p.db, principal.user.id, input.inputFileId));
  if (!file) throw fileNotFound(input.inputFileId);
  if (file.purpose !== 'batch') throw invalid(`The file ${file.id} was not uploaded with purpose 'batch'.`, 'input_file_id');
  const id = store.newBatchId();
  const row = await store.asOwner(p.db, principal.user.id, async (trx) => {
    if ((await store.countRunningBatches(trx, principal.user.id)) >= p.config.BATCHES_RUNNING_PER_USER) {
      throw tooManyRequests(`You have ${p.config.BATCHES_RUNNING_PER_USER} batches that have not ended: wait for one, or cancel one.`, 60, {
        code: 'too_many_batches',
        type: 'invalid_request_error',
        headers: NO_RETRY,
      });
    }
    return store.createBatch(trx, {
      id,
      ownerId: principal.user.id,
      tokenId: principal.token?.id ?? null,
      inputFileId: file.id,
      endpoint: s.BATCH_ENDPOINT,
      completionWindow: s.COMPLETION_WINDOW,
      metadata: input.metadata,
      expiresAt: new Date(Date.now() + s.COMPLETION_WINDOW_MS),
      outputExpiresSeconds: input.outputExpiresAfterSeconds ?? null,
    });
  });
  const jobId = `batches-${id}-run`;
  try {
    await recordJobOwner(p.db, { jobId, ownerId: principal.user.id, queue: 'batches', name: 'batches.run' });
    await p.jobs.enqueue('batches.run', { batchId: id }, { owner: principal.user.id, jobId });
  } catch (err) {
    // Not queued (Redis away): no batch stands waiting for ever; the client may create it again.
    await store.deleteBatch(p.db, id).catch(() => {});
    throw err;
  }
  return row;
}

export async function getBatch(p: Platform, principal: Principal, id: string): Promise<s.BatchRow> {
  const found = s.batchIdOrNull(id) && (await store.getBatch(p.db, principal.user.id, id));
  if (!found) throw batchNotFound(id);
  return found;
}

export async function listBatches(p: Platform, principal: Principal, q: s.BatchesQuery) {
  const rows = await store.listBatches(p.db, principal.user.id, q);
  return s.page(rows.map(s.batchObject), q.limit);
}

/**
 * POST /v1/batches/{id}/cancel: `cancelling` at once; chunks not yet run run nothing, those running finish their lines,
 * then the batch is `cancelled` with what had completed in its output file. A batch that has ended is a 409.
 */
export async function cancelBatch(p: Platform, principal: Principal, id: string): Promise<s.BatchRow> {
  const b = await getBatch(p, principal, id);
  const moved = await store.moveBatch(p.db, b.id, ['validating', 'in_progress'], 'cancelling');
  // Its chunks (or its validation) see it and end; the last to end finalizes it (a chunk that ended before has already
  // queued the finalizing, which sees `cancelling`).
  if (moved) return moved;
  const now = (await store.getBatch(p.db, principal.user.id, id))!;
  if (now.status === 'cancelling') return now;
  throw conflict(`Cannot cancel a batch with status '${now.status}'.`, { code: 'batch_not_cancellable', type: 'invalid_request_error', headers: NO_RETRY });
}

/** files.expire: files past their expiry, and uploads abandoned mid-way. */
export async function expireFiles(p: Platform): Promise<{ deleted: number; repaired: number }> {
  let deleted = 0;
  for (let n = 1; n > 0; deleted += n) n = await store.deleteExpiredFiles(p.db, new Date());
  deleted += await store.deleteStaleUploads(p.db, new Date(Date.now() - STALE_UPLOAD_MS));
  return { deleted, repaired: await repairBatches(p) };
}

/** How long past its window a batch may stay unended before the hourly repair ends it. */
const REPAIR_AFTER_MS = 3_600_000;

/**
 * Batches an hour past their 24 h window that have still not ended (a finalizing job that failed for good, a job
 * lost with Redis) are ended now: one still validating fails; any other is finalized (expired, or cancelled if it was
 * being cancelled) by a finalizing job of its own, which, like every finalizing, may run twice without harm.
 */
export async function repairBatches(p: Platform): Promise<number> {
  const stuck = await store.unendedBefore(p.db, new Date(Date.now() - REPAIR_AFTER_MS));
  for (const b of stuck) {
    if (b.status === 'validating') {
      const failed = await store.moveBatch(p.db, b.id, ['validating'], 'failed', {
        errors: JSON.stringify([{ code: 'batch_expired', message: 'The input file was not checked within the 24 h window.', param: null, line: null }]),
      });
      if (failed) await batchEvent(p, failed);
      continue;
    }
    const jobId = `batches-${b.id}-finalize-repair-${Date.now()}`;
    await recordJobOwner(p.db, { jobId, ownerId: b.owner_id, queue: 'batches', name: 'batches.finalize' });
    await p.jobs.enqueue('batches.finalize', { batchId: b.id }, { owner: b.owner_id, jobId });
  }
  if (stuck.length) p.log.warn({ batches: stuck.map((b) => b.id) }, 'ended batches past their window that had not ended');
  return stuck.length;
}
