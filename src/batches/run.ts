// A batch's work, on the workers: validation (the input file read line by line, each line checked as /v1/embeddings
// checks a request) and the fan-out into chunk jobs; a chunk (its lines embedded, their outcomes and their charge
// committed together, once); and finalizing (the output and error files written from the outcomes, in line order).
import crypto from 'node:crypto';
import { getUser } from '../accounts/store.js';
import { type LedgerOp, ledgerInTransaction, type Payer } from '../accounts/ledger.js';
import { isExpired, modelAllowed } from '../accounts/tokens.js';
import { TOKEN_STATUS, USER_STATUS } from '../accounts/schema.js';
import {
  type BatchCaller,
  type BatchOutcome,
  type BatchRequest,
  checkBatchBody,
  costOf,
  embedBatch,
  MAX_FLOATS_PER_REQUEST,
  modelPrice,
} from '../embeddings/batch-service.js';
import { AppError, forbidden, openaiErrorBody, toAppError, unauthorized } from '../errors.js';
import { isCancelled, JobCancelled } from '../jobs/cancel.js';
import type { JobContext } from '../jobs/define.js';
import { type CallInfo, consumeEntry } from '../logs/entries.js';
import { recordJobOwner } from '../logs/jobs-service.js';
import type { Platform } from '../platform.js';
import { batchEvent } from './events.js';
import { type BatchRow, type ChunkResult, FINAL_STATUSES, type FinalizeResult, MAX_REPORTED_ERRORS, type RunResult } from './schema.js';
import * as store from './store.js';

/** A line longer than this cannot be an embeddings request within /v1/embeddings' limits: the file fails on it. */
export const MAX_LINE_BYTES = 8 * 1024 * 1024;
/** Rows written in one insert while validating. */
const INSERT_ROWS = 500;

type ValidationError = { code: string; message: string; param: string | null; line: number | null };

const digest = (s: string) => crypto.createHash('sha256').update(s).digest('hex').slice(0, 24);
/** A line's ids in the output: derived from the batch and the line, so a line written again is the same line. */
const lineIds = (batchId: string, line: number) => ({ id: `batch_req_${digest(`${batchId}:${line}`)}`, requestId: `req_${digest(`${batchId}:${line}:r`)}` });

/** An output (or error) file line: OpenAI's BatchRequestOutput. */
function outputLine(
  batchId: string,
  line: number,
  customId: string,
  response: { status: number; body: string } | null,
  error: { code: string; message: string } | null,
): string {
  const { id, requestId } = lineIds(batchId, line);
  const res = response ? `{"status_code":${response.status},"request_id":"${requestId}","body":${response.body}}` : 'null';
  return `{"id":"${id}","custom_id":${JSON.stringify(customId)},"response":${res},"error":${error ? JSON.stringify(error) : 'null'}}`;
}

const failedLine = (batchId: string, line: number, customId: string, err: AppError) =>
  outputLine(batchId, line, customId, { status: err.status, body: JSON.stringify(openaiErrorBody(err)) }, null);

/** The input file's lines (1-based numbers), a part at a time: a line is never held longer than MAX_LINE_BYTES. */
async function* linesOf(p: Platform, fileId: string, read: { bytes: number }): AsyncGenerator<{ n: number; text: string } | { n: number; tooLong: true }> {
  let rest = Buffer.alloc(0);
  let n = 0;
  let skipping = false;
  for await (const part of store.readFile(p.db, { id: fileId, batch_id: null, batch_ok: null })) {
    read.bytes += part.length;
    let buf = rest.length ? Buffer.concat([rest, part]) : part;
    for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10)) {
      n++;
      if (skipping) skipping = false;
      else yield { n, text: buf.subarray(0, nl).toString('utf8').replace(/\r$/, '') };
      buf = buf.subarray(nl + 1);
    }
    if (buf.length > MAX_LINE_BYTES && !skipping) {
      yield { n: n + 1, tooLong: true };
      skipping = true;
    }
    rest = skipping ? Buffer.alloc(0) : Buffer.from(buf);
  }
  if (rest.length && !skipping) yield { n: n + 1, text: rest.toString('utf8').replace(/\r$/, '') };
}

