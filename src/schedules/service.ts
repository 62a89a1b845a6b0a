// Schedules' work: checking what a user schedules as if submitted now, the per-user limit, and the BullMQ job scheduler
// behind each enabled schedule (its tick job, signed once, comes back to src/schedules/tick.ts in a worker).
import type { JobsOptions } from 'bullmq';
import { ROLE, USER_STATUS } from '../accounts/schema.js';
import { getUser } from '../accounts/store.js';
import { AppError, conflict, notFound, serviceUnavailable, tooManyRequests } from '../errors.js';
import type { JobEnvelope } from '../jobs/wire.js';
import { schedulerSignedId, signEnvelope } from '../jobs/wire.js';
import { accountFor, viewerOf } from '../mail/accounts-service.js';
import type { Platform } from '../platform.js';
import { withTimeout } from '../timeout.js';
import * as s from './schema.js';
import * as store from './store.js';

/** The tick job's name (declared in jobs.ts, on the 'schedules' queue). */
export const TICK = 'schedules.tick';
export const TICK_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 },
  removeOnComplete: { age: 86_400, count: 10_000 },
  removeOnFail: { age: 7 * 86_400, count: 10_000 },
};
/** The scheduler of a schedule: one per enabled schedule, named by its id. */
export const schedulerId = (id: number) => `schedule-${id}`;
const idOfScheduler = (key: string) => (/^schedule-(\d+)$/.exec(key) ? Number(key.slice('schedule-'.length)) : undefined);

/** Who asks: their id and role. */
export interface Viewer {
  id: number;
  role: number;
}
export const viewerOfUser = (user: { id: number; role: number }): Viewer => ({ id: user.id, role: user.role });

const schedulesQueue = (p: Pick<Platform, 'jobs'>) => p.jobs.queues.get('schedules')!;
const REDIS_MS = 2_000;
const queueUnavailable = () => serviceUnavailable('Queue unavailable (Redis is not reachable), try again shortly', { code: 'queue_unavailable' });

async function inRedis<T>(work: Promise<T>): Promise<T> {
  try {
    return await withTimeout(work, REDIS_MS);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw queueUnavailable();
  }
}

/**
 * Creates or updates the schedule's job scheduler (idempotent: the same schedule upserted again keeps its next tick).
 * Its tick's envelope names the schedule and its owner, signed once for the scheduler (jobs/wire.ts schedulerSignedId).
 */
export async function upsertScheduler(p: Pick<Platform, 'jobs' | 'secrets'>, row: s.ScheduleRow): Promise<void> {
  const key = schedulerId(row.id);
  const data: JobEnvelope = { owner: row.owner_id, payload: { scheduleId: row.id } };
  signEnvelope(p.secrets, schedulerSignedId(key), TICK, data);
  const t = s.timingOf(row);
  const repeat = 'every' in t ? { every: t.every } : { pattern: t.cron, tz: t.tz };
  await inRedis(schedulesQueue(p).upsertJobScheduler(key, repeat, { name: TICK, data, opts: TICK_OPTIONS }));
}

export async function removeScheduler(p: Pick<Platform, 'jobs'>, id: number): Promise<void> {
  await inRedis(schedulesQueue(p).removeJobScheduler(schedulerId(id)));
}

/** The next run times: the scheduler's next tick (BullMQ's), then the rule's. None while paused. */
async function nextRuns(p: Pick<Platform, 'jobs'>, row: s.ScheduleRow, n = 3): Promise<number[]> {
  if (!row.enabled) return [];
  const t = s.timingOf(row);
  const scheduler = await withTimeout(schedulesQueue(p).getJobScheduler(schedulerId(row.id)), REDIS_MS).catch(() => undefined);
  const first = scheduler?.next ?? s.nextTimes(t, Date.now(), 1)[0];
  if (first === undefined) return [];
  return 'every' in t ? Array.from({ length: n }, (_, i) => first + i * t.every) : [first, ...s.nextTimes(t, first, n - 1)];
}

const view = async (p: Pick<Platform, 'jobs'>, row: s.ScheduleRow) => s.publicSchedule(row, await nextRuns(p, row));

