// What crosses Redis between producers and workers: the job envelope, direct replies, encoded failures, stored payloads.
import type { QueueName } from '../config.js';
import { queueNames } from '../config.js';
import type { Db } from '../db.js';
import { AppError } from '../errors.js';

/** What travels in Redis: the payload (or where to find it) and who asked for it. */
export interface JobEnvelope<P = unknown> {
  owner: number | null;
  requestId?: string;
  payload?: P;
  /** Set when the payload was too large for the queue: it is in job_payloads under the job id. */
  payloadRef?: string;
  /** For 'direct' replies: the pub/sub channel of the process waiting for the result. */
  replyTo?: string;
}

/** What a worker publishes on a replyTo channel. */
export type DirectReply = { id: string; result: unknown } | { id: string; error: ReturnType<AppError['toJSON']> };

/** What a 'direct' job keeps as its return value: the result itself went to the waiter. */
export const DELIVERED = { delivered: true } as const;

/** The payload of a job, from the envelope or from Postgres. */
export async function loadPayload(db: Db, envelope: JobEnvelope): Promise<unknown> {
  if (!envelope.payloadRef) return envelope.payload;
  const row = await db('job_payloads').where({ job_id: envelope.payloadRef }).first('data');
  if (!row) throw new AppError(410, 'The payload of this job is gone (job_payloads row removed)', { code: 'payload_missing', retriable: false });
  return JSON.parse(row.data as string);
}

export async function dropPayload(db: Db, envelope: JobEnvelope): Promise<void> {
  if (envelope.payloadRef) await db('job_payloads').where({ job_id: envelope.payloadRef }).delete();
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
