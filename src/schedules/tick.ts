// A schedule's tick, in a worker: the schedule loaded, its owner checked as the API checks a request, and the real job
// enqueued as its owner under an id made from the tick (so a tick run twice enqueues one job).
import type { Job } from 'bullmq';
import { AppError } from '../errors.js';
import type { JobName } from '../jobs/registry.js';
import type { JobEnvelope } from '../jobs/wire.js';
import { recordJobOwner } from '../logs/jobs-service.js';
import type { Platform } from '../platform.js';
import * as s from './schema.js';
import { ownerCheck, removeScheduler } from './service.js';
import * as store from './store.js';

export interface TickResult {
  outcome: 'queued' | 'skipped' | 'gone' | 'paused';
  jobId?: string;
  /** How many times this tick ran (1 unless a worker died mid-tick). */
  runs?: number;
  message?: string;
}

/** The tick's time: BullMQ names a scheduler's jobs `repeat:<scheduler id>:<ms>`. */
const tickTimeOf = (job: Job) => {
  const ms = Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
  return Number.isSafeInteger(ms) && ms > 0 ? ms : job.timestamp;
};

/** Ticks the rule had between the previous recorded one and this one (a scheduler stalled, Redis lost its next job). */
function missedTicks(row: s.ScheduleRow, previous: number | null, tickAt: number): number {
  // A schedule changed (timing, paused, resumed) since the previous tick follows a new rule: nothing to compare.
  if (previous === null || previous < new Date(row.updated_at).getTime()) return 0;
  return s.nextTimes(s.timingOf(row), previous, 1000).filter((t) => t < tickAt).length;
}

export async function runTick(p: Platform, scheduleId: number, owner: number | null, job: Job<JobEnvelope>): Promise<TickResult> {
  const tickAt = tickTimeOf(job);
  const row = await store.getSchedule(p.db, scheduleId);
  if (!row) {
    // Deleted: its scheduler goes too, should it have outlived the row.
    await removeScheduler(p, scheduleId).catch(() => {});
    return { outcome: 'gone' };
  }
  if (row.owner_id !== owner) throw new AppError(403, 'This tick names another owner than its schedule', { code: 'schedule_owner_mismatch', retriable: false });
  if (!row.enabled) {
    await removeScheduler(p, scheduleId).catch(() => {});
    return { outcome: 'paused' };
  }
  const { runs, previous } = await store.recordTick(p.db, scheduleId, tickAt);
  const missed = missedTicks(row, previous, tickAt);
  const note = missed ? `${missed} earlier tick(s) did not run (the scheduler was stopped or lost its next job); ` : '';
  const check = row.owner_id === null ? { job: { name: row.kind, payload: {} } } : await ownerCheck(p, row);
  if ('refused' in check) {
    const message = `${note}Skipped and paused: ${check.refused}`;
    await store.finishTick(p.db, scheduleId, tickAt, { outcome: 'skipped', message, jobId: null, pause: check.refused });
    await removeScheduler(p, scheduleId).catch(() => {});
    p.log.info({ schedule: scheduleId, reason: check.refused }, 'schedule paused: its owner may no longer run it');
    return { outcome: 'skipped', message, runs };
  }
  const name = check.job.name as JobName;
  const queue = p.jobs.queueOf(name);
  // One id per schedule and tick: a tick run again enqueues nothing new (BullMQ ignores an id it has).
  const jobId = `${queue}-s${scheduleId}-${tickAt}`;
  if (row.owner_id !== null) await recordJobOwner(p.db, { jobId, ownerId: row.owner_id, queue, name });
  await p.jobs.enqueue(name, check.job.payload as never, { owner: row.owner_id, jobId, requestId: `schedule-${scheduleId}` });
  await store.finishTick(p.db, scheduleId, tickAt, { outcome: 'queued', message: note || null, jobId });
  return { outcome: 'queued', jobId, runs };
}
