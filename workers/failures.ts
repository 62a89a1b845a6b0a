// Failures no handler announced: a job BullMQ failed itself (stalled more than maxStalledCount times, the worker that
// next takes it fails it without running it) and one failed before its handler ran (no handler, an envelope that does
// not verify, a payload unreadable, gone or invalid). The worker process that failed it announces it at once; every
// worker process also sweeps its queues' failed jobs of the last minutes for one whose announcement nobody made (the
// process that failed it died first). Once across all of them: src/jobs/define.ts announceOnce.
import type { Job } from 'bullmq';
import type { QueueName } from '../src/config.js';
import { jobStatus } from '../src/jobs/client.js';
import { announcedState, announceOnce } from '../src/jobs/define.js';
import type { JobEnd } from '../src/jobs/registry.js';
import { loadResult, signedIdOf, verifyEnvelope, type JobEnvelope } from '../src/jobs/wire.js';
import type { Platform } from '../src/platform.js';

/** A failed job is looked at by the sweeps for 10 minutes after it failed (or 3 sweeps, if longer). */
const lookbackMs = (interval: number) => Math.max(10 * 60_000, 3 * interval);
/** The sweeps leave a failure this long to the process that failed it (and to clocks a little apart). */
const GRACE_MS = 10_000;

/** The end a failed job's record shows (GET /api/jobs/{id} shows the same); undefined when it is not to be trusted. */
async function recordedEnd(p: Platform, job: Job<JobEnvelope>): Promise<JobEnd | undefined> {
  // Only jobs the API made: a forged envelope names an owner nobody checked, whose endpoints are not told.
  if (!verifyEnvelope(p.secrets, signedIdOf(job), job.name, job.data)) return undefined;
  const status = jobStatus(job, 'failed');
  // A job cancelled while it ran ends failed in BullMQ; what it had done is its result (src/jobs/cancel.ts).
  const state = status.state === 'cancelled' ? 'cancelled' : 'failed';
  const result = state === 'cancelled' ? ((await loadResult(p.db, job.id!)) ?? null) : null;
  const finishedAt = status.finishedAt ?? new Date().toISOString();
  return { id: job.id!, name: job.name, queue: job.queueName as QueueName, owner: job.data.owner ?? null, state, result, error: status.error, finishedAt };
}

export interface FailureWatch {
  /** A job this process failed for good (BullMQ's `failed` event with finishedOn set): announced unless it was. */
  failed(job: Job<JobEnvelope>): void;
  stop(): void;
}

/** Announces the failures of `queues` that nobody announced: as this process makes them, and by sweeping for the others. */
export function watchFailures(p: Platform, queues: readonly QueueName[]): FailureWatch {
  const announce = async (job: Job<JobEnvelope>): Promise<boolean> => {
    const did = await announceOnce(p, job.id!, () => recordedEnd(p, job));
    if (did) p.log.info({ jobId: job.id, job: job.name, reason: job.failedReason }, 'announced the end of a job that failed outside its handler');
    return did;
  };
  // Per queue, the finish time the next sweep starts from: the oldest failure not yet known announced, or where the last one ended.
  const floors = new Map<QueueName, number>();
  const sweep = async (queue: QueueName) => {
    const q = p.jobs.queues.get(queue)!;
    const now = Date.now();
    const from = Math.max(floors.get(queue) ?? 0, now - lookbackMs(p.config.JOB_STALLED_INTERVAL_MS));
    const to = now - GRACE_MS;
    if (to <= from) return;
    const flat = await p.redis.zrangebyscore(q.toKey('failed'), from, to, 'WITHSCORES');
    const ids = flat.filter((_, i) => i % 2 === 0);
    const states = await announcedState(p, ids);
    let floor = to;
    for (const [i, id] of ids.entries()) {
      if (states[i] === true) continue;
      const job = states[i] === false ? ((await q.getJob(id)) as Job<JobEnvelope> | undefined) : undefined;
      const done = job ? await announce(job).catch((err) => (p.log.warn({ err, jobId: id }, 'could not announce the end of a failed job'), false)) : false;
      // Claimed by a process still at it (or dead: its claim lapses), or not announced this time: looked at again next time.
      if (!done && (job || states[i] === 'claimed')) floor = Math.min(floor, Number(flat[i * 2 + 1]));
    }
    floors.set(queue, floor);
  };
  const sweeps = repeatJittered(p.config.JOB_STALLED_INTERVAL_MS, async () => {
    for (const queue of queues) await sweep(queue).catch((err) => p.log.warn({ err, queue }, 'could not sweep failed jobs for unannounced ends'));
  });
  return {
    failed: (job) => void announce(job).catch((err) => p.log.warn({ err, jobId: job.id }, 'could not announce the end of a failed job')),
    stop: () => sweeps.stop(),
  };
}

/** Runs `run` soon after now and then every `interval` ± 50 % (jittered, so many workers do not run in step), until stopped. */
export function repeatJittered(interval: number, run: () => Promise<void>, first = Math.min(interval, 30_000) * Math.random()): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(async () => {
      await run();
      schedule(interval * (0.5 + Math.random()));
    }, ms);
    timer.unref();
  };
  schedule(first);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