/** Who the batch runs for now: its owner and API key as they are (a key deleted or disabled since fails its lines). */
async function callerOf(p: Platform, b: BatchRow): Promise<{ caller: BatchCaller; payer: Payer; call: Omit<CallInfo, 'model'> } | AppError> {
  const [user, token] = await Promise.all([getUser(p.db, b.owner_id), b.token_id === null ? undefined : store.batchToken(p.db, b.token_id)]);
  if (!user || user.status !== USER_STATUS.enabled)
    return new AppError(403, 'The owner of this batch is disabled or gone.', { code: 'user_disabled', type: 'invalid_request_error' });
  if (!token || token.status !== TOKEN_STATUS.enabled || isExpired(token)) {
    return unauthorized('The API key this batch was created with is deleted, disabled or expired.', { code: 'invalid_api_key', type: 'invalid_request_error' });
  }
  const who = { id: user.id, username: user.username, role: user.role, status: user.status, group: user.group };
  return {
    caller: { user: who, models: token.models },
    payer: { userId: user.id, token: { id: token.id, unlimited: token.unlimited_quota } },
    call: { user: who, token: { id: token.id, name: token.name }, requestId: b.id, startedAt: performance.now() },
  };
}

// ---- validation and fan-out -----------------------------------------------------------------------------------------

/** batches.run: validates the input file (once; a run again after a crash starts it over) and fans the lines out in chunks. */
export async function runBatch(p: Platform, batchId: string, lastAttempt = false): Promise<RunResult> {
  let b = await store.batchById(p.db, batchId);
  if (!b) throw new AppError(404, `Batch ${batchId} is gone`, { code: 'batch_not_found', retriable: false });
  if (b.status === 'validating') {
    try {
      b = await validate(p, b);
    } catch (err) {
      // Its last attempt: the batch fails, saying why, rather than stay validating for ever.
      if (!lastAttempt) throw err;
      const e = toAppError(err);
      b = await fail(p, b, [
        {
          code: 'validation_error',
          message: `The input file could not be checked: ${e.status < 500 ? e.message : 'a server error'}.`,
          param: null,
          line: null,
        },
      ]);
    }
  }
  if (b.status === 'in_progress' || b.status === 'cancelling') await fanOut(p, b);
  return { batch: b.id, status: b.status, total: b.total, chunks: b.chunks };
}

async function fail(p: Platform, b: BatchRow, errors: ValidationError[]): Promise<BatchRow> {
  await store.clearLines(p.db, b.id);
  const moved = await store.moveBatch(p.db, b.id, ['validating', 'cancelling'], 'failed', { errors: JSON.stringify(errors.slice(0, MAX_REPORTED_ERRORS)) });
  if (moved) await batchEvent(p, moved);
  return moved ?? (await store.batchById(p.db, b.id))!;
}

