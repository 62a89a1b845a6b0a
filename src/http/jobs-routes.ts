// The jobs API: your jobs (keyset pages), one job, cancelling and retrying it, its server-sent events, and the admins'
// ping through a queue.
// Each endpoint is declared (route.ts): auth and parsing are enforced before its handler runs; the work is the jobs
// service's (src/logs/jobs-service.ts, over the job index that src/logs keeps).
import { z } from 'zod';
import type { Platform } from '../platform.js';
import { jobView } from '../jobs/client.js';
import { jobListQuery, jobSummary, parsePingQuery } from '../logs/jobs-schema.js';
import * as jobs from '../logs/jobs-service.js';
import { ApiRouter, endpoint, ok, plainError } from './route.js';

const list = endpoint(
  {
    method: 'get',
    path: '/api/jobs',
    summary: 'Your jobs, newest first (keyset pages: pass nextCursor as cursor); filters queue, state, name; admins may add user',
    auth: 'user',
    query: jobListQuery,
    responses: {
      200: ok('a page of jobs', z.object({ jobs: z.array(jobSummary), nextCursor: z.string().nullable() })),
      400: ok('invalid filter', plainError),
      403: ok('user given by a non-admin, or a user not below your role', plainError),
    },
  },
  (_ctx, { p, principal, query }) => jobs.listJobs(p, principal.user, query),
);

/** Admins: a no-op job through a queue, answered with who ran it and how long the round trip took. */
const ping = endpoint(
  {
    method: 'post',
    path: '/api/jobs/ping',
    summary: 'Admins: run a no-op job through a queue (?queue=content|embeddings|mail); answers the worker and the round trip',
    auth: 'admin',
    parseQuery: parsePingQuery,
    responses: { 200: ok('who ran it', z.object({ queue: z.string(), worker: z.string(), roundTripMs: z.number() })), 504: 'no worker consumes that queue' },
  },
  (ctx, { p, principal, query }) => jobs.pingQueue(p, principal.user, query.queue, ctx.state.requestId),
);

const one = endpoint(
  {
    method: 'get',
    path: '/api/jobs/:id',
    summary: 'A job you submitted (admins: those of users below their role; root: any)',
    auth: 'user',
    responses: { 200: ok('the job', jobView), 404: ok('unknown, expired or not yours', plainError) },
  },
  (_ctx, { p, principal, path }) => jobs.viewJob(p, principal.user, path.id),
);

const cancel = endpoint(
  {
    method: 'delete',
    path: '/api/jobs/:id',
    summary:
      'Cancel a job you submitted (admins: those of users below their role; root: any): a waiting or delayed job is removed and reads cancelled; a running one stops at its next safe point and reads cancelled with what it had done',
    auth: 'user',
    responses: {
      200: ok('cancelled: the job as it now reads', jobView),
      202: ok('running: told to stop, not stopped yet (poll GET /api/jobs/{id})', jobView),
      404: ok('unknown, expired or not yours', plainError),
      409: ok('the job has already ended (completed, failed or cancelled)', plainError),
    },
  },
  async (ctx, { p, principal, path }) => {
    const { status, job } = await jobs.cancelJob(p, principal.user, path.id);
    ctx.status = status;
    return job;
  },
);

const retry = endpoint(
  {
    method: 'post',
    path: '/api/jobs/:id/retry',
    summary: 'Run a failed job of yours again: same id and payload, attempts counted from zero (an audit row says so)',
    auth: 'user',
    idempotent: true,
    responses: {
      200: ok('queued again: the job as it now reads', jobView),
      403: ok('not your job', plainError),
      404: ok('unknown, expired or not visible to you', plainError),
      409: ok('the job is not failed (cancelled jobs are not retried)', plainError),
      410: ok('its stored payload is gone: submit it again', plainError),
    },
  },
  (_ctx, { p, principal, path }) => jobs.retryJob(p, principal.user, path.id),
);

const events = endpoint(
  {
    method: 'get',
    path: '/api/jobs/:id/events',
    summary: 'Server-sent events: state, progress, then completed or failed',
    auth: 'user',
    responses: {
      200: 'text/event-stream',
      429: ok('the caller already has JOB_EVENT_STREAMS_PER_USER streams open', plainError),
    },
  },
  async (ctx, { p, principal, path }) => {
    const job = await jobs.visibleJob(p, principal.user, path.id);
    const sse = await jobs.openJobEvents(p, job, principal.user.id);
    ctx.req.on('close', sse.close);
    // Gone while its lease was taken: its 'close' came before the listener.
    if (ctx.req.socket.destroyed) sse.close();
    ctx.req.socket.setTimeout(0);
    ctx.set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    ctx.status = 200;
    ctx.body = sse.stream;
    await sse.start();
  },
);

export const jobsRouter = (p: Platform): ApiRouter => new ApiRouter('Jobs', p).add(list, ping, one, cancel, retry, events);
