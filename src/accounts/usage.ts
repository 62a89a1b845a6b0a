// Calls that cost nothing: the first few of each (user, key, model) in a minute get a consume row each, written with
// their request count before they are answered; past that, their rows are aggregated per (user, key, model, minute)
// and written once that minute is over, and their request counters gathered in memory and written once a second.
import type { Db } from '../db.js';
import type { Logger } from '../log.js';
import type { LogEntry } from '../logs/schema.js';
import { insertLogs, logRecord } from '../logs/store.js';

/** After an inline row failed, how long free calls skip the inline write (and so never wait on a database that is away). */
const INLINE_PAUSE_MS = 10_000;

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
  /** Until when inline rows are not tried (epoch ms): one failed (Postgres away), so calls are not kept waiting on it. */
  private inlineOffUntil = 0;
  /** Calls given a row of their own, per (user, key, model), in the minute they were counted in. */
  private ownRows = new Map<string, { minute: number; n: number }>();
  private rowsMinute = 0;
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    /** Calls of one (user, key, model) a minute that get a row each (FREE_CALL_ROWS_PER_MINUTE); 0: all aggregated. */
    private readonly rowsPerMinute = 60,
    private readonly intervalMs = 1_000,
  ) {}

  /**
   * Counts a free call and logs it (`consume`). One of the first `rowsPerMinute` of its (user, key, model) this minute
   * is written at once, its row and the user's request count in one statement (resolved when written; a failure is
   * logged and the call joins the aggregate instead, never failing the call: nothing was charged). Later ones join
   * the row of their (user, key, model, minute), whose request_count says how many calls it stands for.
   */
  async record(userId: number, tokenId: number | null, consume?: LogEntry): Promise<void> {
    if (tokenId !== null) this.tokens.add(tokenId);
    if (consume && Date.now() >= this.inlineOffUntil && this.ownRow(consume)) {
      try {
        await this.writeOwnRow(consume);
        this.armTimer();
        return;
      } catch (err) {
        // For the next INLINE_PAUSE_MS every free call joins its aggregate at once (written when Postgres is back).
        this.inlineOffUntil = Date.now() + INLINE_PAUSE_MS;
        this.log.warn({ err }, "could not write a free call's log row; it joins its minute's aggregate, as the next calls' will for 10 s");
      }
    }
    this.requests.set(userId, (this.requests.get(userId) ?? 0) + 1);
    if (consume) this.aggregate(consume);
    this.armTimer();
  }

  private armTimer() {
    this.timer ??= setTimeout(() => void this.flushDue(), this.intervalMs);
  }

  /** Whether this call is one of the first rowsPerMinute of its (user, key, model) this minute (and counts it). */
  private ownRow(e: LogEntry): boolean {
    if (this.rowsPerMinute <= 0) return false;
    const minute = Math.floor((e.createdAt ?? Date.now() / 1000) / 60);
    if (minute > this.rowsMinute) {
      // A new minute: forget the counts of those before the last (a late call of the last one may still come).
      this.rowsMinute = minute;
      for (const [k, c] of this.ownRows) if (c.minute < minute - 1) this.ownRows.delete(k);
    }
    const key = `${e.userId}\u0000${e.tokenId ?? ''}\u0000${e.modelName ?? ''}`;
    let count = this.ownRows.get(key);
    if (!count || count.minute < minute) this.ownRows.set(key, (count = { minute, n: 0 }));
    if (count.minute > minute || count.n >= this.rowsPerMinute) return false;
    count.n++;
    return true;
  }

  /** The call's row and the user's request count, in one statement (it locks only the user's row, as a charge does first). */
  private async writeOwnRow(e: LogEntry): Promise<void> {
    const row = logRecord(e);
    const columns = Object.keys(row) as (keyof typeof row)[];
    const values = columns.map((c) => (c === 'username' ? 'coalesce(?, (select username from counted))' : '?'));
    await this.db.raw(
      `with counted as (update users set request_count = request_count + 1 where id = ? returning username)
       insert into logs (${columns.join(', ')}) values (${values.join(', ')})`,
      [e.userId, ...columns.map((c) => row[c])],
    );
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
    if (this.aggregates.size) this.armTimer();
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
