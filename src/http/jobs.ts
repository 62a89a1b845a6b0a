// The jobs API (status, server-sent events) and the one helper job-backed endpoints answer through.
import { PassThrough } from 'node:stream';
import type { Job } from 'bullmq';
import type { Context } from 'koa';
import { v7 as uuidv7 } from 'uuid';
import type { Platform } from '../platform.js';
import { jobStates, jobStatus, jobView, STATE_MAP, type JobEvent } from '../jobs/client.js';
import type { JobDefinition } from '../jobs/define.js';
import { jobDefinitions, type JobName, type PayloadOf, type ResultOf } from '../jobs/registry.js';
import { verifyEnvelope, type JobEnvelope } from '../jobs/wire.js';
import { forgetJobs, listJobOwners, recordJobOwner } from '../logs/job-owners.js';
import { getUser } from '../accounts/store.js';
import { ROLE } from '../accounts/schema.js';
import { OwnerSlots } from '../jobs/fairness.js';
import type { Principal } from '../accounts/auth.js';
import { authorize } from './auth.js';
import { ApiRouter, ok, plainError } from './route.js';
import { AppError, badRequest, forbidden, notFound } from '../errors.js';
import { z } from 'zod';
import { queueNames, type QueueName } from '../config.js';
import { parse } from '../validate.js';

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
  const def = jobDefinitions[name] as JobDefinition;
  const jobId = `${def.queue}-${uuidv7()}`;
  await recordJobOwner(p.db, { jobId, ownerId: principal.user.id, queue: def.queue, name });
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

/** A job in a listing: its status without the result (GET /api/jobs/{id} has that). */
const jobSummary = jobView.omit({ result: true }).extend({ statusUrl: z.string() });
type JobSummary = z.infer<typeof jobSummary>;

const listQuery = z.object({
  limit: z.coerce.number({ error: 'must be 1-100' }).int('must be 1-100').min(1, 'must be 1-100').max(100, 'must be 1-100').default(20),
  cursor: z
    .string()
    .regex(/^\d{1,18}$/, 'must be the nextCursor of a previous page')
    .optional(),
  queue: z.enum(queueNames as readonly QueueName[] as [QueueName, ...QueueName[]], { error: `must be one of ${queueNames.join(', ')}` }).optional(),
  state: z.enum(jobStates, { error: `must be one of ${jobStates.join(', ')}` }).optional(),
  name: z.string().max(100, 'must be at most 100 characters').optional(),
  user: z.coerce.number({ error: 'must be a user id' }).int('must be a user id').positive('must be a user id').max(2_147_483_647).optional(),
});

/** How many of a user's jobs one listing looks at, at most, to fill a page (a state filter may skip many). */
const SCAN_LIMIT = 500;

/** Event streams are counted per user in Redis, across API processes; a stream's lease is renewed by its heartbeat. */
const STREAM_SLOTS = 'job-events';
const STREAM_HEARTBEAT_MS = 15_000;
/** A process that dies with streams open stops renewing them: they stop counting after this. */
const STREAM_LEASE_MS = 3 * STREAM_HEARTBEAT_MS;

async function summarize(job: Job<JobEnvelope>): Promise<JobSummary> {
  return { ...jobStatus(job, STATE_MAP[await job.getState()] ?? 'waiting'), statusUrl: `/api/jobs/${job.id}` };
}

