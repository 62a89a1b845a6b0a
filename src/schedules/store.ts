// Knex queries of schedules and their runs.
import type { Db } from '../db.js';
import type { ScheduleRow } from './schema.js';

type Timing = { cron: string | null; tz: string | null; interval_ms: number | null };
export type NewSchedule = { owner_id: number; name: string; kind: string; params: Record<string, unknown>; enabled: boolean } & Timing;

/**
 * Inserts a user's schedule unless they have `max` already: counted and inserted under a lock on the user's row, so
 * concurrent creations cannot pass the limit together. undefined when at the limit.
 */
export async function insertSchedule(db: Db, input: NewSchedule, max: number): Promise<ScheduleRow | undefined> {
  return db.transaction(async (trx) => {
    await trx('users').where({ id: input.owner_id }).forUpdate().first('id');
    const [{ n }] = await trx('schedules').where({ owner_id: input.owner_id }).count<{ n: string }[]>({ n: '*' });
    if (Number(n) >= max) return undefined;
    const [row] = await trx<ScheduleRow>('schedules')
      .insert({ ...input, params: JSON.stringify(input.params) } as never)
      .returning('*');
    return row;
  });
}

/** The platform's schedule of this key, made with these values the first time (later starts leave an edited one as it is). */
export async function ensureSystemSchedule(db: Db, key: string, values: { name: string; kind: string } & Timing): Promise<void> {
  await db('schedules')
    .insert({ ...values, owner_id: null, system_key: key, params: '{}' })
    .onConflict('system_key')
    .ignore();
}

export const getSchedule = (db: Db, id: number) => db<ScheduleRow>('schedules').where({ id }).first();

/** A viewer's schedules, by id: their own, and the system ones for admins. */
export function listSchedules(db: Db, viewer: { id: number; admin: boolean }, page: { limit: number; after?: number }) {
  const q = db<ScheduleRow>('schedules').where((w) => {
    w.where('owner_id', viewer.id);
    if (viewer.admin) w.orWhereNull('owner_id');
  });
  if (page.after !== undefined) q.where('id', '>', page.after);
  return q.orderBy('id').limit(page.limit);
}

export const enabledSchedules = (db: Db) => db<ScheduleRow>('schedules').where({ enabled: true }).select('*');

export async function updateSchedule(db: Db, id: number, patch: Partial<Omit<ScheduleRow, 'id' | 'params'>> & { params?: Record<string, unknown> }) {
  const values: Record<string, unknown> = { ...patch, updated_at: db.fn.now() };
  if (patch.params) values.params = JSON.stringify(patch.params);
  const [row] = await db<ScheduleRow>('schedules').where({ id }).update(values).returning('*');
  return row as ScheduleRow | undefined;
}

export async function deleteSchedule(db: Db, id: number): Promise<boolean> {
  return ((await db('schedules').where({ id }).delete().returning('id')) as unknown[]).length > 0;
}

/**
 * Records a tick (one row per schedule and tick time): a tick run again (its worker died before BullMQ recorded it)
 * counts up `runs`. Returns the row's runs and the previous tick's time, if any.
 */
export async function recordTick(db: Db, scheduleId: number, tickAt: number): Promise<{ runs: number; previous: number | null }> {
  const [row] = await db('schedule_runs')
    .insert({ schedule_id: scheduleId, tick_at: tickAt, outcome: 'started' })
    .onConflict(['schedule_id', 'tick_at'])
    .merge({ runs: db.raw('schedule_runs.runs + 1') })
    .returning('runs');
  const prev = await db('schedule_runs').where({ schedule_id: scheduleId }).where('tick_at', '<', tickAt).max<{ t: string | null }[]>({ t: 'tick_at' });
  return { runs: Number((row as { runs: number }).runs), previous: prev[0]?.t == null ? null : Number(prev[0].t) };
}

/** What a tick did: on its run row and as the schedule's last run; `pause` also pauses the schedule, saying why. */
export async function finishTick(
  db: Db,
  scheduleId: number,
  tickAt: number,
  outcome: { outcome: string; message: string | null; jobId: string | null; pause?: string },
): Promise<void> {
  await db('schedule_runs')
    .where({ schedule_id: scheduleId, tick_at: tickAt })
    .update({ outcome: outcome.outcome, message: outcome.message, job_id: outcome.jobId });
  const values: Record<string, unknown> = {
    last_run_at: new Date(tickAt),
    last_outcome: outcome.outcome,
    last_message: outcome.message,
    last_job_id: outcome.jobId,
  };
  if (outcome.pause) Object.assign(values, { enabled: false, paused_reason: outcome.pause, updated_at: db.fn.now() });
  await db('schedules').where({ id: scheduleId }).update(values);
  // Runs are kept a week.
  await db('schedule_runs')
    .where({ schedule_id: scheduleId })
    .where('tick_at', '<', Date.now() - 7 * 86_400_000)
    .delete();
}

export const listRuns = (db: Db, scheduleId: number, limit: number) =>
  db('schedule_runs').where({ schedule_id: scheduleId }).orderBy('tick_at', 'desc').limit(limit).select('tick_at', 'outcome', 'message', 'job_id', 'runs');
