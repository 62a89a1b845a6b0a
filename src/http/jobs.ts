// The jobs API (status, server-sent events) and the one helper job-backed endpoints answer through.
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { jobView, type JobEvent } from '../jobs/client.js';
import type { JobName, PayloadOf, ResultOf } from '../jobs/registry.js';
import type { JobEnvelope } from '../jobs/wire.js';
import { ROLE } from '../accounts/schema.js';
import type { Principal } from '../accounts/auth.js';
import { authorize } from './auth.js';
import { ApiRouter, ok, plainError } from './route.js';
import { AppError, badRequest, notFound } from '../errors.js';
import { z } from 'zod';
import { queueNames, type QueueName } from '../config.js';

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
  const outcome = await p.jobs.run(name, payload, { owner: principal.user.id, requestId: ctx.state.requestId, waitMs, sizeHint });
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

export function jobsRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Jobs');

  /** The job, if the caller may see it: its submitter or an admin. Anyone else: 404. */
  async function visibleJob(ctx: Context) {
    const principal = await authorize(ctx, p);
    const id = String(ctx.params.id ?? '');
    const job = /^[A-Za-z0-9._-]{1,200}$/.test(id) ? await p.jobs.getJob(id) : undefined;
    const data = job?.data as JobEnvelope | undefined;
    if (!job || (data?.owner !== principal.user.id && principal.user.role < ROLE.admin)) throw notFound('Job not found');
    return job;
  }

  /** Admins: a no-op job through a queue, answered with who ran it and how long the round trip took. */
  const ping = {
    method: 'post',
    path: '/api/jobs/ping',
    summary: 'Admins: run a no-op job through a queue (?queue=content|embeddings|mail); answers the worker and the round trip',
    auth: 'admin',
    responses: { 200: ok('who ran it', z.object({ queue: z.string(), worker: z.string(), roundTripMs: z.number() })), 504: 'no worker consumes that queue' },
  } as const;
  router.endpoint(ping, async (ctx) => {
    const principal = await authorize(ctx, p, ROLE.admin);
    const queue = String(ctx.query.queue ?? 'content');
    if (!(queueNames as readonly string[]).includes(queue)) throw badRequest(`queue: must be one of ${queueNames.join(', ')}`, { param: 'queue' });
    const started = performance.now();
    const outcome = await p.jobs.run(
      `${queue as QueueName}.ping`,
      {},
      { owner: principal.user.id, requestId: ctx.state.requestId, waitMs: Math.min(p.config.SYNC_WAIT_MS, 10_000) },
    );
    if (!outcome.done) throw new AppError(504, `No ${queue} worker answered within the wait: is one running for this queue?`, { code: 'no_worker' });
    ctx.body = { queue, worker: outcome.result.worker, roundTripMs: Math.round((performance.now() - started) * 100) / 100 };
  });

  const one = {
    method: 'get',
    path: '/api/jobs/:id',
    summary: 'A job you submitted (admins: any)',
    auth: 'user',
    responses: { 200: ok('the job', jobView), 404: ok('unknown, expired or not yours', plainError) },
  } as const;
  router.endpoint(one, async (ctx) => {
    ctx.body = await p.jobs.view(await visibleJob(ctx));
  });

  const events = {
    method: 'get',
    path: '/api/jobs/:id/events',
    summary: 'Server-sent events: state, progress, then completed or failed',
    auth: 'user',
    responses: { 200: 'text/event-stream' },
  } as const;
  router.endpoint(events, async (ctx) => {
    const job = await visibleJob(ctx);
    const stream = new PassThrough();
    let closed = false;
    const send = (event: string, data: unknown) => {
      if (!closed) stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const id = job.id!;
    const finish = () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      clearInterval(heartbeat);
      stream.end();
    };
    // Subscribe before reading the state, so nothing falls between the two.
    const unsubscribe = p.jobs.subscribe(id, (e: JobEvent) => {
      if (e.type === 'progress') send('progress', { progress: e.data });
      else if (e.type === 'completed') {
        send('completed', { result: e.result });
        finish();
      } else {
        send('failed', { error: { status: e.error.status, message: e.error.message, code: e.error.code } });
        finish();
      }
    });
    const heartbeat = setInterval(() => stream.write(': keep-alive\n\n'), 15_000);
    ctx.req.on('close', finish);

    ctx.req.socket.setTimeout(0);
    ctx.set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    ctx.status = 200;
    ctx.body = stream;

    const view = await p.jobs.view(job);
    send('state', view);
    if (view.state === 'completed') {
      send('completed', { result: view.result });
      finish();
    } else if (view.state === 'failed') {
      send('failed', { error: view.error });
      finish();
    }
  });

  return router;
}