/** The job a schedulable kind makes for `owner` now, checked as the API checks a request: its name and payload. */
export async function jobFor(p: Platform, owner: Viewer, kind: string, params: Record<string, unknown>): Promise<{ name: string; payload: unknown }> {
  let name: string;
  let payload: Record<string, unknown>;
  const checked = s.parseParams(kind, params);
  switch (kind) {
    case 'mail.fetch': {
      const account = await accountFor(p, viewerOf(owner), { email: checked.email as string });
      name = 'mail.fetch';
      payload = { accountId: account.id, mailbox: checked.mailbox, mode: checked.mode, limit: checked.limit, newest: false };
      break;
    }
    case 'mail.purge': {
      const account = await accountFor(p, viewerOf(owner), { email: checked.email as string });
      name = 'mail.purge';
      payload = { accountId: account.id, mailbox: checked.mailbox };
      break;
    }
    default:
      throw new AppError(400, `kind: ${kind} cannot be scheduled`, { code: 'invalid_request' });
  }
  // The job kind's own schema, as the worker will check it.
  const parsed = p.jobs.kind(name).payload.safeParse(payload);
  if (!parsed.success) throw new AppError(400, `params: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { code: 'invalid_request' });
  return { name, payload };
}

/**
 * Whether the owner may still run this schedule as they could submit it: still there, enabled, and what it names still
 * theirs. A reason when not (the tick then skips the run and pauses the schedule, saying it).
 */
export async function ownerCheck(p: Platform, row: s.ScheduleRow): Promise<{ job: { name: string; payload: unknown } } | { refused: string }> {
  const user = await getUser(p.db, row.owner_id!);
  if (!user) return { refused: 'Its owner no longer exists' };
  if (user.status !== USER_STATUS.enabled) return { refused: "Its owner's account is disabled" };
  try {
    return { job: await jobFor(p, viewerOfUser(user), row.kind, row.params) };
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return { refused: err.message };
    throw err;
  }
}

const isAdmin = (v: Viewer) => v.role >= ROLE.admin;

/** A schedule the viewer may see and change: their own; a system one for admins. Anyone else: 404. */
async function visible(p: Platform, viewer: Viewer, id: number): Promise<s.ScheduleRow> {
  const row = await store.getSchedule(p.db, id);
  if (!row || (row.owner_id === null ? !isAdmin(viewer) : row.owner_id !== viewer.id)) throw notFound('Schedule not found');
  return row;
}

export async function createSchedule(p: Platform, viewer: Viewer, input: s.CreateInput): Promise<s.ScheduleView> {
  const timing = s.checkTiming(input, p.config.SCHEDULE_MIN_INTERVAL_MS);
  const params = s.parseParams(input.kind, input.params);
  await jobFor(p, viewer, input.kind, params);
  const row = await store.insertSchedule(
    p.db,
    {
      owner_id: viewer.id,
      name: input.name,
      kind: input.kind,
      params,
      cron: 'cron' in timing ? timing.cron : null,
      tz: 'cron' in timing ? timing.tz : null,
      interval_ms: 'every' in timing ? timing.every : null,
      enabled: input.enabled,
    },
    p.config.SCHEDULES_PER_USER,
  );
  if (!row) throw tooManyRequests(`You have ${p.config.SCHEDULES_PER_USER} schedules already (SCHEDULES_PER_USER): delete one first`, 60);
  // After the row is committed (so a start-up re-sync that sees the scheduler also sees its row); a scheduler that
  // cannot be made takes its row back.
  if (row.enabled) {
    try {
      await upsertScheduler(p, row);
    } catch (err) {
      await store.deleteSchedule(p.db, row.id).catch(() => {});
      throw err;
    }
  }
  return view(p, row);
}

export async function listSchedules(p: Platform, viewer: Viewer, q: { limit: number; after?: number }) {
  const rows = await store.listSchedules(p.db, { id: viewer.id, admin: isAdmin(viewer) }, q);
  return Promise.all(rows.map((row) => view(p, row)));
}

export async function getSchedule(p: Platform, viewer: Viewer, id: number) {
  return view(p, await visible(p, viewer, id));
}

export async function listRuns(p: Platform, viewer: Viewer, id: number) {
  await visible(p, viewer, id);
  const rows = await store.listRuns(p.db, id, 100);
  return rows.map((r: { tick_at: string; outcome: string; message: string | null; job_id: string | null; runs: number }) => ({
    tick_at: new Date(Number(r.tick_at)).toISOString(),
    outcome: r.outcome,
    message: r.message,
    job_id: r.job_id,
    runs: r.runs,
  }));
}

/** Changes a schedule (a system one: its timing and whether it runs only); re-checked as at creation. */
export async function updateSchedule(p: Platform, viewer: Viewer, id: number, patch: s.UpdateInput): Promise<s.ScheduleView> {
  const row = await visible(p, viewer, id);
  if (row.owner_id === null && patch.params !== undefined) throw conflict('A system schedule has no parameters to change');
  const values: Parameters<typeof store.updateSchedule>[2] = {};
  if (patch.name !== undefined) values.name = patch.name;
  const timingChanged = patch.cron !== undefined || patch.tz !== undefined || patch.interval_ms !== undefined;
  if (timingChanged) {
    const merged = {
      cron: patch.cron !== undefined ? patch.cron : patch.interval_ms ? null : row.cron,
      tz: patch.tz !== undefined ? patch.tz : patch.interval_ms ? null : row.tz,
      interval_ms: patch.interval_ms !== undefined ? patch.interval_ms : patch.cron ? null : row.interval_ms === null ? null : Number(row.interval_ms),
    };
    const t = s.checkTiming(merged, p.config.SCHEDULE_MIN_INTERVAL_MS);
    Object.assign(values, 'cron' in t ? { cron: t.cron, tz: t.tz, interval_ms: null } : { cron: null, tz: null, interval_ms: t.every });
  }
  const enabled = patch.enabled ?? row.enabled;
  const params = patch.params !== undefined ? s.parseParams(row.kind, patch.params) : row.params;
  // Resumed or changed: checked as if submitted now (the account still theirs).
  if (row.owner_id !== null && enabled && (patch.params !== undefined || (patch.enabled && !row.enabled))) await jobFor(p, viewer, row.kind, params);
  if (patch.params !== undefined) values.params = params;
  if (patch.enabled !== undefined) {
    values.enabled = patch.enabled;
    if (patch.enabled) values.paused_reason = null;
  }
  const updated = (await store.updateSchedule(p.db, id, values)) ?? row;
  if (updated.enabled) await upsertScheduler(p, updated);
  else await removeScheduler(p, id);
  return view(p, updated);
}

export async function deleteSchedule(p: Platform, viewer: Viewer, id: number): Promise<void> {
  const row = await visible(p, viewer, id);
  if (row.owner_id === null) throw conflict('A system schedule cannot be deleted: pause it (PATCH enabled: false)');
  await store.deleteSchedule(p.db, id);
  // A tick already queued finds no row and does nothing.
  await removeScheduler(p, id).catch((err) => p.log.warn({ err, schedule: id }, 'could not remove a deleted schedule’s scheduler'));
}

/** The platform's own schedules (housekeeping that used to start as a side effect of starting the API). */
export const SYSTEM_SCHEDULES = [
  { key: 'logs.maintain', name: 'Log partitions, retention and the job index', kind: 'logs.maintain', every: 3_600_000 },
  { key: 'files.expire', name: "Expired files (the Batch API's uploads and results)", kind: 'files.expire', every: 3_600_000 },
] as const;

/**
 * At API start: the system schedules exist, every enabled schedule has its scheduler (upsert is idempotent: many API
 * processes starting at once agree), and schedulers without an enabled schedule go. Schedulers are read before the rows,
 * so one made for a schedule created meanwhile (made after its row was committed) has a row to be found.
 */
export async function syncSchedulers(p: Platform): Promise<{ upserted: number; removed: number }> {
  for (const sys of SYSTEM_SCHEDULES)
    await store.ensureSystemSchedule(p.db, sys.key, { name: sys.name, kind: sys.kind, cron: null, tz: null, interval_ms: sys.every });
  const schedulers = await schedulesQueue(p).getJobSchedulers(0, -1);
  const rows = await store.enabledSchedules(p.db);
  const enabled = new Set(rows.map((r) => r.id));
  let removed = 0;
  for (const sch of schedulers) {
    const id = idOfScheduler(sch.key);
    if (id === undefined || !enabled.has(id)) removed += Number(await schedulesQueue(p).removeJobScheduler(sch.key));
  }
  for (const row of rows) await upsertScheduler(p, row);
  return { upserted: rows.length, removed };
}

/**
 * Every enabled schedule whose scheduler is gone, or whose next tick's job is (a Redis failover that lost the last
 * writes, a key deleted by hand), is upserted again: its ticks resume, and the next one says how many did not run.
 */
export async function repairSchedulers(p: Platform): Promise<number> {
  const queue = schedulesQueue(p);
  let repaired = 0;
  for (const row of await store.enabledSchedules(p.db)) {
    const key = schedulerId(row.id);
    const scheduler = await queue.getJobScheduler(key);
    const next = scheduler?.next;
    if (next != null && (await queue.getJob(`repeat:${key}:${next}`))) continue;
    await upsertScheduler(p, row);
    repaired++;
  }
  return repaired;
}

/** How often (± 25 %) each API process looks for schedules whose next tick was lost. */
export const REPAIR_INTERVAL_MS = 60_000;
const synced = new WeakSet<object>();

/**
 * Once per platform of an API process: syncSchedulers in the background (logged; a failure is retried at next start),
 * then repairSchedulers every REPAIR_INTERVAL_MS.
 */
export function startSchedules(p: Platform): void {
  if (synced.has(p)) return;
  synced.add(p);
  syncSchedulers(p).then(
    (r) => p.log.info(r, 'schedules synced with their job schedulers'),
    (err) => p.log.warn({ err }, 'could not sync schedules with their job schedulers; retried at the next start'),
  );
  const repair = () => {
    const timer = setTimeout(
      async () => {
        try {
          const repaired = await repairSchedulers(p);
          if (repaired) p.log.warn({ repaired }, 'schedules whose next tick was lost were scheduled again');
        } catch (err) {
          p.log.debug({ err }, 'schedule repair failed; tried again later');
        }
        repair();
      },
      REPAIR_INTERVAL_MS * (0.75 + Math.random() / 2),
    );
    timer.unref();
  };
  repair();
}
