// Worker runtime: one BullMQ Worker per selected queue, dispatching each job to the handler its kind declares.
import os from 'node:os';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { queueConcurrency, queueNames, type QueueName } from '../src/config.js';
import { AppError, toAppError } from '../src/errors.js';
import { queueHooks } from '../src/job-kinds.js';
import { announceJobEnd, type JobContext, type QueueHooks } from '../src/jobs/define.js';
import { CANCEL_REASON, cancelChannel, cancelledError, cancelRequested, isCancelled, JobCancelled } from '../src/jobs/cancel.js';
import { OwnerSlots } from '../src/jobs/fairness.js';
import { tracing } from '../src/telemetry.js';
import type { JobEnd, JobKind, JobKinds } from '../src/jobs/registry.js';
import {
  DELIVERED,
  decodeFailure,
  dropPayload,
  encodeFailure,
  loadPayload,
  storeResult,
  signedIdOf,
  sweepJobStorage,
  type DirectReply,
  type JobEnvelope,
  type ResultRef,
  unsignedJob,
  verifyEnvelope,
} from '../src/jobs/wire.js';
import { recordJob } from '../src/metrics.js';
import type { Platform } from '../src/platform.js';
import { createRedis, publishTo, subscribeTo } from '../src/redis.js';
import { describeIssue } from '../src/validate.js';
import { repeatJittered, watchFailures } from './failures.js';

/**
 * The job kinds a worker is to run, checked before any worker starts, so that a deployment with a gap refuses to run
 * instead of failing jobs: each listed under its own name, on a queue that exists, with a handler (a declaration
 * without one does not compile; this catches what a cast let through); and each queue hook on a queue that exists.
 */
export function checkJobKinds(kinds: JobKinds, hooks: readonly QueueHooks[]): void {
  for (const [key, def] of Object.entries(kinds)) {
    if (def.name !== key) throw new Error(`job "${def.name}" is listed as "${key}": list job kinds by name (byName)`);
    if (!queueNames.includes(def.queue)) throw new Error(`job "${key}" is declared on "${def.queue}", which is not a queue (${queueNames.join(', ')})`);
    if (typeof def.run !== 'function')
      throw new Error(`job "${key}" has no handler: give its declaration a run (defineJob, in the jobs.ts of the area that declares it)`);
  }
  for (const hook of hooks) if (!queueNames.includes(hook.queue)) throw new Error(`queue hooks for "${hook.queue}", which is not a queue`);
}

export interface WorkerSet {
  workers: Worker[];
  /** Stops taking jobs, lets active ones finish within timeoutMs, then closes. */
  close(timeoutMs: number): Promise<void>;
}

/**
 * Consumes `queues`, running the job kinds the platform was created with (p.jobs.kinds: the ones it enqueues) and
 * the hooks the areas declare for those queues (listed by the composition root, src/job-kinds.ts).
 */
