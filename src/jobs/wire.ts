// What crosses Redis between producers and workers: the job envelope, direct replies, encoded failures, stored payloads.
import type { Knex } from 'knex';
import type { QueueName } from '../config.js';
import { queueNames } from '../config.js';
import type { Db } from '../db.js';
import { AppError } from '../errors.js';
import { safeEqual, type Secrets } from '../secrets.js';

/** What travels in Redis: the payload (or where to find it) and who asked for it. */
export interface JobEnvelope<P = unknown> {
  owner: number | null;
  requestId?: string;
  payload?: P;
  /** Set when the payload was too large for the queue: it is in job_payloads under the job id. */
  payloadRef?: string;
  /** The payload, JSON encrypted with SECRET_KEY (payloadIn 'sealed'): only workers read it. */
  sealed?: string;
  /** For 'direct' replies: the pub/sub channel of the process waiting for the result. */
  replyTo?: string;
  /**
   * The enqueuer's signature (HMAC-SHA256 under SECRET_KEY) of the job's id, name and every field above: a worker
   * runs only jobs the API made, for the owner it checked (not one added or edited through Bull Board or Redis).
   */
  sig?: string;
}

/** What is signed: the id and name (a signed envelope copied into another job does not verify), then the envelope as it travels. */
const signedText = (jobId: string, name: string, envelope: Omit<JobEnvelope, 'sig'>) => `${jobId}\n${name}\n${JSON.stringify(envelope)}`;

/** Signs an envelope in place, last: its other fields must not change after this. */
export function signEnvelope(secrets: Pick<Secrets, 'signJob'>, jobId: string, name: string, envelope: JobEnvelope): void {
  delete envelope.sig;
  envelope.sig = secrets.signJob(signedText(jobId, name, envelope));
}

/**
 * The id a job scheduler's template envelope is signed under (BullMQ's upsertJobScheduler): its jobs' ids change with
 * each tick (`repeat:<scheduler id>:<ms>`) while the template is signed once, so it is signed for the scheduler.
 */
export const schedulerSignedId = (schedulerId: string) => `scheduler:${schedulerId}`;

/** The id a job's envelope was signed under: its own, or its scheduler's for a job a scheduler made. */
export const signedIdOf = (job: { id?: string; repeatJobKey?: string }): string => (job.repeatJobKey ? schedulerSignedId(job.repeatJobKey) : job.id!);

/**
 * Whether a job's envelope is the one the API signed for this id and name. Its fields are serialised in the order they
 * arrived (JSON keeps it), as they were when signed, so any added, removed or changed field breaks it.
 */
export function verifyEnvelope(secrets: Pick<Secrets, 'verifyJob'>, jobId: string, name: string, data: unknown): data is JobEnvelope {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return false;
  const { sig, ...rest } = data as JobEnvelope;
  return typeof sig === 'string' && secrets.verifyJob(signedText(jobId, name, rest), sig);
}

/** Whether an envelope's signature is SECRET_KEY's own (not the previous key's): what a key rotation re-signs. */
export function signedWithCurrentKey(secrets: Pick<Secrets, 'signJob'>, jobId: string, name: string, data: JobEnvelope): boolean {
  const { sig, ...rest } = data;
  return typeof sig === 'string' && safeEqual(sig, secrets.signJob(signedText(jobId, name, rest)));
}

/**
 * What a worker publishes on a replyTo channel: the result itself when small, else the id of its
 * job_results row (a reply must never be large: Redis drops a subscriber whose output buffer passes
 * its pub/sub limit, and with it every reply for that API process).
 */
export type DirectReply = { id: string; result: unknown } | { id: string; resultRef: string } | { id: string; error: ReturnType<AppError['toJSON']> };

/** What a 'direct' job keeps as its return value: the result itself went to the waiter. */
export const DELIVERED = { delivered: true } as const;

/**
 * A job's return value when its result is in job_results (`delivered` too for a 'direct' job: its
 * waiter was sent the reference and deletes the row once read).
 */
export interface ResultRef {
  resultRef: string;
  delivered?: true;
}

/** The job_results id a return value or reply refers to, if it is a reference. */
export function resultRefOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const ref = (value as { resultRef?: unknown }).resultRef;
  return typeof ref === 'string' ? ref : undefined;
}

/** Why a worker refuses a job whose envelope does not verify: not retried, since no retry makes it the API's. */
export const unsignedJob = () =>
  new AppError(
    403,
    "This job's signature does not verify (it was added or edited outside the API, or the API's SECRET_KEY is not this worker's): refused without running",
    {
      code: 'job_not_signed',
      retriable: false,
    },
  );

