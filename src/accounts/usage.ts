// Request counters for calls that cost nothing: gathered in memory and written once a second, not per call; and
// their consume rows, aggregated per (user, key, model, minute) and written once that minute is over.
import type { Db } from '../db.js';
import type { Logger } from '../log.js';
import type { LogEntry } from '../logs/schema.js';
import { insertLogs } from '../logs/store.js';

/** The calls of one (user, key, model) in one minute, as the one row they become. */
interface Aggregate {
  minute: number;
  entry: LogEntry;
  calls: number;
  promptTokens: number;
  elapsedMs: number;
  lastAt: number;
}

export class UsageRecorder {
  private requests = new Map<number, number>();
  private tokens = new Set<number>();
  private aggregates = new Map<string, Aggregate>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  /**
   * Counts a free call. Its consume row (`consume`), if given, joins the row of its (user, key,
   * model, minute): one row per minute, whose request_count says how many calls it stands for.
   */
  record(userId: number, tokenId: number | null, consume?: LogEntry): void {
    this.requests.set(userId, (this.requests.get(userId) ?? 0) + 1);
    if (tokenId !== null) this.tokens.add(tokenId);
    if (consume) this.aggregate(consume);
    this.timer ??= setTimeout(() => void this.flushDue(), this.intervalMs);
  }

  private aggregate(e: LogEntry) {
    const at = e.createdAt ?? Math.floor(Date.now() / 1000);
    const minute = Math.floor(at / 60);
    const key = `${e.userId}\u0000${e.tokenId ?? ''}\u0000${e.modelName ?? ''}\u0000${minute}`;
    const a = this.aggregates.get(key);
    if (a) {
      a.calls++;
      a.promptTokens += e.promptTokens ?? 0;
      a.elapsedMs += e.elapsedMs ?? 0;
      a.lastAt = Math.max(a.lastAt, at);
    } else this.aggregates.set(key, { minute, entry: e, calls: 1, promptTokens: e.promptTokens ?? 0, elapsedMs: e.elapsedMs ?? 0, lastAt: at });
  }

  /** The timer's flush: counters now, rows of the minutes that are over. */
  private flushDue(): Promise<void> {
    return this.flushWhere((a) => a.minute < Math.floor(Date.now() / 60_000));
  }

  /** Writes everything gathered (the platform closing). */
  flush(): Promise<void> {
    return this.flushWhere(() => true);
  }

  private async flushWhere(due: (a: Aggregate) => boolean): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    const rows: LogEntry[] = [];
    for (const [key, a] of this.aggregates) {
      if (!due(a)) continue;
      this.aggregates.delete(key);
      rows.push({
        ...a.entry,
        requestCount: a.calls,
        promptTokens: a.promptTokens,
        elapsedMs: a.elapsedMs / a.calls,
        createdAt: a.lastAt,
        requestId: a.calls === 1 ? a.entry.requestId : null,
        content:
          a.calls === 1
            ? a.entry.content
            : `${a.entry.modelName}: ${a.calls} free calls in the minute from ${new Date(a.minute * 60_000).toISOString().slice(11, 16)} UTC, ${a.promptTokens} tokens`,
      });
    }
    // Rows of the current minute wait for it to end.
    if (this.aggregates.size) this.timer ??= setTimeout(() => void this.flushDue(), this.intervalMs);
    if (this.requests.size === 0 && this.tokens.size === 0 && rows.length === 0) return;
    const requests = this.requests;
    const tokens = [...this.tokens];
    this.requests = new Map();
    this.tokens = new Set();
    this.flushing = (async () => {
      try {
        // Each statement locks its rows in the quota ledger's order (users by id; keys by user, then id), so
        // it never waits in a cycle with a ledger batch, which locks a user and then that user's keys.
        if (requests.size) {
          const sorted = [...requests].sort((a, b) => a[0] - b[0]);
          const values = sorted.map(() => '(?::int, ?::bigint)').join(', ');
          await this.db.raw(
            `with locked as (select id from users where id in (${sorted.map(() => '?').join(', ')}) order by id for update)
             update users set request_count = users.request_count + v.n from (values ${values}) as v(id, n), locked
             where users.id = v.id and locked.id = v.id`,
            [...sorted.map(([id]) => id), ...sorted.flat()],
          );
        }
        if (tokens.length)
          await this.db.raw(
            `with locked as (select id from tokens where id in (${tokens.map(() => '?').join(', ')}) order by user_id, id for update)
             update tokens set accessed_time = ? from locked where tokens.id = locked.id`,
            [...tokens, Math.floor(Date.now() / 1000)],
          );
        await insertLogs(this.db, rows);
      } catch (err) {
        // Counters and free calls' rows are best effort: a lost minute of them must never fail a request (nothing was charged).
        this.log.warn({ err }, 'could not write request counters or free-call log rows');
      }
    })();
    await this.flushing;
  }
}
