// The producer side of the job platform: one Queue and QueueEvents per queue, enqueue, enqueue-and-wait, job views.
import { Queue, QueueEvents, type Job, type JobsOptions } from 'bullmq';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import type { Config, QueueName } from '../config.js';
import { queueNames } from '../config.js';
import type { Db } from '../db.js';
import { AppError, serviceUnavailable, toAppError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Redis } from '../redis.js';
import type { Secrets } from '../secrets.js';
import { createRedis, redisKeys, subscribeTo, waitForReplica } from '../redis.js';
import { tracing } from '../telemetry.js';
import { withTimeout } from '../timeout.js';
import { CANCELLED_CODE } from './cancel.js';
import type { JobEndListener, JobKind, JobKinds, JobRegistry, NameIn, PayloadIn, ResultIn } from './registry.js';
import {
  decodeFailure,
  dropJobStorage,
  dropPayload,
  loadResult,
  queueOfJobId,
  resultRefOf,
  signEnvelope,
  storePayload,
  takeResult,
  type DirectReply,
  type JobEnvelope,
} from './wire.js';

export const jobStates = ['waiting', 'active', 'delayed', 'completed', 'failed', 'cancelled'] as const;
export type JobState = (typeof jobStates)[number];

/** A job as the API shows it. */
export const jobView = z.object({
  id: z.string(),
  queue: z.enum(queueNames as readonly QueueName[] as [QueueName, ...QueueName[]]),
  name: z.string(),
  state: z.enum(jobStates),
  progress: z.unknown(),
  result: z.unknown(),
  error: z.object({ status: z.number(), message: z.string(), code: z.string().optional() }).nullable(),
  attempts: z.number(),
  createdAt: z.string(),
  processedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});
export type JobView = z.infer<typeof jobView>;

/** A job's view without its result, for a state already read (what a listing shows of each job). */
export function jobStatus(job: Job<JobEnvelope>, raw: JobState): Omit<JobView, 'result'> {
  const failed = raw === 'failed' ? decodeFailure(job.failedReason) : null;
  // A job cancelled while it ran ends failed in BullMQ, with the cancel's code (src/jobs/cancel.ts).
  const state: JobState = failed?.code === CANCELLED_CODE ? 'cancelled' : raw;
  return {
    id: job.id!,
    queue: job.queueName as QueueName,
    name: job.name,
    state,
    // A finished job is all the way done, whether or not its processor reported progress (mail jobs do not).
    progress: state === 'completed' && !job.progress ? 100 : (job.progress ?? 0),
    error: failed ? { status: failed.status, message: failed.message, code: failed.code } : null,
    attempts: job.attemptsMade,
    createdAt: new Date(job.timestamp).toISOString(),
    processedAt: job.processedOn ? new Date(job.processedOn).toISOString() : null,
    finishedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
  };
}

export type JobEvent = { type: 'progress'; data: unknown } | { type: 'completed'; result: unknown } | { type: 'failed'; error: AppError };

export function defaultJobOptions(config: Config): JobsOptions {
  return {
    attempts: config.JOB_ATTEMPTS,
    backoff: { type: 'exponential', delay: config.JOB_BACKOFF_MS, jitter: 0.5 },
    removeOnComplete: { age: config.JOB_KEEP_COMPLETED_SECONDS, count: config.JOB_KEEP_COMPLETED_COUNT },
    removeOnFail: { age: config.JOB_KEEP_FAILED_SECONDS, count: config.JOB_KEEP_FAILED_COUNT },
  };
}

/**
 * How long an enqueue waits for a replica to have its job (Redis Cluster only): replication on a healthy cluster
 * takes well under a millisecond; a replica that is down costs each enqueue this much until the cluster drops it.
 */
const REPLICA_WAIT_MS = 250;

const queueUnavailable = () => serviceUnavailable('Queue unavailable (Redis is not reachable), try again shortly', { code: 'queue_unavailable' });

const resultMissing = () => new AppError(500, 'The result of this job is gone (job_results row expired or removed)', { code: 'result_missing' });

/** BullMQ's job states as the jobs API names them. */
export const STATE_MAP: Record<string, JobState> = {
  waiting: 'waiting',
  prioritized: 'waiting',
  'waiting-children': 'waiting',
  active: 'active',
  delayed: 'delayed',
  completed: 'completed',
  failed: 'failed',
};

/**
 * The API side of the job platform: one Queue and one QueueEvents per queue, created once, and a
 * table of pending waits keyed by job id that the QueueEvents streams resolve. `K` types the job
 * names, payloads and results of enqueue() and run(): the registered kinds (src/job-kinds.ts) unless
 * said otherwise (a test's own kinds); `kinds` are the ones it is given, checked by name at run time.
 */
