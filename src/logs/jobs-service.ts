// What the jobs API does, apart from HTTP: a caller's jobs page by page (the job index, job-owners.ts, read against
// what BullMQ still has), the one job a caller may see, a no-op job through a queue, and a job's events as a stream
// of server-sent events, counted against its user's open streams.
import { PassThrough } from 'node:stream';
import type { Job } from 'bullmq';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../accounts/auth.js';
import { ROLE } from '../accounts/schema.js';
import { getUser } from '../accounts/store.js';
import type { QueueName } from '../config.js';
import { AppError, conflict, forbidden, notFound } from '../errors.js';
import { cancelledError, cancelKey, requestCancel } from '../jobs/cancel.js';
import { announceJobEnd } from '../jobs/define.js';
import { jobStatus, STATE_MAP, type JobEvent, type JobView } from '../jobs/client.js';
import { OwnerSlots } from '../jobs/fairness.js';
import { type DirectReply, verifyEnvelope, type JobEnvelope } from '../jobs/wire.js';
import type { Platform } from '../platform.js';
import { publishTo } from '../redis.js';
import { jobActionEntry } from './entries.js';
import { forgetJobs, listJobOwners } from './job-owners.js';
import { insertLogs } from './store.js';
import type { JobListQuery, JobSummary } from './jobs-schema.js';

/** Who submitted a job, recorded before it is queued: for areas that enqueue jobs for their users (schedules). */
export { recordJobOwner } from './job-owners.js';

/** Who is asking: their id and role. */
type Viewer = Pick<Principal['user'], 'id' | 'role'>;

/** How many of a user's jobs one listing looks at, at most, to fill a page (a state filter may skip many). */
const SCAN_LIMIT = 500;

async function summarize(job: Job<JobEnvelope>): Promise<JobSummary> {
  return { ...jobStatus(job, STATE_MAP[await job.getState()] ?? 'waiting'), statusUrl: `/api/jobs/${job.id}` };
}

/** Whose jobs a listing shows: the caller's, or (admins) those of the user they name, if below their role (root: anyone's). */
async function listedOwner(p: Pick<Platform, 'db'>, me: Viewer, user: number | undefined): Promise<number> {
  if (user === undefined || user === me.id) return me.id;
  if (me.role < ROLE.admin) throw forbidden("Only admins may list another user's jobs", { code: 'insufficient_role' });
  const target = await getUser(p.db, user);
  if (!target) throw notFound('User not found');
  if (me.role < ROLE.root && target.role >= me.role)
    throw forbidden('Cannot list the jobs of a user whose role is equal to or above your own', { code: 'role_too_high' });
  return target.id;
}