export async function startWorkers(p: Platform, queues: readonly QueueName[]): Promise<WorkerSet> {
  const kinds = p.jobs.kinds;
  checkJobKinds(kinds, queueHooks);
  const hooksOf = (queue: QueueName) => queueHooks.filter((h) => h.queue === queue);
  for (const queue of queues) for (const hook of hooksOf(queue)) await hook.warmUp?.(p);
  const slots = new OwnerSlots(p.redis, p.keys, p.config.JOB_LOCK_MS);
  const used = new Set(Object.values(kinds).map((d) => d.queue));
  const connection = createRedis(p.config, 'worker', 'worker');
  const workers: Worker[] = [];
  // Ends no handler announced (BullMQ failed the job, or it failed before its handler ran): see failures.ts.
  const consumed = queues.filter((q) => used.has(q));
  const failures = watchFailures(p, consumed);
  for (const queue of consumed) {
    const worker = new Worker<JobEnvelope>(queue, (job, token, signal) => dispatch(p, kinds, slots, job, token, signal), {
      connection,
      prefix: p.keys.queuePrefix(queue),
      // Shown as the job's processedBy (in Bull Board too): which machine and process ran it.
      name: `${os.hostname()}:${process.pid}`,
      concurrency: queueConcurrency(p.config)[queue],
      lockDuration: p.config.JOB_LOCK_MS,
      stalledInterval: p.config.JOB_STALLED_INTERVAL_MS,
      maxStalledCount: 2,
      // Kinds that declare their retry delays (DECLARED_BACKOFF): webhook deliveries honour Retry-After.
      settings: { backoffStrategy: (attemptsMade, _type, err, job) => declaredDelay(p, kinds, attemptsMade, err, job) },
      // Traces on: a job's span continues the trace of the request that made it (src/telemetry.ts).
      telemetry: tracing()?.bullmq,
    });
    worker.on('error', (err) => p.log.warn({ err, queue }, 'worker error'));
    // A stored payload goes only once BullMQ has recorded the job's completion (this event comes after it): a
    // worker killed between its work and that record leaves the job to run again, and the re-run needs its payload.
    // A failed job keeps its payload while it is kept (POST /api/jobs/{id}/retry runs it again); the sweep takes it
    // after JOB_KEEP_FAILED_SECONDS. Only its own row (a forged envelope may name another job's).
    worker.on('completed', (job) => {
      if (job.data?.payloadRef === job.id)
        dropPayload(p.db, job.data).catch((e) => p.log.warn({ err: e, jobId: job.id }, 'could not remove the stored payload'));
    });
    worker.on('failed', (job, err) => {
      p.log.warn({ queue, jobId: job?.id, job: job?.name, attempt: job?.attemptsMade, reason: err.message }, 'job attempt failed');
      // Failed for good (BullMQ sets finishedOn only then): announced here unless its handler did.
      if (job?.finishedOn) failures.failed(job);
    });
    workers.push(worker);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  p.log.info({ queues: workers.map((w) => `${w.name}×${w.concurrency}`) }, 'workers started');
  const sweeper = startSweeper(p);
  const cancels = await listenForCancels(p, workers);
  return {
    workers,
    async close(timeoutMs) {
      sweeper.stop();
      failures.stop();
      cancels.disconnect();
      // Taking no more jobs from here on: readiness it announced goes first.
      for (const queue of queues) for (const hook of hooksOf(queue)) await hook.stop?.(p);
      const graceful = Promise.all(workers.map((w) => w.close()));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([graceful.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
      clearTimeout(timer);
      if (timedOut) {
        // Jobs still running are abandoned: dropping the connection stops their lock renewals,
        // the locks lapse and another worker runs them again. (close(true) would not help here:
        // while a graceful close is pending, BullMQ hands back that same promise.)
        p.log.warn({ timeoutMs }, 'active jobs did not finish in time; leaving them to other workers');
        connection.disconnect();
        return;
      }
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}

/**
 * Cancels asked through the API (DELETE /api/jobs/{id}, from any API process) reach the worker running the job: every
 * worker process hears them on one channel, and the one that runs the job aborts its signal (the others have nothing
 * to abort). A job taken after the message went out sees its mark when it starts (runJob).
 */
async function listenForCancels(p: Platform, workers: Worker[]): Promise<{ disconnect(): void }> {
  const sub = createRedis(p.config, 'worker', 'cancels', { subscriber: true });
  await sub.connect();
  await subscribeTo(sub, cancelChannel(p.keys), (jobId) => {
    for (const w of workers)
      if (w.cancelJob(jobId, CANCEL_REASON)) p.log.info({ jobId }, 'job cancelled through the API: its handler stops at its next safe point');
  });
  return { disconnect: () => sub.disconnect() };
}

/** The delay a kind declares (JobKind.retryDelay) before the next attempt; a kind that declares none retries at once. */
function declaredDelay(p: Platform, kinds: JobKinds, attemptsMade: number, err: Error | undefined, job: { name: string } | undefined): number {
  const def = job && Object.hasOwn(kinds, job.name) ? kinds[job.name] : undefined;
  if (!def?.retryDelay) return 0;
  return Math.max(0, Math.round(def.retryDelay(attemptsMade, decodeFailure(err?.message), p.config)));
}

/** How long an owner's job waits before it asks for a slot again (jittered, so waiting jobs spread out). */
const SLOT_RETRY_MS = 250;

async function dispatch(
  p: Platform,
  kinds: JobKinds,
  slots: OwnerSlots,
  job: Job<JobEnvelope>,
  token: string | undefined,
  signal?: AbortSignal,
): Promise<unknown> {
  const def = Object.hasOwn(kinds, job.name) ? kinds[job.name] : undefined;
  if (!def) throw new UnrecoverableError(encodeFailure(new AppError(500, `No handler for job "${job.name}"`)));
  // Only jobs the API made, as it made them: one added or edited elsewhere (Bull Board, Redis) names an owner and
  // a payload nobody checked. Failed at once, not retried; logged without its data.
  if (!verifyEnvelope(p.secrets, signedIdOf(job), job.name, job.data)) {
    p.log.error(
      { jobId: job.id, job: job.name, queue: job.queueName },
      'refused a job whose signature does not verify (added or edited outside the API, or signed under another SECRET_KEY)',
    );
    throw new UnrecoverableError(encodeFailure(unsignedJob()));
  }
  const owner = job.data.owner ?? null;
  const limit = def.ownerConcurrency && owner !== null ? def.ownerConcurrency(p.config) : undefined;
  if (limit === undefined || !token) return runJob(p, def, job, signal, token);
  // The owner runs `limit` jobs already: this one waits (delayed, not failed: no attempt is spent)
  // and leaves the worker to other owners' jobs.
  const taken = await slots.acquire(job.queueName, owner!, job.id!, limit).catch(() => true);
  if (!taken) {
    await job.moveToDelayed(Date.now() + SLOT_RETRY_MS * (0.5 + Math.random()), token);
    throw new DelayedError();
  }
  // A slot lost on renewal (it lapsed while this process or Redis stalled, and the owner's other jobs took it) does
  // not stop the job: cutting a mail send or fetch halfway costs more than one job over the cap until it ends.
  const renew = async () => {
    if (!(await slots.renew(job.queueName, owner!, job.id!, limit))) p.log.warn({ jobId: job.id, owner }, 'a job lost its per-owner slot while running');
  };
  const renewal = setInterval(() => renew().catch(() => {}), Math.max(1_000, p.config.JOB_LOCK_MS / 3));
  try {
    return await runJob(p, def, job, signal, token);
  } finally {
    clearInterval(renewal);
    await slots.release(job.queueName, owner!, job.id!).catch(() => {});
  }
}

async function runJob(p: Platform, def: JobKind, job: Job<JobEnvelope>, signal?: AbortSignal, token?: string): Promise<unknown> {
  // The request that made the job, too: one id to follow from the API's lines to the worker's.
  const log = p.log.child({ jobId: job.id, reqId: job.data.requestId, job: job.name, attempt: job.attemptsMade + 1 });
  let payload: unknown;
  try {
    payload = await loadPayload(p.db, p.secrets, job.data);
  } catch (raw) {
    const err = toAppError(raw);
    log.error({ code: err.code, message: err.message }, 'could not load the job payload');
    throw err.retriable ? new Error(encodeFailure(err)) : new UnrecoverableError(encodeFailure(err));
  }
  const parsed = def.payload.safeParse(payload);
  if (!parsed.success) {
    throw new UnrecoverableError(
      encodeFailure(new AppError(400, `Invalid job payload: ${describeIssue(parsed.error.issues[0]!)}`, { code: 'invalid_payload' })),
    );
  }
  const replyTo = job.data.replyTo;
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  try {
    const ctx: JobContext = { job, platform: p, log, owner: job.data.owner ?? null, signal, token };
    // Cancelled before it started here (the cancel came while it was being taken): it has done nothing.
    if (await cancelRequested(p.redis, p.keys, job.id!)) throw new JobCancelled();
    const result = await def.run(parsed.data, ctx);
    // resultIn (src/jobs/registry.ts): a result that is private ('postgres') or large goes to job_results and
    // Redis (return value, reply) carries only its id. Serialised once, small or large.
    const json = JSON.stringify(result) as string | undefined;
    const limit = p.config.JOB_INLINE_RESULT_BYTES;
    const stored = json !== undefined && (def.resultIn === 'postgres' || (json.length > limit / 3 && Buffer.byteLength(json) > limit));
    if (stored) await storeResult(p.db, job.id!, json, resultTtlSeconds(p, job));
    recordJob(job.queueName, job.name, seconds(), 'completed', true);
    log.debug({ ms: Math.round(seconds() * 1e5) / 100 }, 'job completed');
    // Before BullMQ records the end: a worker killed in between runs the job again, and it is announced again.
    await announceJobEnd(p, jobEnd(job, 'completed', replyTo ? { delivered: true } : (result ?? null), null));
    if (!replyTo) return stored ? ({ resultRef: job.id! } satisfies ResultRef) : result;
    const id = JSON.stringify(job.id!);
    await publishTo(p.redis, replyTo, stored ? `{"id":${id},"resultRef":${id}}` : json === undefined ? `{"id":${id}}` : `{"id":${id},"result":${json}}`);
    return stored ? ({ ...DELIVERED, resultRef: job.id! } satisfies ResultRef) : DELIVERED;
  } catch (raw) {
    if (raw instanceof UnrecoverableError || raw instanceof DelayedError) throw raw;
    // Cancelled: stopped at a safe point with what it had done, or cut off by the cancel (a connection it closed).
    const cancelled = raw instanceof JobCancelled || isCancelled(signal);
    if (cancelled) await storeResult(p.db, job.id!, JSON.stringify(raw instanceof JobCancelled ? raw.done : null), resultTtlSeconds(p, job, true));
    const err = cancelled ? cancelledError() : toAppError(raw);
    if (err.status >= 500 && !(raw instanceof AppError)) log.error({ err: raw }, 'job failed');
    const final = !err.retriable || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    recordJob(job.queueName, job.name, seconds(), 'failed', final);
    if (replyTo && final) await publishTo(p.redis, replyTo, JSON.stringify({ id: job.id!, error: err.toJSON() } satisfies DirectReply)).catch(() => {});
    // A cancelled job's result is what it had done, as GET /api/jobs/{id} shows it.
    const done = cancelled && raw instanceof JobCancelled ? (raw.done ?? null) : null;
    if (final) await announceJobEnd(p, jobEnd(job, cancelled ? 'cancelled' : 'failed', done, { status: err.status, message: err.message, code: err.code }));
    const reason = encodeFailure(err);
    const wrapped = err.retriable ? new Error(reason) : new UnrecoverableError(reason);
    // Keep the original stack for Bull Board, under the encoded reason.
    if (raw instanceof Error && raw.stack) wrapped.stack = `${reason}\n${raw.stack}`;
    throw wrapped;
  }
}

/** A job's end as its listeners are told it: what GET /api/jobs/{id} will show. */
function jobEnd(job: Job<JobEnvelope>, state: JobEnd['state'], result: unknown, error: JobEnd['error']): JobEnd {
  const { id, name, queueName } = job;
  return { id: id!, name, queue: queueName as QueueName, owner: job.data.owner ?? null, state, result, error, finishedAt: new Date().toISOString() };
}

/** A stored result lives as long as its job is kept (removeOnComplete's age; a cancelled job's, removeOnFail's), and at least a minute. */
function resultTtlSeconds(p: Platform, job: Job<JobEnvelope>, failed = false): number {
  const keep = failed ? job.opts.removeOnFail : job.opts.removeOnComplete;
  const age =
    typeof keep === 'object' && 'age' in keep && keep.age !== undefined
      ? keep.age
      : failed
        ? p.config.JOB_KEEP_FAILED_SECONDS
        : p.config.JOB_KEEP_COMPLETED_SECONDS;
  return Math.max(age, 60);
}

/** The sweep never takes a payload younger than this, whatever JOB_KEEP_FAILED_SECONDS says: its job may still be queued. */
export const PAYLOAD_MIN_AGE_SECONDS = 86_400;

/**
 * Orphaned job_payloads rows (older than JOB_KEEP_FAILED_SECONDS, and at least a day) and expired
 * job_results rows are deleted by every worker process, once soon after start and then every
 * JOB_SWEEP_INTERVAL_MS ± 50% (jittered, so many workers do not sweep in step; concurrent sweeps
 * skip each other's rows).
 */
function startSweeper(p: Platform): { stop(): void } {
  return repeatJittered(p.config.JOB_SWEEP_INTERVAL_MS, async () => {
    try {
      const swept = await sweepJobStorage(p.db, { payloadMaxAgeSeconds: Math.max(p.config.JOB_KEEP_FAILED_SECONDS, PAYLOAD_MIN_AGE_SECONDS) });
      if (swept.payloads || swept.results) p.log.info(swept, 'swept orphaned job payloads and expired job results');
    } catch (err) {
      p.log.warn({ err }, 'job storage sweep failed');
    }
  });
}