export class JobClient<K extends JobKinds = JobRegistry> {
  readonly queues = new Map<QueueName, Queue>();
  private readonly events = new Map<QueueName, QueueEvents>();
  private readonly listeners = new Map<string, Set<(e: JobEvent) => void>>();
  private eventsRedis?: Redis;
  private replies?: Redis;
  /** This process's channel for 'direct' replies. */
  readonly replyChannel: string;

  constructor(
    private readonly config: Config,
    private readonly producer: Redis,
    private readonly log: Logger,
    private readonly db: Db,
    /** Seals payloads of job types declared payloadIn 'sealed', and signs every envelope. */
    private readonly secrets: Pick<Secrets, 'encrypt' | 'signJob'>,
    /** Every kind this platform enqueues (and its workers run), by name. */
    readonly kinds: JobKinds,
    /** What is told when a job ends (src/jobs/define.ts announceJobEnd). */
    readonly endListeners: readonly JobEndListener[] = [],
  ) {
    // A channel of its own (on a cluster, in a slot of its own: replies to many API processes spread over the masters).
    this.replyChannel = redisKeys(config).of('replies', uuidv7());
    for (const name of queueNames) {
      const queue = new Queue(name, {
        connection: producer,
        prefix: redisKeys(config).queuePrefix(name),
        defaultJobOptions: defaultJobOptions(config),
        skipWaitingForReady: true,
        // Traces on: each job carries its trace context, and the worker's span continues it (src/telemetry.ts).
        telemetry: tracing()?.bullmq,
      });
      queue.on('error', (err) => log.warn({ err, queue: name }, 'queue error'));
      this.queues.set(name, queue);
    }
  }

  /** Starts listening for job events (API processes only). */
  async listen(): Promise<void> {
    if (this.events.size || this.replies) return;
    this.eventsRedis = createRedis(this.config, 'worker', 'events');
    this.replies = createRedis(this.config, 'worker', 'replies', { subscriber: true });
    await this.replies.connect();
    await subscribeTo(this.replies, this.replyChannel, (message) => {
      try {
        const reply = JSON.parse(message) as DirectReply;
        if ('error' in reply) this.emit(reply.id, { type: 'failed', error: AppError.fromJSON(reply.error) });
        else if ('resultRef' in reply) void this.takeStoredReply(reply.id, reply.resultRef);
        else this.emit(reply.id, { type: 'completed', result: reply.result });
      } catch (err) {
        this.log.warn({ err }, 'unreadable job reply');
      }
    });
    const ready: Promise<unknown>[] = [];
    const defs = Object.values(this.kinds);
    for (const name of queueNames) {
      // A queue whose jobs all reply directly has no events anyone waits for.
      if (defs.some((d) => d.queue === name) && defs.filter((d) => d.queue === name).every((d) => d.reply === 'direct')) continue;
      const qe = new QueueEvents(name, { connection: this.eventsRedis, prefix: redisKeys(this.config).queuePrefix(name) });
      qe.on('error', (err) => this.log.warn({ err, queue: name }, 'queue events error'));
      qe.on('completed', ({ jobId, returnvalue }) => {
        // A 'direct' job's result came over pub/sub; its stored value is only the marker.
        if ((returnvalue as { delivered?: unknown } | null)?.delivered === true) return;
        const ref = resultRefOf(returnvalue);
        // A stored result is read only by a process that has someone waiting for this job.
        if (ref === undefined) this.emit(jobId, { type: 'completed', result: returnvalue });
        else if (this.listeners.has(jobId)) void this.loadStoredResult(jobId, ref);
      });
      qe.on('failed', ({ jobId, failedReason }) => this.emit(jobId, { type: 'failed', error: decodeFailure(failedReason) }));
      qe.on('progress', ({ jobId, data }) => this.emit(jobId, { type: 'progress', data }));
      // A job removed (Bull Board, Job.remove) takes its stored payload and result with it.
      qe.on('removed', ({ jobId }) => void dropJobStorage(this.db, jobId).catch((err) => this.log.warn({ err, jobId }, 'could not drop a removed job')));
      this.events.set(name, qe);
      ready.push(qe.waitUntilReady());
    }
    await Promise.all(ready);
  }

