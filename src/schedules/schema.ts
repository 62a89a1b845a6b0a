// Schedules: what a user asks to run (a schedulable kind and its parameters), when (a cron expression in a time zone,
// or an interval), the stored row and the view the API shows.
import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { emailAddress, mailboxName } from '../mail/schema.js';

/**
 * What a user may schedule: anything they could submit through the API, in the shape they would submit it (an account
 * by its address, not its id), turned into the job's payload at each tick as the API would for a request then.
 * `mail.send` is not schedulable: its message (bodies) would sit in a plain row for as long as the schedule lives.
 */
export const userKinds = {
  'mail.fetch': z.object({
    email: emailAddress,
    mailbox: mailboxName.default('INBOX'),
    limit: z.number().int().min(1).max(500).default(50),
    mode: z.enum(['live', 'fast']).default('fast'),
  }),
  'mail.purge': z.object({ email: emailAddress, mailbox: mailboxName }),
} as const;
export type UserKind = keyof typeof userKinds;
export const USER_KINDS = Object.keys(userKinds) as UserKind[];

/** The platform's own schedules (housekeeping), one row each, admins only; their job runs as no one. */
export const SYSTEM_KINDS = ['logs.maintain', 'files.expire'] as const;
export type SystemKind = (typeof SYSTEM_KINDS)[number];

const name = z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters');
const cron = z.string().trim().min(1).max(120, 'must be at most 120 characters');
const tz = z.string().trim().min(1).max(64);
const intervalMs = z
  .number({ error: 'must be a number of milliseconds' })
  .int()
  .positive()
  .max(366 * 86_400_000);

export const createBody = z.object({
  name,
  kind: z.enum(USER_KINDS as [UserKind, ...UserKind[]], { error: `must be one of ${USER_KINDS.join(', ')}` }),
  params: z.record(z.string(), z.unknown()).default({}),
  cron: cron.optional(),
  tz: tz.optional(),
  interval_ms: intervalMs.optional(),
  enabled: z.boolean().default(true),
});
export type CreateInput = z.output<typeof createBody>;

export const updateBody = z.object({
  name: name.optional(),
  params: z.record(z.string(), z.unknown()).optional(),
  cron: cron.nullable().optional(),
  tz: tz.nullable().optional(),
  interval_ms: intervalMs.nullable().optional(),
  enabled: z.boolean().optional(),
});
export type UpdateInput = z.output<typeof updateBody>;

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  /** The last id of the previous page. */
  after: z.coerce.number().int().min(0).optional(),
});

/** When a schedule runs: a cron expression in a time zone (UTC by default), or every interval_ms. */
export type Timing = { cron: string; tz: string } | { every: number };

export interface ScheduleRow {
  id: number;
  owner_id: number | null;
  system_key: string | null;
  name: string;
  kind: string;
  params: Record<string, unknown>;
  cron: string | null;
  tz: string | null;
  interval_ms: string | number | null;
  enabled: boolean;
  paused_reason: string | null;
  last_run_at: Date | null;
  last_outcome: string | null;
  last_message: string | null;
  last_job_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export const timingOf = (row: Pick<ScheduleRow, 'cron' | 'tz' | 'interval_ms'>): Timing =>
  row.cron ? { cron: row.cron, tz: row.tz ?? 'UTC' } : { every: Number(row.interval_ms) };

/** A time zone the runtime knows (IANA names: Europe/Berlin, Asia/Shanghai, UTC). */
function checkTimeZone(zone: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
  } catch {
    throw badRequest(`tz: unknown time zone "${zone}" (an IANA name such as UTC or Europe/Berlin)`);
  }
}

/** The next `n` run times after `from` (ms), by the rule alone. */
export function nextTimes(timing: Timing, from: number, n: number): number[] {
  // BullMQ's job schedulers run `every` apart from the previous tick.
  if ('every' in timing) return Array.from({ length: n }, (_, i) => from + (i + 1) * timing.every);
  const it = CronExpressionParser.parse(timing.cron, { tz: timing.tz, currentDate: new Date(from) });
  const out: number[] = [];
  for (let i = 0; i < n && it.hasNext(); i++) out.push(it.next().getTime());
  return out;
}

