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
import { AppError, forbidden, notFound } from '../errors.js';
import { jobStatus, STATE_MAP, type JobEvent } from '../jobs/client.js';
import { OwnerSlots } from '../jobs/fairness.js';
import { verifyEnvelope, type JobEnvelope } from '../jobs/wire.js';
import type { Platform } from '../platform.js';
import { forgetJobs, listJobOwners } from './job-owners.js';
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
export async function listJobs(p: Pick<Platform, 'db' | 'jobs'>, me: Viewer, q: JobListQuery): Promise<{ jobs: JobSummary[]; nextCursor: string | null }> {
  const ownerId = await listedOwner(p, me, q.user);
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
  // The owner the API signed: a job whose data was edited (Bull Board's "update data") belongs to no one (root only).
  const owner = verifyEnvelope(p.secrets, job.id!, job.name, job.data) ? (job.data.owner ?? null) : null;
  if (owner === me.id || me.role >= ROLE.root) return job;
  if (me.role < ROLE.admin || owner === null) throw notFound('Job not found');
  const submitter = await getUser(p.db, owner);
  if (submitter && submitter.role >= me.role) throw notFound('Job not found');
  return job;
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