async function validate(p: Platform, b: BatchRow): Promise<BatchRow> {
  await store.clearLines(p.db, b.id);
  const who = await callerOf(p, b);
  if (who instanceof AppError) return fail(p, b, [{ code: who.code ?? 'invalid_api_key', message: who.message, param: null, line: null }]);
  const file = await store.fileById(p.db, b.input_file_id);
  if (!file) return fail(p, b, [{ code: 'invalid_file', message: `The input file ${b.input_file_id} was deleted.`, param: 'input_file_id', line: null }]);

  const errors: ValidationError[] = [];
  const seen = new Set<string>();
  let model: string | null = null;
  let line = 0;
  let prefailed = 0;
  let inputs = 0;
  // Chunks: the first line of each; one ends at BATCH_CHUNK_LINES lines, or before its vectors pass a request's floats.
  const chunkStarts: number[] = [];
  let chunkLines = 0;
  let chunkFloats = 0;
  const place = (floats: number) => {
    if (chunkStarts.length === 0 || chunkLines >= p.config.BATCH_CHUNK_LINES || chunkFloats + floats > MAX_FLOATS_PER_REQUEST) {
      chunkStarts.push(line);
      chunkLines = 0;
      chunkFloats = 0;
    }
    chunkLines++;
    chunkFloats += floats;
  };
  let requests: { line: number; custom_id: string; request: string }[] = [];
  let results: { batch_id: string; line: number; ok: boolean; output: string }[] = [];
  // Rows are written while the next lines are checked: one write in flight at a time, its error surfacing at the next.
  let writing: Promise<void> = Promise.resolve();
  const flush = async () => {
    const [rq, rs] = [requests, results];
    requests = [];
    results = [];
    await writing;
    writing = store.addRequests(p.db, b.id, rq).then(() => store.addResults(p.db, rs).then(() => undefined));
    writing.catch(() => undefined);
  };
  // Nothing may be written after the lines are cleared for a failure (or after an error is thrown for a run again).
  const settled = () =>
    writing.then(
      () => undefined,
      () => undefined,
    );
  const problem = (code: string, message: string, n: number, param: string | null = null) => errors.push({ code, message, param, line: n });

  const read = { bytes: 0 };
  try {
    for await (const l of linesOf(p, file.id, read)) {
      if (errors.length >= MAX_REPORTED_ERRORS) break;
      if ('tooLong' in l) {
        problem('line_too_long', `Line ${l.n} is longer than ${MAX_LINE_BYTES} bytes.`, l.n);
        continue;
      }
      if (l.text.trim() === '') continue;
      if (line >= p.config.BATCH_MAX_REQUESTS) {
        problem('too_many_requests', `The input file has more than ${p.config.BATCH_MAX_REQUESTS} requests, the most one batch may have.`, l.n);
        break;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(l.text);
      } catch {
        problem('invalid_json_line', `Line ${l.n} is not valid JSON.`, l.n);
        continue;
      }
      const o = (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : {}) as Record<string, unknown>;
      if (typeof o.custom_id !== 'string' || o.custom_id === '') {
        problem('missing_required_parameter', `Line ${l.n} has no custom_id (a non-empty string).`, l.n, 'custom_id');
        continue;
      }
      // (Postgres keeps no NUL in text: such an id would fail every write of the batch.)
      if (o.custom_id.length > 512 || o.custom_id.includes('\0'))
        problem('invalid_value', `Line ${l.n}: custom_id must be at most 512 characters, without NUL.`, l.n, 'custom_id');
      else if (seen.has(o.custom_id))
        problem('duplicate_custom_id', `Line ${l.n}: its custom_id is used by an earlier line; each must be unique.`, l.n, 'custom_id');
      if (o.method !== 'POST') problem('invalid_value', `Line ${l.n}: method must be 'POST'.`, l.n, 'method');
      if (o.url !== b.endpoint) problem('invalid_value', `Line ${l.n}: url must be the batch's endpoint '${b.endpoint}'.`, l.n, 'url');
      if (typeof o.body !== 'object' || o.body === null || Array.isArray(o.body)) {
        problem('missing_required_parameter', `Line ${l.n} has no body (the request's JSON object).`, l.n, 'body');
        continue;
      }
      const lineModel = (o.body as Record<string, unknown>).model;
      if (typeof lineModel === 'string' && lineModel.length <= 200 && !lineModel.includes('\0')) {
        model ??= lineModel;
        if (lineModel !== model)
          problem('mismatched_model', `Line ${l.n}: every line of a batch must use the same model as its first line.`, l.n, 'body.model');
      }
      seen.add(o.custom_id);
      if (errors.length) continue;
      try {
        const { floats, ...req } = await checkBatchBody(p, who.caller, o.body);
        inputs += req.inputs.length;
        if (inputs > p.config.BATCH_MAX_INPUTS) {
          problem('too_many_inputs', `The input file has more than ${p.config.BATCH_MAX_INPUTS} embedding inputs in all, the most one batch may have.`, l.n);
          break;
        }
        place(floats);
        requests.push({ line, custom_id: o.custom_id, request: p.secrets.encrypt(JSON.stringify(req)) });
      } catch (raw) {
        // The line's own request is refused (as /v1/embeddings would answer it): it goes to the error file, the rest run.
        const err = toAppError(raw);
        if (err.status >= 500) throw raw;
        place(0);
        requests.push({ line, custom_id: o.custom_id, request: '' });
        results.push({ batch_id: b.id, line, ok: false, output: failedLine(b.id, line, o.custom_id, err) });
        prefailed++;
      }
      line++;
      if (requests.length >= INSERT_ROWS) await flush();
    }
  } catch (err) {
    await settled();
    throw err;
  }
  // Fewer bytes than the file has: it was deleted (or cut) while it was read; what was read is not the batch.
  if (!errors.length && read.bytes < Number(file.bytes)) {
    errors.push({ code: 'invalid_file', message: 'The input file was deleted while it was being checked.', param: 'input_file_id', line: null });
  }
  if (!errors.length && line === 0) problem('empty_file', 'The input file has no requests.', 1);
  if (errors.length) {
    await settled();
    return fail(p, b, errors);
  }
  await flush();
  await writing;
  const counted = { total: line, failed: prefailed, chunks: chunkStarts.length, chunk_starts: JSON.stringify(chunkStarts), model };
  const moved = await store.moveBatch(p.db, b.id, ['validating'], 'in_progress', counted);
  if (moved) return moved;
  // Cancelled while it was validated: its chunks run nothing, and it ends cancelled.
  await store.updateBatch(p.db, b.id, ['cancelling'], counted);
  return (await store.batchById(p.db, b.id))!;
}

