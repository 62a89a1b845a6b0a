// What a job kind is to the platform (name, queue, payload schema, options, handler) and the typed registry of them.
// Generic: the application's kinds are listed by the composition root (src/job-kinds.ts), never imported from here.
import type { JobsOptions } from 'bullmq';
import type { z } from 'zod';
import type { Config, QueueName } from '../config.js';

/** Where a job's payload or result is kept: see JobKind.payloadIn and resultIn. */
export type Placement = 'redis-if-small' | 'postgres';
/** Where a payload may also be kept: in Redis, sealed (see JobKind.payloadIn). */
export type PayloadPlacement = Placement | 'sealed';

/**
 * One job kind, declared once, in its area (`defineJob`, src/jobs/define.ts): everything the producer
 * needs to enqueue it and everything a worker needs to run it. `C` is the handler's context: this
 * module leaves it open (the platform's type would make src/jobs import itself round the platform).
 */
export interface JobKind<N extends string = string, S extends z.ZodType = z.ZodType, R = unknown, C = unknown> {
  /** `<area>.<verb>`, unique across the registry. */
  name: N;
  queue: QueueName;
  /** Checked when the job is enqueued (by type) and again by the worker (at run time). */
  payload: S;
  /**
   * The handler: runs the job in a worker with its checked payload, and returns its result. API
   * processes load every declaration, so a handler imports its area's worker code when it runs
   * (`(await import('./batch.js')).runBatch(…)`), never at the top of the declaring file.
   */
  run(payload: z.output<S>, ctx: C): Promise<R>;
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
   * Why DELETE /api/jobs/{id} may not cancel a job of this kind (it is part of a larger piece of work that has a cancel
   * of its own, e.g. a batch's chunk): the 409's message. Unset: cancellable.
   */
  notCancellable?: string;
  /**
   * At most this many jobs of one owner (the user who submitted them) run at once on this job's
   * queue, across every worker; the owner's other jobs wait (delayed, then retried for a slot)
   * without taking a worker from anyone else. Unset: no per-owner limit.
   */
  ownerConcurrency?: (config: Config) => number;
  /**
   * Declared retry delays: with `options.backoff: { type: DECLARED_BACKOFF }`, the delay before the next attempt
   * after `attemptsMade` failed ones, given the last failure (its status, code and headers: Retry-After). Unset: the
   * job's own backoff options.
   */
  retryDelay?: (attemptsMade: number, failure: { status: number; code?: string; headers?: Record<string, string> }, config: Config) => number;
}

/** The backoff type of a job kind that declares its retryDelay. */
export const DECLARED_BACKOFF = 'declared';

/** A job that reached a final state: what its end announces (src/jobs/define.ts announceJobEnd). */
export interface JobEnd {
  id: string;
  name: string;
  queue: QueueName;
  /** Who submitted it (the owner the API signed); null for jobs of no one. */
  owner: number | null;
  /** completed; failed for good (no attempt left, or not retried); cancelled. */
  state: 'completed' | 'failed' | 'cancelled';
  /** The result as GET /api/jobs/{id} shows it (completed), else null. */
  result: unknown;
  /** The error as GET /api/jobs/{id} shows it (failed, cancelled), else null. */
  error: { status: number; message: string; code?: string } | null;
  finishedAt: string;
}

/**
 * Something done when any job ends (webhooks announce it): declared in an area, listed by the composition root
 * (src/job-kinds.ts jobEndListeners) and given to the platform like job kinds. `C` is left open as for JobKind.
 */
export interface JobEndListener<C = unknown> {
  name: string;
  /** Called before the end is recorded in Redis, so a worker killed in between announces it again: be idempotent. */
  ended(end: JobEnd, ctx: C): Promise<void>;
}

/** A set of job kinds, by name: what a platform enqueues and its workers run. */
export type JobKinds = Readonly<Record<string, JobKind>>;

/** A list of kinds as a record keyed by name, keeping each one's literal name and types; a name declared twice throws. */
export function byName<const L extends readonly JobKind[]>(list: L): { [D in L[number] as D['name']]: D } {
  const out: Record<string, JobKind> = {};
  for (const kind of list) {
    if (out[kind.name]) throw new Error(`job "${kind.name}" is declared twice`);
    out[kind.name] = kind;
  }
  return out as { [D in L[number] as D['name']]: D };
}

/**
 * The application's kinds, as the composition root registers their type by declaration merging:
 * `declare module './jobs/registry.js' { interface Registered { kinds: typeof jobKinds } }` (src/job-kinds.ts).
 * So the platform's client and src/http/jobs.ts type every job name, payload and result without this
 * module importing an area, or the platform importing the areas' declarations (which import its type).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the composition root
export interface Registered {}

/** The registered kinds (any kinds at all until the composition root registers them). */
export type JobRegistry = Registered extends { kinds: infer K extends JobKinds } ? K : JobKinds;

export type NameIn<K extends JobKinds> = keyof K & string;
export type PayloadIn<K extends JobKinds, N extends NameIn<K>> = z.input<K[N]['payload']>;
export type ResultIn<K extends JobKinds, N extends NameIn<K>> = Awaited<ReturnType<K[N]['run']>>;

export type JobName = NameIn<JobRegistry>;
export type PayloadOf<N extends JobName> = PayloadIn<JobRegistry, N>;
export type ResultOf<N extends JobName> = ResultIn<JobRegistry, N>;