  /** A 'direct' reply that came as a reference: read the result and delete it (nobody else needs it). */
  private async takeStoredReply(jobId: string, ref: string) {
    try {
      const taken = await takeResult(this.db, ref);
      this.emit(jobId, taken.found ? { type: 'completed', result: taken.result } : { type: 'failed', error: resultMissing() });
    } catch (err) {
      this.log.warn({ err, jobId }, 'could not read a stored job result');
      this.emit(jobId, { type: 'failed', error: toAppError(err) });
    }
  }

  private async loadStoredResult(jobId: string, ref: string) {
    try {
      const result = await loadResult(this.db, ref);
      this.emit(jobId, result === undefined ? { type: 'failed', error: resultMissing() } : { type: 'completed', result });
    } catch (err) {
      this.log.warn({ err, jobId }, 'could not read a stored job result');
      this.emit(jobId, { type: 'failed', error: toAppError(err) });
    }
  }

  private emit(jobId: string, event: JobEvent) {
    const set = this.listeners.get(jobId);
    if (!set) return;
    for (const fn of [...set]) fn(event);
  }

  /** Receives a job's progress and final events; returns the unsubscribe function. */
  subscribe(jobId: string, fn: (e: JobEvent) => void): () => void {
    let set = this.listeners.get(jobId);
    if (!set) this.listeners.set(jobId, (set = new Set()));
    set.add(fn);
    return () => {
      set!.delete(fn);
      if (set!.size === 0) this.listeners.delete(jobId);
    };
  }

  /** The declaration of a job kind; a name this platform was not given is a programming error. */
  kind(name: string): JobKind {
    const def = Object.hasOwn(this.kinds, name) ? this.kinds[name] : undefined;
    if (!def) throw new Error(`job "${name}" is not among this platform's job kinds (src/job-kinds.ts lists them)`);
    return def;
  }

  /** The queue a job kind runs on. */
  queueOf(name: NameIn<K>): QueueName {
    return this.kind(name).queue;
  }

  /** Adds a job. Fails fast (503) when Redis is not reachable. */
  async enqueue<N extends NameIn<K>>(
    name: N,
    payload: PayloadIn<K, N>,
    meta: { owner: number | null; requestId?: string; jobId?: string; options?: JobsOptions; sizeHint?: number },
  ): Promise<string> {
    const def = this.kind(name);
    const id = meta.jobId ?? `${def.queue}-${uuidv7()}`;
    const queue = this.queues.get(def.queue)!;
    const data: JobEnvelope = { owner: meta.owner, requestId: meta.requestId, payload };
    if (def.reply === 'direct') data.replyTo = this.replyChannel;
    // payloadIn (registry.ts): 'postgres' always; 'redis-if-small' and 'sealed' past JOB_INLINE_PAYLOAD_BYTES, and
    // 'sealed' encrypted below it. A caller that knows a bound on the size (the request body's) saves serialising
    // small plain payloads twice.
    const always = def.payloadIn === 'postgres';
    const sealed = def.payloadIn === 'sealed';
    if (always || sealed || meta.sizeHint === undefined || meta.sizeHint > this.config.JOB_INLINE_PAYLOAD_BYTES / 2) {
      const json = JSON.stringify(payload);
      if (always || Buffer.byteLength(json) > this.config.JOB_INLINE_PAYLOAD_BYTES) {
        await storePayload(this.db, id, json);
        delete data.payload;
        data.payloadRef = id;
      } else if (sealed) {
        data.sealed = this.secrets.encrypt(json);
        delete data.payload;
      }
    }
    signEnvelope(this.secrets, id, name, data);
    try {
      await withTimeout(queue.add(name, data, { ...def.options, ...meta.options, jobId: id }), 1_500);
      // On a Redis Cluster, the job is accepted once a replica has it too: its master dying next loses nothing.
      await waitForReplica(this.producer, queue.toKey(''), REPLICA_WAIT_MS).catch(() => 0);
    } catch (err) {
      if (data.payloadRef) await dropPayload(this.db, data).catch(() => {});
      this.log.warn({ err, job: name }, 'enqueue failed');
      throw queueUnavailable();
    }
    return id;
  }

  /**
   * Waits up to `ms` for a job to finish. Resolves {done:true,result} or rejects with the job's
   * AppError; resolves {done:false} when the time runs out. Subscribe before enqueueing (see run()).
   */
  waitFor(jobId: string, ms: number): { promise: Promise<{ done: true; result: unknown } | { done: false }>; cancel: () => void } {
    let unsubscribe = () => {};
    let timer: NodeJS.Timeout | undefined;
    const promise = new Promise<{ done: true; result: unknown } | { done: false }>((resolve, reject) => {
      unsubscribe = this.subscribe(jobId, (e) => {
        if (e.type === 'progress') return;
        clearTimeout(timer);
        unsubscribe();
        if (e.type === 'completed') resolve({ done: true, result: e.result });
        else reject(e.error);
      });
      timer = setTimeout(() => {
        unsubscribe();
        // The events stream is capped; if we missed the event, the job itself still knows.
        this.finalState(jobId).then(
          (final) => {
            if (!final) resolve({ done: false });
            else if (final.type === 'completed') resolve({ done: true, result: final.result });
            else reject(final.error);
          },
          () => resolve({ done: false }),
        );
      }, ms);
    });
    return {
      promise,
      cancel: () => {
        clearTimeout(timer);
        unsubscribe();
      },
    };
  }