const chunkJobId = (batchId: string, chunk: number) => `batches-${batchId}-chunk-${chunk}`;
const finalizeJobId = (batchId: string) => `batches-${batchId}-finalize`;

/** One chunk job per BATCH_CHUNK_LINES lines, each under an id of its own (enqueued again, it is the same job). */
async function fanOut(p: Platform, b: BatchRow): Promise<void> {
  const starts = b.chunk_starts ?? [];
  for (let c = 0; c < b.chunks; c++) {
    const jobId = chunkJobId(b.id, c);
    await recordJobOwner(p.db, { jobId, ownerId: b.owner_id, queue: 'batches', name: 'batches.chunk' });
    await p.jobs.enqueue('batches.chunk', { batchId: b.id, chunk: c, from: starts[c]!, to: starts[c + 1] ?? b.total }, { owner: b.owner_id, jobId });
  }
  if (b.chunks === 0) await finalizeLater(p, b);
}

async function finalizeLater(p: Platform, b: BatchRow): Promise<void> {
  const jobId = finalizeJobId(b.id);
  await recordJobOwner(p.db, { jobId, ownerId: b.owner_id, queue: 'batches', name: 'batches.finalize' });
  await p.jobs.enqueue('batches.finalize', { batchId: b.id }, { owner: b.owner_id, jobId });
}

// ---- a chunk --------------------------------------------------------------------------------------------------------

/** Whether the batch's lines should still run: not cancelled, not past its window. */
const running = (b: BatchRow) => b.status === 'in_progress' && (!b.expires_at || b.expires_at.getTime() > Date.now());

/**
 * batches.chunk: lines [from, to) without an outcome yet are embedded; their outcomes and their charge commit in one
 * transaction, each line once (a chunk run again after a crash finds the lines it wrote and charges nothing for them).
 * A batch cancelled or past its window runs nothing more. The last chunk to end enqueues the finalizing.
 */
export async function runChunk(
  p: Platform,
  job: { batchId: string; chunk: number; from: number; to: number },
  ctx: Pick<JobContext, 'signal' | 'job'>,
): Promise<ChunkResult> {
  const b = await store.batchById(p.db, job.batchId);
  const result: ChunkResult = { batch: job.batchId, chunk: job.chunk, completed: 0, failed: 0, skipped: 0 };
  if (!b || FINAL_STATUSES.includes(b.status)) return result;
  if (running(b) && !isCancelled(ctx.signal)) {
    const rows = await store.pendingRequests(p.db, b.id, job.from, job.to);
    if (rows.length) Object.assign(result, await runLines(p, b, rows, ctx));
  } else result.skipped = job.to - job.from;
  const ended = await store.chunkEnded(p.db, b.id, job.chunk);
  if (ended >= b.chunks) await finalizeLater(p, b);
  if (isCancelled(ctx.signal)) throw new JobCancelled(result);
  return result;
}

