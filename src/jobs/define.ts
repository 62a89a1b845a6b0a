// How a job type is declared: its name, queue, payload schema, result type and options (no processor: see processor.ts).
import type { JobsOptions } from 'bullmq';
import type { z } from 'zod';
import type { Config, QueueName } from '../config.js';

/** Where a job's payload or result is kept: see JobDefinition.payloadIn and resultIn. */
export type Placement = 'redis-if-small' | 'postgres';
/** Where a payload may also be kept: in Redis, sealed (see JobDefinition.payloadIn). */
export type PayloadPlacement = Placement | 'sealed';

export interface JobDefinition<N extends string = string, S extends z.ZodType = z.ZodType, R = unknown> {
  /** `<area>.<verb>`, unique across the registry. */
  name: N;
  queue: QueueName;
  /** Checked when the job is enqueued (by type) and again by the worker (at run time). */
  payload: S;
  /** Overrides of the platform defaults (attempts, backoff, retention). */
  options?: JobsOptions;
  /**
   * Where the payload travels. 'redis-if-small' (default): in the job's Redis data, unless it is
   * larger than JOB_INLINE_PAYLOAD_BYTES. 'postgres': always in job_payloads, the job carrying only
   * its id — for payloads that must not sit in Redis, where Bull Board shows admins every job (mail
   * bodies). Stored payloads are deleted when the job completes, fails for good or is removed.
   * 'sealed': in the job's Redis data as 'redis-if-small' does, but encrypted with SECRET_KEY (AES-256-GCM), so
   * that Bull Board shows a sealed string, not the user's data — for payloads too frequent for a Postgres round
   * trip each (the texts of embeddings calls).
   */
  payloadIn?: PayloadPlacement;
  /**
   * Where the result travels. 'redis-if-small' (default): as the job's return value (or, for
   * 'direct' replies, in the pub/sub message), unless it serialises to more than
   * JOB_INLINE_RESULT_BYTES. 'postgres': always in job_results. Either way a stored result leaves
   * only `{ resultRef }` in Redis and is read back by the API (GET /api/jobs/:id included).
   */
  resultIn?: Placement;
  /**
   * 'direct': the worker publishes the result straight to the waiting API process (Redis pub/sub)
   * and stores only a marker in the job; no QueueEvents stream is read for it. For latency-critical
   * jobs whose results matter only to whoever waits (a stored result is read once, then deleted).
   * Default 'events'.
   */
  reply?: 'events' | 'direct';
  /**
   * At most this many jobs of one owner (the user who submitted them) run at once on this job's
   * queue, across every worker; the owner's other jobs wait (delayed, then retried for a slot)
   * without taking a worker from anyone else. Unset: no per-owner limit.
   */
  ownerConcurrency?: (config: Config) => number;
  /** Type-only: what the processor returns. */
  readonly __result?: R;
}

/** Declares a job type: `defineJob<Result>()({ name, queue, payload })`. */
export const defineJob =
  <R>() =>
  <const N extends string, S extends z.ZodType>(def: Omit<JobDefinition<N, S, R>, '__result'>) =>
    def as JobDefinition<N, S, R>;

/** A list of definitions as a record keyed by name, keeping each one's literal name and types. */
export function byName<const L extends readonly JobDefinition[]>(list: L): { [D in L[number] as D['name']]: D } {
  const out: Record<string, JobDefinition> = {};
  for (const def of list) {
    if (out[def.name]) throw new Error(`job "${def.name}" is declared twice`);
    out[def.name] = def;
  }
  return out as { [D in L[number] as D['name']]: D };
}
