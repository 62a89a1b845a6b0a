// The log table's day partitions: names and bounds (UTC days of created_at, Unix seconds). Pure, so migrations share it.

export const DAY_SECONDS = 86_400;
/** Partitions are kept ready this many days ahead, so a row never waits for one to exist. */
export const DAYS_AHEAD = 7;
const NAME = /^logs_p(\d{4})(\d{2})(\d{2})$/;

/** The UTC day (its first second) that a Unix time falls in. */
export const dayStart = (seconds: number): number => Math.floor(seconds / DAY_SECONDS) * DAY_SECONDS;

/** `logs_pYYYYMMDD`: the partition that holds created_at in [day, day + 1 day). */
export function partitionName(day: number): string {
  return `logs_p${new Date(day * 1000).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The first second of the day a partition name stands for; undefined for any other table name. */
export function partitionDay(name: string): number | undefined {
  const m = NAME.exec(name);
  if (!m) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

/** The days from `from` to `to` (Unix seconds, both included), as day starts. */
export function daysBetween(from: number, to: number): number[] {
  const out: number[] = [];
  for (let d = dayStart(from); d <= dayStart(to); d += DAY_SECONDS) out.push(d);
  return out;
}

/** DDL of one day partition (names and bounds are ours, never user input). */
export const createPartitionSql = (day: number): string =>
  `create table if not exists ${partitionName(day)} partition of logs for values from (${day}) to (${day + DAY_SECONDS})`;