async function runLines(
  p: Platform,
  b: BatchRow,
  rows: { line: number; custom_id: string; request: string }[],
  ctx: Pick<JobContext, 'job'>,
): Promise<Pick<ChunkResult, 'completed' | 'failed'>> {
  const requests = rows.map((r) => JSON.parse(p.secrets.decrypt(r.request)) as BatchRequest);
  const who = await callerOf(p, b);
  const everyLine = (err: AppError) =>
    commit(
      p,
      b,
      rows,
      rows.map(() => ({ ok: false, error: err }) as BatchOutcome),
      null,
    );
  if (who instanceof AppError) return everyLine(who);
  // The key may have lost the model since the batch was checked: its lines are refused as /v1/embeddings would refuse them.
  if (!modelAllowed(who.caller.models, b.model!)) {
    return everyLine(
      forbidden(`This API key may not use the model '${b.model}'.`, { code: 'model_not_allowed', type: 'invalid_request_error', param: 'model' }),
    );
  }
  let price: number;
  try {
    price = (await modelPrice(p, who.caller.user, b.model!)) * p.config.BATCH_PRICE_MULTIPLIER;
  } catch (raw) {
    return everyLine(toAppError(raw));
  }
  const tokens = requests.reduce((n, r) => n + r.tokens.reduce((a, t) => a + t, 0), 0);
  const held = await p.ledger.reserve(who.payer, costOf(tokens, price));
  if (!held.ok) {
    const err = new AppError(403, `Quota is short: ${held.which === 'token' ? "this API key's" : "the user's"} remaining quota is below this chunk's cost.`, {
      code: 'insufficient_quota',
      type: 'insufficient_quota',
    });
    return everyLine(err);
  }
  const lastAttempt = ctx.job.attemptsMade + 1 >= (ctx.job.opts.attempts ?? 1);
  let outcomes: BatchOutcome[];
  try {
    outcomes = await embedBatch(p, who.caller, requests);
  } catch (err) {
    await p.ledger.refund(held.reservation).catch(() => {});
    // Its last attempt: the failure is every line's outcome (the error file), and the batch goes on.
    if (lastAttempt) return everyLine(toAppError(err));
    throw err;
  }
  // A line that failed for a passing reason (an upstream down, rate limited) is tried again with the chunk, while attempts last.
  const retryLater = lastAttempt ? outcomes.map(() => false) : outcomes.map((o) => !o.ok && o.error.retriable);
  const done = await commit(
    p,
    b,
    rows.filter((_, i) => !retryLater[i]),
    outcomes.filter((_, i) => !retryLater[i]),
    { payer: who.payer, reservation: held.reservation, price, call: { ...who.call, model: b.model! } },
  );
  if (retryLater.some(Boolean)) throw toAppError((outcomes.find((o, i) => retryLater[i] && !o.ok) as { error: AppError }).error);
  return done;
}

/** The outcomes written (each line once) with their charge and its log row, in one transaction. */
async function commit(
  p: Platform,
  b: BatchRow,
  rows: { line: number; custom_id: string }[],
  outcomes: BatchOutcome[],
  bill: { payer: Payer; reservation: { payer: Payer; amount: number; id: string | null }; price: number; call: CallInfo } | null,
): Promise<Pick<ChunkResult, 'completed' | 'failed'>> {
  const lines = rows.map((r, i) => {
    const o = outcomes[i]!;
    return {
      batch_id: b.id,
      line: r.line,
      ok: o.ok,
      output: o.ok ? outputLine(b.id, r.line, r.custom_id, { status: 200, body: o.body }, null) : failedLine(b.id, r.line, r.custom_id, o.error),
    };
  });
  const tokensOf = new Map(rows.map((r, i) => [r.line, outcomes[i]!.ok ? (outcomes[i] as { promptTokens: number }).promptTokens : 0]));
  return p.db.transaction(async (trx) => {
    const inserted = lines.length ? await trx('batch_results').insert(lines).onConflict(['batch_id', 'line']).ignore().returning(['line', 'ok']) : [];
    const completed = inserted.filter((r: { ok: boolean }) => r.ok).length;
    const failed = inserted.length - completed;
    const promptTokens = inserted.reduce((n: number, r: { line: number }) => n + (tokensOf.get(r.line) ?? 0), 0);
    if (bill) {
      const ops: LedgerOp[] =
        completed > 0
          ? [
              {
                k: 'settle',
                payer: bill.payer,
                amount: bill.reservation.amount,
                actual: costOf(promptTokens, bill.price),
                reservation: bill.reservation.id,
                log: consumeEntry(bill.call, { quota: costOf(promptTokens, bill.price), promptTokens, price: bill.price, cacheHit: false }),
              },
            ]
          : [{ k: 'refund', payer: bill.payer, amount: bill.reservation.amount, reservation: bill.reservation.id }];
      if (bill.reservation.amount > 0 || completed > 0) await ledgerInTransaction(trx, ops);
    }
    await store.countLines(trx, b.id, completed, failed, promptTokens);
    return { completed, failed };
  });
}