export function jobsRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Jobs');
  const streams = new OwnerSlots(p.redis, p.keys, STREAM_LEASE_MS);

  const list = {
    method: 'get',
    path: '/api/jobs',
    summary: 'Your jobs, newest first (keyset pages: pass nextCursor as cursor); filters queue, state, name; admins may add user',
    auth: 'user',
    query: listQuery,
    responses: {
      200: ok('a page of jobs', z.object({ jobs: z.array(jobSummary), nextCursor: z.string().nullable() })),
      400: ok('invalid filter', plainError),
      403: ok('user given by a non-admin, or a user not below your role', plainError),
    },
  } as const;
  router.endpoint(list, async (ctx) => {
    const principal = await authorize(ctx, p);
    const q = parse(listQuery, ctx.query);
    let ownerId = principal.user.id;
    if (q.user !== undefined && q.user !== principal.user.id) {
      if (principal.user.role < ROLE.admin) throw forbidden("Only admins may list another user's jobs", { code: 'insufficient_role' });
      const target = await getUser(p.db, q.user);
      if (!target) throw notFound('User not found');
      if (principal.user.role < ROLE.root && target.role >= principal.user.role)
        throw forbidden('Cannot list the jobs of a user whose role is equal to or above your own', { code: 'role_too_high' });
      ownerId = target.id;
    }
    const jobs: JobSummary[] = [];
    let before = q.cursor === undefined ? undefined : Number(q.cursor);
    let scanned = 0;
    let more = true;
    while (jobs.length < q.limit && scanned < SCAN_LIMIT) {
      const batchSize = Math.min(100, SCAN_LIMIT - scanned);
      const rows = await listJobOwners(p.db, { ownerId, queue: q.queue, name: q.name, beforeSeq: before, limit: batchSize });
      const found = await Promise.all(rows.map((r) => p.jobs.getJob(r.job_id)));
      // Jobs BullMQ trimmed (past their retention) are gone: so go their rows.
      await forgetJobs(
        p.db,
        rows.filter((_, i) => !found[i]).map((r) => r.job_id),
      );
      const views = await Promise.all(found.map((job) => (job ? summarize(job) : undefined)));
      for (let i = 0; i < rows.length && jobs.length < q.limit; i++) {
        before = rows[i]!.seq;
        scanned++;
        const v = views[i];
        if (v && (!q.state || v.state === q.state)) jobs.push(v);
      }
      if (rows.length < batchSize && before === rows.at(-1)?.seq) {
        more = false;
        break;
      }
      if (rows.length === 0) {
        more = false;
        break;
      }
    }
    ctx.body = { jobs, nextCursor: more && before !== undefined ? String(before) : null };
  });

  /**
   * The job, if the caller may see it: its submitter; root; an admin when the submitter's role is below
   * theirs (a job's payload and result are its submitter's data: mail bodies, texts). A job of no one
   * (shared work, such as embeddings calls of several users gathered into one job): root only. Anyone
   * else: 404, as for a job that does not exist.
   */
  async function visibleJob(ctx: Context) {
    const principal = await authorize(ctx, p);
    const id = String(ctx.params.id ?? '');
    const job = /^[A-Za-z0-9._-]{1,200}$/.test(id) ? await p.jobs.getJob(id) : undefined;
    if (!job) throw notFound('Job not found');
    // The owner the API signed: a job whose data was edited (Bull Board's "update data") belongs to no one (root only).
    const owner = verifyEnvelope(p.secrets, job.id!, job.name, job.data) ? (job.data.owner ?? null) : null;
    const me = principal.user;
    if (owner === me.id || me.role >= ROLE.root) return job;
    if (me.role < ROLE.admin || owner === null) throw notFound('Job not found');
    const submitter = await getUser(p.db, owner);
    if (submitter && submitter.role >= me.role) throw notFound('Job not found');
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
    summary: 'A job you submitted (admins: those of users below their role; root: any)',
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
    responses: {
      200: 'text/event-stream',
      429: ok('the caller already has JOB_EVENT_STREAMS_PER_USER streams open', plainError),
    },
  } as const;
  router.endpoint(events, async (ctx) => {
    const job = await visibleJob(ctx);
    // Each open stream holds memory and a subscription in this process: one user holds at most
    // JOB_EVENT_STREAMS_PER_USER of them at once, on all API processes together.
    const owner = ctx.state.principal!.user.id;
    const max = p.config.JOB_EVENT_STREAMS_PER_USER;
    const lease = uuidv7();
    if (!(await streams.acquire(STREAM_SLOTS, owner, lease, max))) {
      throw new AppError(
        429,
        `You already have ${max} job event streams open, the most one user may (JOB_EVENT_STREAMS_PER_USER): close one, or read GET /api/jobs/{id} instead`,
        { code: 'too_many_streams' },
      );
    }
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
      streams.release(STREAM_SLOTS, owner, lease).catch(() => {});
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
    const heartbeat = setInterval(() => {
      stream.write(': keep-alive\n\n');
      // A lease that lapsed (this process or Redis stalled past it) while the user's other streams took every slot is
      // lost: this stream ends rather than run uncounted past JOB_EVENT_STREAMS_PER_USER.
      streams
        .renew(STREAM_SLOTS, owner, lease, max)
        .then((held) => held || finish())
        .catch(() => {});
    }, STREAM_HEARTBEAT_MS);
    ctx.req.on('close', finish);
    // Gone while its lease was taken: its 'close' came before the listener.
    if (ctx.req.socket.destroyed) finish();

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