  /** Enqueue and wait: the one helper job-backed endpoints use. */
  async run<N extends NameIn<K>>(
    name: N,
    payload: PayloadIn<K, N>,
    meta: { owner: number | null; requestId?: string; waitMs: number; options?: JobsOptions; sizeHint?: number },
  ): Promise<{ jobId: string; done: true; result: ResultIn<K, N> } | { jobId: string; done: false }> {
    const jobId = `${this.queueOf(name)}-${uuidv7()}`;
    if (meta.waitMs <= 0) {
      await this.enqueue(name, payload, { ...meta, jobId });
      return { jobId, done: false };
    }
    const wait = this.waitFor(jobId, meta.waitMs);
    try {
      await this.enqueue(name, payload, { ...meta, jobId });
    } catch (err) {
      wait.cancel();
      throw err;
    }
    const outcome = await wait.promise;
    return outcome.done ? { jobId, done: true, result: outcome.result as ResultIn<K, N> } : { jobId, done: false };
  }

  async getJob(id: string): Promise<Job<JobEnvelope> | undefined> {
    const queueName = queueOfJobId(id);
    if (!queueName) return undefined;
    try {
      return (await withTimeout(this.queues.get(queueName)!.getJob(id), 2_000)) as Job<JobEnvelope> | undefined;
    } catch (err) {
      // Redis did not answer in time: say so (a bare ETIMEDOUT would read as the database's).
      if ((err as { code?: string }).code === 'ETIMEDOUT') throw queueUnavailable();
      throw toAppError(err);
    }
  }

  /** A job's final event if it has finished (completed with its result, or failed with its error); undefined otherwise. */
  async finalState(id: string): Promise<Exclude<JobEvent, { type: 'progress' }> | undefined> {
    let job = await this.getJob(id);
    if (!job) return undefined;
    const state = await job.getState();
    if (state !== 'completed' && state !== 'failed') return undefined;
    if (!job.finishedOn) job = (await this.getJob(id)) ?? job;
    if (state === 'failed') return { type: 'failed', error: decodeFailure(job.failedReason) };
    const ref = resultRefOf(job.returnvalue);
    if (ref === undefined) return { type: 'completed', result: job.returnvalue };
    // A missed 'direct' reply: its waiter is this caller, which takes the result.
    if ((job.returnvalue as { delivered?: unknown }).delivered === true) {
      const taken = await takeResult(this.db, ref);
      return taken.found ? { type: 'completed', result: taken.result } : undefined;
    }
    const result = await loadResult(this.db, ref);
    return result === undefined ? { type: 'failed', error: resultMissing() } : { type: 'completed', result };
  }

  /** A completed job's result as the jobs API shows it: a stored one is read back; a 'direct' job's is its marker. */
  private async shownResult(job: Job<JobEnvelope>): Promise<unknown> {
    const value = job.returnvalue as unknown;
    const ref = resultRefOf(value);
    if (ref === undefined) return value ?? null;
    if ((value as { delivered?: unknown }).delivered === true) return { delivered: true };
    return (await loadResult(this.db, ref)) ?? null;
  }

  async view(loaded: Job<JobEnvelope>): Promise<JobView> {
    let job = loaded;
    const raw = await job.getState();
    const state = STATE_MAP[raw] ?? 'waiting';
    // The job may have finished between loading it and reading its state: then reload its data.
    if ((state === 'completed' || state === 'failed') && !job.finishedOn) job = (await this.getJob(job.id!)) ?? job;
    const status = jobStatus(job, state);
    // A cancelled job shows what it had done when it stopped (kept in job_results by the worker).
    const result =
      status.state === 'completed' ? await this.shownResult(job) : status.state === 'cancelled' ? ((await loadResult(this.db, job.id!)) ?? null) : null;
    return { ...status, result };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.events.values()].map((qe) => qe.close()));
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.eventsRedis?.disconnect();
    this.replies?.disconnect();
    this.events.clear();
  }
}
