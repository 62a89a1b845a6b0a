// Cancelling a running job across processes: the API marks the job in Redis and tells every worker process on one
// channel; the worker running it aborts the job's AbortSignal (BullMQ's worker.cancelJob), and its handler stops at
// its next safe point by throwing JobCancelled with what it had done.
import { AppError } from '../errors.js';
import type { Redis, RedisKeys } from '../redis.js';
import { publishTo } from '../redis.js';

/** The abort reason of a cancel asked through the API (a worker closing aborts with another reason, or none). */
export const CANCEL_REASON = 'job cancelled through the API';

/** The one channel every worker process listens on for cancels (the message is the job id). */
export const cancelChannel = (keys: RedisKeys) => keys.of('job-cancel', 'requests');
/** Set before the message goes out: a worker that takes the job after the message checks it before it starts work. */
export const cancelKey = (keys: RedisKeys, jobId: string) => keys.of('job-cancel', jobId);

/** The error a cancelled job ends with (its failedReason): GET /api/jobs/{id} reads the state `cancelled` from the code. */
export const CANCELLED_CODE = 'job_cancelled';
export const cancelledError = () => new AppError(409, 'This job was cancelled through DELETE /api/jobs/{id}', { code: CANCELLED_CODE, retriable: false });

/** Thrown by a handler at a safe point once its job is cancelled; `done` is what it had done (shown as the job's result). */
export class JobCancelled extends Error {
  constructor(readonly done: unknown = null) {
    super('job cancelled');
    this.name = 'JobCancelled';
  }
}

/** Whether the signal was aborted by a cancel through the API (not by a worker closing). */
export const isCancelled = (signal: AbortSignal | undefined): boolean => signal?.aborted === true && signal.reason === CANCEL_REASON;

/** A safe point: throws JobCancelled(done) when the job has been cancelled, else does nothing. */
export function stopIfCancelled(signal: AbortSignal | undefined, done?: () => unknown): void {
  if (isCancelled(signal)) throw new JobCancelled(done ? done() : null);
}

/** Asks the worker running `jobId` to cancel it (any process, any machine): marks it for `ttlSeconds`, then tells every worker. */
export async function requestCancel(redis: Redis, keys: RedisKeys, jobId: string, ttlSeconds: number): Promise<void> {
  await redis.set(cancelKey(keys, jobId), '1', 'EX', Math.max(60, ttlSeconds));
  await publishTo(redis, cancelChannel(keys), jobId);
}

/** Whether a cancel was asked for this job (checked by a worker when it starts running it). */
export async function cancelRequested(redis: Redis, keys: RedisKeys, jobId: string): Promise<boolean> {
  return (await redis.exists(cancelKey(keys, jobId))) === 1;
}
