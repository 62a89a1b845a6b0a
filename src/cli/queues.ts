// Queues from the command line: their depth per state, draining what waits, cleaning what ended; and the status
// (GET /api/status's fields, what /readyz checks, and the queues' depths).
import type { Queue } from 'bullmq';
import { type QueueName, queueNames } from '../config.js';
import { status as apiStatus } from '../logs/service.js';
import type { Platform } from '../platform.js';
import { readiness } from '../readiness.js';
import { CliError } from './context.js';

export const STATES = ['waiting', 'prioritized', 'delayed', 'waiting-children', 'active', 'completed', 'failed'] as const;
type Counts = Record<(typeof STATES)[number], number>;

/** Every queue's jobs by state. */
export async function queueDepths(p: Platform): Promise<Record<QueueName, Counts>> {
  const out = {} as Record<QueueName, Counts>;
  for (const name of queueNames) {
    const counts = await p.jobs.queues.get(name)!.getJobCounts(...STATES);
    out[name] = Object.fromEntries(STATES.map((s) => [s, counts[s] ?? 0])) as Counts;
  }
  return out;
}

/** `all`, or one queue's name: the queues a command acts on. */
export function pickQueues(p: Platform, which: string | undefined): Queue[] {
  if (!which) throw new CliError(`name a queue (${queueNames.join(', ')}) or all`, 2);
  if (which === 'all') return queueNames.map((n) => p.jobs.queues.get(n)!);
  const queue = p.jobs.queues.get(which as QueueName);
  if (!queue) throw new CliError(`"${which}" is not a queue (${queueNames.join(', ')}, or all)`, 2);
  return [queue];
}

const WAITING = ['waiting', 'prioritized', 'delayed'] as const;

/** How many jobs wait in each queue (not running, not ended), but each job scheduler's next run: what drain removes. */
export async function waitingJobs(queues: Queue[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const q of queues) {
    const counts = await q.getJobCounts(...WAITING);
    const nextRuns = Math.min(counts.delayed ?? 0, await q.getJobSchedulersCount());
    out[q.name] = WAITING.reduce((n, s) => n + (counts[s] ?? 0), 0) - nextRuns;
  }
  return out;
}

/**
 * Removes every job that waits (waiting, prioritized, delayed); running jobs finish, ended ones stay. A
 * schedule's next tick stays (BullMQ keeps a job scheduler's own delayed job). Returns how many went, by queue.
 */
export async function drainQueues(queues: Queue[]): Promise<Record<string, number>> {
  const before = await waitingJobs(queues);
  for (const q of queues) await q.drain(true);
  const after = await waitingJobs(queues);
  return Object.fromEntries(queues.map((q) => [q.name, Math.max(0, before[q.name]! - after[q.name]!)]));
}

/** Removes ended jobs (completed, failed or both) that ended more than `graceMs` ago. Returns how many went, by queue. */
export async function cleanQueues(queues: Queue[], states: readonly ('completed' | 'failed')[], graceMs: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const q of queues) {
    out[q.name] = 0;
    // In pieces: one call removing a million jobs would hold Redis for seconds.
    for (const state of states) {
      for (;;) {
        const gone = (await q.clean(graceMs, 10_000, state)).length;
        out[q.name] += gone;
        if (gone === 0) break;
      }
    }
  }
  return out;
}

/** What GET /api/status says (but its start_time, which is the process's own), /readyz's checks, and the queues' depths. */
export async function statusReport(p: Platform) {
  const { start_time: _perProcess, ...status } = apiStatus(p.config);
  return { ...status, readiness: await readiness(p), queues: await queueDepths(p) };
}

/** "1h", "30m", "45s", "2d", or milliseconds. */
export function parseDuration(text: string | undefined, fallbackMs: number): number {
  if (text === undefined) return fallbackMs;
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new CliError(`--older-than: "${text}" is not a duration (like 90s, 30m, 12h, 7d)`, 2);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 'ms') as 'ms'];
  return Number(m[1]) * unit;
}
