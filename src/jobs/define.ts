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
 * for cancelled). A listener that fails is logged and does not fail the job: its end stands either way.
 */
export async function announceJobEnd(p: Platform, end: JobEnd): Promise<void> {
  for (const listener of p.jobs.endListeners) {
    try {
      await listener.ended(end, { platform: p, log: p.log });
    } catch (err) {
      p.log.error({ err, jobId: end.id, listener: listener.name }, 'a job-end listener failed');
    }
  }
}
