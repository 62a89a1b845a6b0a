// What keeps the log table in shape: day partitions made ahead, retention, the job index pruned (once when an API
// process starts, then hourly by the system schedule logs.maintain, run by a worker: src/logs/jobs.ts); and the system
// rows for Redis and Postgres outages this API process saw.
import os from 'node:os';
import type { Platform } from '../platform.js';
import { withTimeout } from '../timeout.js';
import { systemEntry } from './entries.js';
import { pruneJobOwners } from './job-owners.js';
import { dropExpiredPartitions, ensurePartitions, insertLogs } from './store.js';

const PROBE_MS = 2_000;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const since = (s: number) => new Date(s * 1000).toISOString();

export class LogMaintenance {
  private probe?: NodeJS.Timeout;
  private stopped = false;
  private redisDownSince?: number;
  private pgDownSince?: number;
  private readonly me = `${os.hostname()} pid ${process.pid}`;

  constructor(private readonly p: Pick<Platform, 'config' | 'db' | 'redis' | 'log'>) {}

  /**
   * Runs the upkeep now (today's partition must exist before this process writes a log row), and starts watching Redis
   * and Postgres. Hourly upkeep is the system schedule logs.maintain's (GET /api/schedules, admins).
   */
  start(): void {
    void this.run();
    const redis = this.p.redis;
    redis.on('close', () => {
      if (!this.stopped) this.redisDownSince ??= nowSeconds();
    });
    redis.on('ready', () => void this.redisBack());
    // quit() (the platform closing) ends the connection for good: so ends this watch.
    redis.once('end', () => this.stop());
    this.probe = setInterval(() => void this.probePostgres(), PROBE_MS).unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.probe);
  }

  /** The upkeep (maintainLogs) once; a failure is logged, and the hourly schedule tries again. */
  async run(now = nowSeconds()): Promise<void> {
    if (this.stopped) return;
    try {
      await maintainLogs(this.p, now);
    } catch (err) {
      if (!this.stopped) this.p.log.warn({ err }, 'log maintenance failed; retried within the hour');
    }
  }

  private async redisBack() {
    const down = this.redisDownSince;
    if (down === undefined || this.stopped) return;
    this.redisDownSince = undefined;
    await this.outage('Redis', down);
  }

  private async probePostgres() {
    if (this.stopped) return;
    try {
      await withTimeout(this.p.db.raw('select 1'), PROBE_MS);
    } catch {
      this.pgDownSince ??= nowSeconds();
      return;
    }
    const down = this.pgDownSince;
    if (down === undefined) return;
    this.pgDownSince = undefined;
    await this.outage('Postgres', down);
  }

  /** Both rows are written once the outage is over (Postgres may have been the one down): the first dated when it began. */
  private async outage(what: string, down: number) {
    const now = nowSeconds();
    try {
      await insertLogs(this.p.db, [
        systemEntry(`${what} unreachable from ${this.me} since ${since(down)}`, { createdAt: down }),
        systemEntry(`${what} reachable again from ${this.me} after ${Math.max(0, now - down)} s`, { createdAt: now }),
      ]);
    } catch (err) {
      this.p.log.warn({ err }, `could not log the ${what} outage`);
    }
  }
}

/** Partitions for yesterday to a week ahead, retention, and the job index's old rows (cheap when there is nothing to do). */
export async function maintainLogs(p: Pick<Platform, 'config' | 'db' | 'log'>, now = nowSeconds()): Promise<{ created: string[]; dropped: string[] }> {
  const { db, config, log } = p;
  const created = await ensurePartitions(db, now);
  const dropped = await dropExpiredPartitions(db, config.LOG_RETENTION_DAYS, now);
  if (created.length || dropped.length) log.info({ created, dropped }, 'log partitions maintained');
  // Past the longest a job is kept, its owner row points at nothing.
  await pruneJobOwners(db, Math.max(config.JOB_KEEP_COMPLETED_SECONDS, config.JOB_KEEP_FAILED_SECONDS) + 86_400);
  return { created, dropped };
}

const running = new WeakMap<object, LogMaintenance>();

/** One maintenance per platform, however many times its routers are built. */
export function startLogMaintenance(p: Pick<Platform, 'config' | 'db' | 'redis' | 'log'>): LogMaintenance {
  let m = running.get(p);
  if (!m) {
    m = new LogMaintenance(p);
    running.set(p, m);
    m.start();
  }
  return m;
}
