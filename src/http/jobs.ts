// The one helper job-backed endpoints answer through (the jobs API's own routes are in jobs-routes.ts).
import type { Context } from 'koa';
import { v7 as uuidv7 } from 'uuid';
import type { Platform } from '../platform.js';
import type { JobName, PayloadOf, ResultOf } from '../jobs/registry.js';
import { forgetJobs, recordJobOwner } from '../logs/job-owners.js';
import type { Principal } from '../accounts/auth.js';

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
  const sizeHint = ctx.request.rawBody === undefined ? undefined : Buffer.byteLength(ctx.request.rawBody);
  // The job's owner is recorded before the job exists, so GET /api/jobs never misses one (jobs.run() with a known id).
  const queue = p.jobs.queueOf(name);
  const jobId = `${queue}-${uuidv7()}`;
  await recordJobOwner(p.db, { jobId, ownerId: principal.user.id, queue, name });
  const meta = { owner: principal.user.id, requestId: ctx.state.requestId, sizeHint, jobId };
  const wait = waitMs > 0 ? p.jobs.waitFor(jobId, waitMs) : undefined;
  try {
    await p.jobs.enqueue(name, payload, meta);
  } catch (err) {
    wait?.cancel();
    await forgetJobs(p.db, [jobId]).catch(() => {});
    throw err;
  }
  const done = wait ? await wait.promise : { done: false as const };
  const outcome = done.done ? { jobId, done: true as const, result: done.result as ResultOf<N> } : { jobId, done: false as const };
  if (outcome.done) return outcome.result;
  let state = 'waiting';
  if (waitMs > 0) {
    const job = await p.jobs.getJob(outcome.jobId).catch(() => undefined);
    if (job) state = (await p.jobs.view(job)).state;
  }
  const statusUrl = `/api/jobs/${outcome.jobId}`;
  ctx.status = 202;
  ctx.set('Location', statusUrl);
  ctx.body = { jobId: outcome.jobId, state, statusUrl };
  return undefined;
}
