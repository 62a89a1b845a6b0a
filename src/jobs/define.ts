// How an area declares a job kind (name, queue, payload, options and its handler, in one place) and its queue's
// start/stop hooks. The area lists its declarations; the composition root (src/job-kinds.ts) lists the areas.
import type { Job } from 'bullmq';
import type { z } from 'zod';
import type { QueueName } from '../config.js';
import type { Logger } from '../log.js';
import type { Platform } from '../platform.js';
import type { JobEnd, JobEndListener, JobKind } from './registry.js';
import type { JobEnvelope } from './wire.js';

/** What a handler gets besides its payload. */
export interface JobContext {
  job: Job<JobEnvelope>;
  platform: Platform;
  log: Logger;
  /** Who submitted the job (user id), or null for system jobs. */
  owner: number | null;
  /** Fires when the worker is closing or the job is cancelled. */
  signal?: AbortSignal;
  /** The worker's lock token: a handler may move its job to delayed (`job.moveToDelayed(at, token)`, then throw DelayedError). */
  token?: string;
}

/** A job kind as an area declares it: see JobKind for each field. */
export type JobDefinition<N extends string = string, S extends z.ZodType = z.ZodType, R = unknown> = JobKind<N, S, R, JobContext>;

/**
 * Declares a job kind: `defineJob<Result>()({ name, queue, payload, run })`; `run` is required and
 * must return the Result. Export it in the area's list of jobs (`export const contentJobs = [contentBatch]`).
 */
export const defineJob =
  <R>() =>
  <const N extends string, S extends z.ZodType>(def: JobDefinition<N, S, R>) =>
    def;

/** Work a worker does for a queue it consumes: once at start before taking jobs, and once when it stops taking them. */
export interface QueueHooks {
  queue: QueueName;
  /** Before the worker takes the queue's first job (loading, compiling). Load worker code lazily, as handlers do. */
  warmUp?: (p: Platform) => Promise<void>;
  /** When the worker stops consuming the queue (after its jobs ended): undo readiness it announced. */
  stop?: (p: Platform) => Promise<void>;
}

/** Declares a queue's hooks, in the area whose jobs need them. */
export const defineQueueHooks = (hooks: QueueHooks): QueueHooks => hooks;

/** What a job-end listener gets besides the end. */
export interface JobEndContext {
  platform: Platform;
  log: Logger;
}

/** Declares a job-end listener (listed in src/job-kinds.ts jobEndListeners). */
export const defineJobEndListener = (listener: JobEndListener<JobEndContext>): JobEndListener<JobEndContext> => listener;

/**
 * Tells the platform's job-end listeners that a job ended (workers, for completed and failed for good; the jobs API,
 * for cancelled). A listener that fails is logged and does not fail the job: its end stands either way. A failed or
 * cancelled end is then marked announced, so that the look for failures nobody announced (announceOnce) skips it.
 */
export async function announceJobEnd(p: Platform, end: JobEnd): Promise<void> {
  for (const listener of p.jobs.endListeners) {
    try {
      await listener.ended(end, { platform: p, log: p.log });
    } catch (err) {
      p.log.error({ err, jobId: end.id, listener: listener.name }, 'a job-end listener failed');
    }
  }
  // Completed jobs end only through their handler: nothing else looks for them, and the common case pays no write.
  if (end.state !== 'completed') await markAnnounced(p, end.id);
}

/** How long a job's failure stays marked announced: past any look for it (a failure is looked for minutes after it). */
const ANNOUNCED_SECONDS = 86_400;
/** How long one process has to announce a failure it claimed; past it (it died), the next look takes the claim over. */
const ANNOUNCE_CLAIM_MS = 30_000;

/** The mark of a job's failure: `claimed` while one process announces it, then `announced` (a day). */
const announcedKey = (p: Platform, jobId: string) => p.keys.of('job-end', jobId);

async function markAnnounced(p: Platform, jobId: string): Promise<void> {
  await p.redis
    .set(announcedKey(p, jobId), 'announced', 'EX', ANNOUNCED_SECONDS)
    .catch((err) => p.log.warn({ err, jobId }, 'could not mark a job end announced'));
}

/** Whether a job's failure is announced (true), being announced by a process that claimed it ('claimed'), or neither (false). */
export async function announcedState(p: Platform, jobIds: readonly string[]): Promise<(boolean | 'claimed')[]> {
  if (jobIds.length === 0) return [];
  // One GET each in a pipeline: on a cluster the marks are in their jobs' slots, not one MGET's.
  const pipeline = p.redis.pipeline();
  for (const id of jobIds) pipeline.get(announcedKey(p, id));
  const replies = (await pipeline.exec()) ?? [];
  return jobIds.map((_, i) => {
    const [err, value] = replies[i] ?? [new Error('no reply'), null];
    if (err) throw err;
    return value === 'claimed' ? 'claimed' : value !== null;
  });
}

/**
 * Announces the end of a job that failed for good without its handler announcing it (BullMQ failed it: stalled too
 * often; or it failed before its handler ran), once across every process that sees it: the first to claim its mark
 * (SET NX) announces; the others, and any later look, find the mark and do nothing. `endOf` reads the end (undefined:
 * nothing to announce, as for a job whose signature does not verify). A claimer that dies before its announcement
 * leaves the claim to lapse after ANNOUNCE_CLAIM_MS, and the next look announces it. Returns whether this call did.
 */
export async function announceOnce(p: Platform, jobId: string, endOf: () => Promise<JobEnd | undefined>): Promise<boolean> {
  if ((await p.redis.set(announcedKey(p, jobId), 'claimed', 'PX', ANNOUNCE_CLAIM_MS, 'NX')) !== 'OK') return false;
  const end = await endOf();
  if (!end) {
    await markAnnounced(p, jobId);
    return false;
  }
  await announceJobEnd(p, end);
  return true;
}