/** A page of a user's jobs, newest first, by keyset (`nextCursor` is the next page's `cursor`, null after the last). */
export async function listJobs(
  p: Pick<Platform, 'db' | 'jobs' | 'redis' | 'keys'>,
  me: Viewer,
  q: JobListQuery,
): Promise<{ jobs: JobSummary[]; nextCursor: string | null }> {
  const ownerId = await listedOwner(p, me, q.user);
  const jobs: JobSummary[] = [];
  let before = q.cursor === undefined ? undefined : Number(q.cursor);
  let scanned = 0;
  let more = true;
  while (jobs.length < q.limit && scanned < SCAN_LIMIT) {
    const batchSize = Math.min(100, SCAN_LIMIT - scanned);
    const rows = await listJobOwners(p.db, { ownerId, queue: q.queue, name: q.name, beforeSeq: before, limit: batchSize });
    const found = await Promise.all(rows.map((r) => p.jobs.getJob(r.job_id)));
    // A job cancelled while it waited was removed from BullMQ: its record stands for it while it is kept.
    const records = await Promise.all(rows.map((r, i) => (found[i] ? undefined : cancelledRecord(p, r.job_id))));
    // Jobs BullMQ trimmed (past their retention) are gone: so go their rows.
    await forgetJobs(
      p.db,
      rows.filter((_, i) => !found[i] && !records[i]).map((r) => r.job_id),
    );
    const views = await Promise.all(found.map((job, i) => (job ? summarize(job) : records[i] && summaryOf(records[i].view))));
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
  return { jobs, nextCursor: more && before !== undefined ? String(before) : null };
}

/**
 * The job, if the caller may see it: its submitter; root; an admin when the submitter's role is below
 * theirs (a job's payload and result are its submitter's data: mail bodies, texts). A job of no one
 * (shared work, such as embeddings calls of several users gathered into one job): root only. Anyone
 * else: 404, as for a job that does not exist.
 */
export async function visibleJob(p: Pick<Platform, 'db' | 'jobs' | 'secrets'>, me: Viewer, id: string): Promise<Job<JobEnvelope>> {
  const job = /^[A-Za-z0-9._-]{1,200}$/.test(id) ? await p.jobs.getJob(id) : undefined;
  if (!job) throw notFound('Job not found');
  if (!(await mayView(p, me, ownerOf(p, job)))) throw notFound('Job not found');
  return job;
}

/** The owner the API signed: a job whose data was edited (Bull Board's "update data") belongs to no one (root only). */
const ownerOf = (p: Pick<Platform, 'secrets'>, job: Job<JobEnvelope>): number | null =>
  verifyEnvelope(p.secrets, job.id!, job.name, job.data) ? (job.data.owner ?? null) : null;

/** The visibility rule of a job of `owner` (see visibleJob). */
async function mayView(p: Pick<Platform, 'db'>, me: Viewer, owner: number | null): Promise<boolean> {
  if (owner === me.id || me.role >= ROLE.root) return true;
  if (me.role < ROLE.admin || owner === null) return false;
  const submitter = await getUser(p.db, owner);
  return !(submitter && submitter.role >= me.role);
}

/** What stands for a job cancelled while it waited (BullMQ no longer has it): its view, and whose it was. */
interface CancelledRecord {
  owner: number | null;
  view: JobView;
}
const recordKey = (p: Pick<Platform, 'keys'>, id: string) => p.keys.of('job-cancelled', id);

async function cancelledRecord(p: Pick<Platform, 'redis' | 'keys'>, id: string): Promise<CancelledRecord | undefined> {
  const raw = await p.redis.get(recordKey(p, id));
  return raw ? (JSON.parse(raw) as CancelledRecord) : undefined;
}

const summaryOf = (view: JobView): JobSummary => {
  const { result: _, ...rest } = view;
  return { ...rest, statusUrl: `/api/jobs/${view.id}` };
};

/** GET /api/jobs/{id}: the job as the caller may see it, a job cancelled while it waited included. */
export async function viewJob(p: Pick<Platform, 'db' | 'jobs' | 'secrets' | 'redis' | 'keys'>, me: Viewer, id: string): Promise<JobView> {
  const job = /^[A-Za-z0-9._-]{1,200}$/.test(id) ? await p.jobs.getJob(id) : undefined;
  if (job) return p.jobs.view(await visibleJob(p, me, id));
  const record = /^[A-Za-z0-9._-]{1,200}$/.test(id) ? await cancelledRecord(p, id) : undefined;
  if (!record || !(await mayView(p, me, record.owner))) throw notFound('Job not found');
  return record.view;
}

/** How long DELETE /api/jobs/{id} waits for a running job to stop at its next safe point before answering 202. */
const CANCEL_WAIT_MS = 3_000;
const WAITING = new Set(['waiting', 'prioritized', 'delayed', 'waiting-children']);
const alreadyOver = (state: string) => conflict(`This job has already ended (${state}): there is nothing to cancel`, { code: 'job_finished' });

/**
 * DELETE /api/jobs/{id}: cancels a job the caller may see (its submitter; an admin under the role rule; root). A job
 * still waiting (or delayed) is removed and reads `cancelled` (a record stands for it as long as a failed job is
 * kept); a running one is told through its AbortSignal, on whichever worker process runs it, and stops at its next
 * safe point, reading `cancelled` with what it had done (200 once it has, 202 while it is still getting there); a job
 * that has ended is a 409. The one place a cancel goes through.
 */
export async function cancelJob(p: Platform, me: Viewer, id: string): Promise<{ status: 200 | 202; job: JobView }> {
  let job: Job<JobEnvelope>;
  try {
    job = await visibleJob(p, me, id);
  } catch (err) {
    const record = await cancelledRecord(p, id).catch(() => undefined);
    if (record && (await mayView(p, me, record.owner))) throw alreadyOver('cancelled');
    throw err;
  }
  const refused = p.jobs.kind(job.name).notCancellable;
  if (refused) throw conflict(refused, { code: 'job_not_cancellable' });
  let state = await job.getState();
  if (WAITING.has(state)) {
    const err = cancelledError();
    const view: JobView = {
      ...jobStatus(job, 'waiting'),
      state: 'cancelled',
      result: null,
      error: { status: err.status, message: err.message, code: err.code },
      finishedAt: new Date().toISOString(),
    };
    // The record first: a reader never finds neither the job nor its record.
    await p.redis.set(
      recordKey(p, id),
      JSON.stringify({ owner: ownerOf(p, job), view } satisfies CancelledRecord),
      'EX',
      Math.max(60, p.config.JOB_KEEP_FAILED_SECONDS),
    );
    try {
      await job.remove();
      // A process waiting for a direct reply (an embeddings call) hears it now: its call fails and its quota goes back.
      const replyTo = job.data.replyTo;
      if (replyTo) await publishTo(p.redis, replyTo, JSON.stringify({ id, error: err.toJSON() } satisfies DirectReply)).catch(() => {});
      // Its end, told as a worker tells a running job's (webhooks: job.cancelled).
      await announceJobEnd(p, {
        id,
        name: job.name,
        queue: view.queue,
        owner: ownerOf(p, job),
        state: 'cancelled',
        result: null,
        error: view.error,
        finishedAt: view.finishedAt!,
      });
      return { status: 200, job: view };
    } catch {
      // A worker took it meanwhile (it is locked): cancel it as a running job.
      await p.redis.del(recordKey(p, id));
      state = await job.getState();
    }
  }
  if (state === 'completed' || state === 'failed') throw alreadyOver((await p.jobs.view(job)).state);
  await requestCancel(p.redis, p.keys, id, p.config.JOB_KEEP_FAILED_SECONDS);
  const deadline = Date.now() + CANCEL_WAIT_MS;
  for (;;) {
    const view = await p.jobs.view((await p.jobs.getJob(id)) ?? job);
    if (view.state !== 'active' && view.state !== 'waiting' && view.state !== 'delayed') return { status: 200, job: view };
    if (Date.now() > deadline) return { status: 202, job: view };
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * POST /api/jobs/{id}/retry: runs a failed job of the caller's again (same id, same payload, attempts counted from
 * zero), with an audit row. Only its submitter; only a failed job (not a cancelled one: 409); a job whose stored
 * payload is gone (swept past JOB_KEEP_FAILED_SECONDS) is a 410.
 */
export async function retryJob(
  p: Pick<Platform, 'db' | 'jobs' | 'secrets' | 'redis' | 'keys'>,
  me: Viewer & { username: string },
  id: string,
): Promise<JobView> {
  const job = await visibleJob(p, me, id);
  if (ownerOf(p, job) !== me.id) throw forbidden('Only the user who submitted a job may retry it', { code: 'not_job_owner' });
  const view = await p.jobs.view(job);
  if (view.state !== 'failed') throw conflict(`Only a failed job can be retried; this one is ${view.state}`, { code: 'job_not_failed' });
  if (job.data.payloadRef && !(await p.db('job_payloads').where({ job_id: job.data.payloadRef }).first('job_id')))
    throw new AppError(410, 'The payload of this job is gone (kept as long as the failed job): submit it again', { code: 'payload_missing' });
  await p.redis.del(cancelKey(p.keys, id));
  await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
  await insertLogs(p.db, [jobActionEntry(me, `Retried job ${id} (${job.name})`)]);
  return p.jobs.view((await p.jobs.getJob(id)) ?? job);
}

/** A no-op job through `queue`, waited for: who ran it and how long the round trip took (504 when no worker answers). */
export async function pingQueue(p: Pick<Platform, 'config' | 'jobs'>, me: Viewer, queue: QueueName, requestId: string | undefined) {
  const started = performance.now();
  const outcome = await p.jobs.run(`${queue}.ping`, {}, { owner: me.id, requestId, waitMs: Math.min(p.config.SYNC_WAIT_MS, 10_000) });
  if (!outcome.done) throw new AppError(504, `No ${queue} worker answered within the wait: is one running for this queue?`, { code: 'no_worker' });
  return { queue, worker: outcome.result.worker, roundTripMs: Math.round((performance.now() - started) * 100) / 100 };
}

/** Event streams are counted per user in Redis, across API processes; a stream's lease is renewed by its heartbeat. */
const STREAM_SLOTS = 'job-events';
const STREAM_HEARTBEAT_MS = 15_000;
/** A process that dies with streams open stops renewing them: they stop counting after this. */
const STREAM_LEASE_MS = 3 * STREAM_HEARTBEAT_MS;

export interface JobEventStream {
  /** The events as text/event-stream. */
  stream: PassThrough;
  /** Ends the stream and gives its slot back (the client went away); more calls do nothing. */
  close(): void;
  /** Sends the job's state now (and ends the stream if the job is already over). */
  start(): Promise<void>;
}

/**
 * A job's events for `userId`: state, progress, then completed or failed, with a keep-alive comment every 15 s. Each open
 * stream holds memory and a subscription in this process: one user holds at most JOB_EVENT_STREAMS_PER_USER of them at
 * once, on all API processes together (429 past that).
 */
export async function openJobEvents(p: Pick<Platform, 'config' | 'jobs' | 'keys' | 'redis'>, job: Job<JobEnvelope>, userId: number): Promise<JobEventStream> {
  const streams = new OwnerSlots(p.redis, p.keys, STREAM_LEASE_MS);
  const max = p.config.JOB_EVENT_STREAMS_PER_USER;
  const lease = uuidv7();
  if (!(await streams.acquire(STREAM_SLOTS, userId, lease, max))) {
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
  const finish = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    clearInterval(heartbeat);
    stream.end();
    streams.release(STREAM_SLOTS, userId, lease).catch(() => {});
  };
  // Subscribe before reading the state, so nothing falls between the two.
  const unsubscribe = p.jobs.subscribe(job.id!, (e: JobEvent) => {
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
      .renew(STREAM_SLOTS, userId, lease, max)
      .then((held) => held || finish())
      .catch(() => {});
  }, STREAM_HEARTBEAT_MS);
  const start = async () => {
    const view = await p.jobs.view(job);
    send('state', view);
    if (view.state === 'completed') {
      send('completed', { result: view.result });
      finish();
    } else if (view.state === 'failed') {
      send('failed', { error: view.error });
      finish();
    }
  };
  return { stream, close: finish, start };
}