// ---- finalizing -----------------------------------------------------------------------------------------------------

/** The output and error files' ids: derived from the batch, so a finalizing run again replaces what it wrote. */
const resultFileId = (batchId: string, which: 'output' | 'errors') => `file-${digest(`${batchId}:${which}`)}`;

/**
 * batches.finalize: lines that never ran (cancelled, expired) get their error line; the output file (lines that
 * succeeded) and the error file (the others) are written in line order; the batch reaches its final status.
 */
export async function finalizeBatch(p: Platform, batchId: string): Promise<FinalizeResult> {
  let b = await store.batchById(p.db, batchId);
  if (!b) throw new AppError(404, `Batch ${batchId} is gone`, { code: 'batch_not_found', retriable: false });
  if (FINAL_STATUSES.includes(b.status)) {
    // Ended by an earlier run that died before its last steps: they are done again (each is idempotent).
    await store.dropRequests(p.db, batchId);
    await batchEvent(p, b);
    return { batch: b.id, status: b.status, completed: b.completed, failed: b.failed };
  }
  if (b.status === 'in_progress') b = (await store.moveBatch(p.db, b.id, ['in_progress'], 'finalizing')) ?? (await store.batchById(p.db, b.id))!;
  // Read after the move: a cancel that came in between makes it a cancelled batch.
  const cancelled = b.status === 'cancelling';
  const expired = !cancelled && b.expires_at !== null && b.expires_at.getTime() <= Date.now();
  const code = cancelled ? 'batch_cancelled' : 'batch_expired';
  const message = cancelled ? 'This request was not run: the batch was cancelled.' : 'This request was not run: the batch expired before it ran.';
  let unrunLines = 0;
  for await (const unrun of store.unrun(p.db, b.id)) {
    unrunLines += unrun.length;
    await store.addResults(
      p.db,
      unrun.map((r) => ({ batch_id: batchId, line: r.line, ok: false, output: outputLine(batchId, r.line, r.custom_id, null, { code, message }) })),
    );
  }
  // A finalizing run again after one that wrote them finds no unrun lines: the expired ones are counted from the rows.
  if (expired && unrunLines === 0) unrunLines = await store.countExpiredLines(p.db, batchId);
  const expiresAt = new Date(Date.now() + (b.output_expires_seconds ?? p.config.FILE_RETENTION_DAYS * 86_400) * 1000);
  // The files are the outcomes themselves (read in line order): made here as rows that name them, nothing copied.
  const files = await store.resultFiles(p.db, {
    batchId,
    ownerId: b.owner_id,
    ids: { output: resultFileId(batchId, 'output'), errors: resultFileId(batchId, 'errors') },
    expiresAt,
  });
  const status = cancelled ? 'cancelled' : expired && unrunLines > 0 ? 'expired' : 'completed';
  const moved = await store.moveBatch(p.db, batchId, ['finalizing', 'cancelling'], status, {
    output_file_id: files.output,
    error_file_id: files.errors,
    completed: files.completed,
    failed: files.failed,
  });
  if (moved) {
    await store.dropRequests(p.db, batchId);
    await batchEvent(p, moved);
  }
  const now = moved ?? (await store.batchById(p.db, batchId))!;
  return { batch: batchId, status: now.status, completed: now.completed, failed: now.failed };
}
