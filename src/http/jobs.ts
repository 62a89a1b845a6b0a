// The one helper job-backed endpoints answer through (the jobs API's own routes are in jobs-routes.ts).
import type { Context } from 'koa';
import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';
import type { Platform } from '../platform.js';
import type { JobName, PayloadOf, ResultOf } from '../jobs/registry.js';
import { forgetJobs, recordJobOwner } from '../logs/job-owners.js';
import type { Principal } from '../accounts/auth.js';

/** What an idempotent request (Idempotency-Key, idempotency.ts) hands its job: the seed of its id, and the id made. */
export interface JobIdempotency {
  seed: string;
  jobId?: string;
}

/** The namespace of job ids derived from an Idempotency-Key (UUID v5 of the user, the key and the request). */
const IDEMPOTENT_JOB_IDS = '0b6f3c1e-6c0a-4b8e-9a51-7f2d1e4c8a90';

/** `Prefer: respond-async` (RFC 7240) asks for 202 at once instead of waiting. */
const prefersAsync = (ctx: Context) =>
  ctx
    .get('prefer')
    .split(',')
    .some((p) => p.trim().toLowerCase() === 'respond-async');

/**
 * Runs a job for a request. Waits up to SYNC_WAIT_MS and returns the job's result; with
 * `Prefer: respond-async`, or when the wait runs out, writes 202 {jobId, state, statusUrl} with
 * Location and returns undefined. A failed job throws its AppError (the area maps it).
 */
export async function runJobForRequest<N extends JobName>(
  ctx: Context,
  p: Platform,
  name: N,
  payload: PayloadOf<N>,
  principal: Principal,
  opts: { minWaitMs?: number } = {},
): Promise<ResultOf<N> | undefined> {
  // A job that is meant to take long (a mail wait) is waited for at least that long.
  const waitMs = prefersAsync(ctx) ? 0 : Math.max(p.config.SYNC_WAIT_MS, opts.minWaitMs ?? 0);
  const queue = p.jobs.queueOf(name);
  // With an Idempotency-Key, the id derives from the user, the key and the request: were the key's record lost, a
  // second run still finds this job (BullMQ adds no second job under one id) and answers from it.
  const idempotency = ctx.state.idempotency as JobIdempotency | undefined;
  const jobId = `${queue}-${idempotency ? uuidv5(idempotency.seed, IDEMPOTENT_JOB_IDS) : uuidv7()}`;
  if (idempotency) idempotency.jobId = jobId;
  const wait = waitMs > 0 ? p.jobs.waitFor(jobId, waitMs) : undefined;
  // The owner is recorded before the job exists, so GET /api/jobs never misses one (a row for a job that exists
  // already is kept as it is); looking for that job costs no time of its own beside it.
  const [existing] = await Promise.all([
    idempotency ? p.jobs.getJob(jobId) : undefined,
    recordJobOwner(p.db, { jobId, ownerId: principal.user.id, queue, name }),
  ]).catch((err) => {
    wait?.cancel();
    throw err;
  });
  const final = existing && (await p.jobs.finalState(jobId));
  if (final) {
    wait?.cancel();
    if (final.type === 'failed') throw final.error;
    return final.result as ResultOf<N>;
  }
  if (!existing) await submit(ctx, p, name, payload, principal, jobId, wait);
  const done = wait ? await wait.promise : { done: false as const };
  const outcome = done.done ? { jobId, done: true as const, result: done.result as ResultOf<N> } : { jobId, done: false as const };
  if (outcome.done) return outcome.result;
  let state = 'waiting';
  if (waitMs > 0) {
    const job = await p.jobs.getJob(outcome.jobId).catch(() => undefined);
    if (job) state = (await p.jobs.view(job)).state;
  }
  writeAccepted(ctx, outcome.jobId, state);
  return undefined;
}

/** Enqueues the job; if that fails, its owner's row goes too. */
async function submit<N extends JobName>(
  ctx: Context,
  p: Platform,
  name: N,
  payload: PayloadOf<N>,
  principal: Principal,
  jobId: string,
  wait: { cancel: () => void } | undefined,
) {
  const sizeHint = ctx.request.rawBody === undefined ? undefined : Buffer.byteLength(ctx.request.rawBody);
  try {
    await p.jobs.enqueue(name, payload, { owner: principal.user.id, requestId: ctx.state.requestId, sizeHint, jobId });
  } catch (err) {
    wait?.cancel();
    await forgetJobs(p.db, [jobId]).catch(() => {});
    throw err;
  }
}

/** 202 {jobId, state, statusUrl} with Location: the job goes on. */
export function writeAccepted(ctx: Context, jobId: string, state: string) {
  const statusUrl = `/api/jobs/${jobId}`;
  ctx.status = 202;
  ctx.set('Location', statusUrl);
  ctx.body = { jobId, state, statusUrl };
}