/**
 * A timing as given (exactly one of cron or interval_ms; tz only with cron), checked: a cron expression cron-parser
 * (which BullMQ uses) reads, in a known time zone, and neither firing more often than `minIntervalMs`.
 */
export function checkTiming(t: { cron?: string | null; tz?: string | null; interval_ms?: number | null }, minIntervalMs: number): Timing {
  if (t.cron && t.interval_ms) throw badRequest('Give either cron (with tz) or interval_ms, not both');
  if (!t.cron && !t.interval_ms) throw badRequest('Give cron (with tz) or interval_ms');
  if (t.interval_ms) {
    if (t.tz) throw badRequest('tz goes with cron, not with interval_ms');
    if (t.interval_ms < minIntervalMs) throw badRequest(`interval_ms: must be at least ${minIntervalMs} (SCHEDULE_MIN_INTERVAL_MS)`);
    return { every: t.interval_ms };
  }
  const zone = t.tz ?? 'UTC';
  checkTimeZone(zone);
  const timing = { cron: t.cron!, tz: zone };
  let times: number[];
  try {
    times = nextTimes(timing, Date.now(), 6);
  } catch (err) {
    throw badRequest(`cron: not a valid cron expression (${(err as Error).message.slice(0, 200)})`);
  }
  if (times.length === 0) throw badRequest('cron: this expression never fires');
  for (let i = 1; i < times.length; i++)
    if (times[i]! - times[i - 1]! < minIntervalMs) throw badRequest(`cron: fires more often than every ${minIntervalMs} ms (SCHEDULE_MIN_INTERVAL_MS)`);
  return timing;
}

/** The user-facing parameters of a kind, checked (defaults filled in). */
export function parseParams(kind: string, params: unknown): Record<string, unknown> {
  const schema = Object.hasOwn(userKinds, kind) ? userKinds[kind as UserKind] : undefined;
  if (!schema) return {};
  const parsed = schema.safeParse(params);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw badRequest(`params.${issue.path.join('.') || '?'}: ${issue.message}`);
  }
  return parsed.data;
}

export const scheduleView = z.object({
  id: z.number(),
  name: z.string(),
  kind: z.string(),
  params: z.record(z.string(), z.unknown()),
  /** null for a system schedule. */
  owner_id: z.number().nullable(),
  system: z.boolean(),
  cron: z.string().nullable(),
  tz: z.string().nullable(),
  interval_ms: z.number().nullable(),
  enabled: z.boolean(),
  paused_reason: z.string().nullable(),
  /** The next run times (ISO 8601), empty while paused. */
  next_runs: z.array(z.string()),
  last_run_at: z.string().nullable(),
  last_outcome: z.string().nullable(),
  last_message: z.string().nullable(),
  last_job_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ScheduleView = z.infer<typeof scheduleView>;

export const runView = z.object({
  tick_at: z.string(),
  outcome: z.string(),
  message: z.string().nullable(),
  job_id: z.string().nullable(),
  runs: z.number(),
});

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function publicSchedule(row: ScheduleRow, next: number[]): ScheduleView {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    params: row.params,
    owner_id: row.owner_id,
    system: row.owner_id === null,
    cron: row.cron,
    tz: row.cron ? (row.tz ?? 'UTC') : null,
    interval_ms: row.interval_ms === null ? null : Number(row.interval_ms),
    enabled: row.enabled,
    paused_reason: row.paused_reason,
    next_runs: next.map((t) => new Date(t).toISOString()),
    last_run_at: iso(row.last_run_at),
    last_outcome: row.last_outcome,
    last_message: row.last_message,
    last_job_id: row.last_job_id,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}