/** The payload of a job, from the envelope (opening it when sealed) or from Postgres. */
export async function loadPayload(db: Db, secrets: Pick<Secrets, 'decrypt'>, envelope: JobEnvelope): Promise<unknown> {
  if (envelope.sealed !== undefined) {
    let plain: string;
    try {
      plain = secrets.decrypt(envelope.sealed);
    } catch {
      // Another key sealed it: this worker's SECRET_KEY is not the API's. Retrying here would not help.
      throw new AppError(500, "This job's payload is sealed with another SECRET_KEY: every API and worker process must share one", {
        code: 'payload_sealed_elsewhere',
        retriable: false,
      });
    }
    return JSON.parse(plain);
  }
  if (!envelope.payloadRef) return envelope.payload;
  const row = await db('job_payloads').where({ job_id: envelope.payloadRef }).first('data');
  if (!row) throw new AppError(410, 'The payload of this job is gone (job_payloads row removed)', { code: 'payload_missing', retriable: false });
  return JSON.parse(row.data as string);
}

export async function storePayload(db: Db, jobId: string, json: string): Promise<void> {
  await db('job_payloads').insert({ job_id: jobId, data: json });
}

export async function dropPayload(db: Db, envelope: JobEnvelope): Promise<void> {
  if (envelope.payloadRef) await db('job_payloads').where({ job_id: envelope.payloadRef }).delete();
}

/** Keeps a serialised result for ttlSeconds (the job's own retention); a re-run job overwrites it. */
export async function storeResult(db: Db, jobId: string, json: string, ttlSeconds: number): Promise<void> {
  await db('job_results')
    .insert({ job_id: jobId, data: json, expires_at: db.raw('now() + make_interval(secs => ?)', [ttlSeconds]) })
    .onConflict('job_id')
    .merge();
}

/** A stored result, or undefined when it is gone (expired, swept, or already taken). */
export async function loadResult(db: Db, ref: string): Promise<unknown> {
  const row = await db('job_results').where({ job_id: ref }).first('data');
  return row ? JSON.parse(row.data as string) : undefined;
}

/** Reads and deletes a stored result in one statement: for 'direct' replies, which have one reader. */
export async function takeResult(db: Db, ref: string): Promise<{ found: boolean; result?: unknown }> {
  const rows: { data: string }[] = await db('job_results').where({ job_id: ref }).delete().returning('data');
  return rows.length ? { found: true, result: JSON.parse(rows[0]!.data) } : { found: false };
}

/** Everything a job keeps in Postgres (its payload and result), for a job that is removed. */
export async function dropJobStorage(db: Db, jobId: string): Promise<void> {
  await db('job_payloads').where({ job_id: jobId }).delete();
  await db('job_results').where({ job_id: jobId }).delete();
}

/**
 * Deletes, in batches of `batch` rows, payloads older than payloadMaxAgeSeconds (their job finished
 * or was removed without its row going too: a crash between two steps, a stalled job failed by
 * BullMQ, a queue cleaned from Bull Board) and results past their expires_at. Safe to run from any
 * number of processes at once: each batch skips rows another sweep has locked.
 */
export async function sweepJobStorage(
  db: Db,
  opts: { payloadMaxAgeSeconds: number; batch?: number; maxBatches?: number },
): Promise<{ payloads: number; results: number }> {
  const batch = opts.batch ?? 500;
  const sweep = async (table: 'job_payloads' | 'job_results', condition: [column: string, bound: Knex.Raw]) => {
    let total = 0;
    for (let i = 0; i < (opts.maxBatches ?? 20); i++) {
      const victims = db(table).select('job_id').where(condition[0], '<', condition[1]).limit(batch).forUpdate().skipLocked();
      // (returning: knex-pglite does not answer a delete with a row count)
      const n = ((await db(table).whereIn('job_id', victims).delete().returning('job_id')) as unknown[]).length;
      total += n;
      if (n < batch) break;
    }
    return total;
  };
  const payloads = await sweep('job_payloads', ['created_at', db.raw('now() - make_interval(secs => ?)', [opts.payloadMaxAgeSeconds])]);
  const results = await sweep('job_results', ['expires_at', db.raw('now()')]);
  return { payloads, results };
}

const APP_ERROR_MARK = 'APPERR ';

/** Failure reasons carry the AppError as JSON so the API can answer with its status and message. */
export function encodeFailure(err: AppError): string {
  return APP_ERROR_MARK + JSON.stringify(err.toJSON());
}

export function decodeFailure(reason: string | undefined): AppError {
  if (reason?.startsWith(APP_ERROR_MARK)) {
    try {
      return AppError.fromJSON(JSON.parse(reason.slice(APP_ERROR_MARK.length)));
    } catch {
      // fall through
    }
  }
  // Reasons BullMQ writes itself (stalled too often, lock lost) are not secrets; say them.
  return new AppError(500, reason ? `Job failed: ${reason.split('\n')[0]!.slice(0, 300)}` : 'Job failed', { code: 'job_failed' });
}

export function queueOfJobId(id: string): QueueName | undefined {
  const q = id.slice(0, id.indexOf('-'));
  return (queueNames as readonly string[]).includes(q) ? (q as QueueName) : undefined;
}
