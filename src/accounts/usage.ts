// Request counters for calls that cost nothing: gathered in memory and written once a second, not per call.
import type { Db } from '../db.js';
import type { Logger } from '../log.js';

export class UsageRecorder {
  private requests = new Map<number, number>();
  private tokens = new Set<number>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  record(userId: number, tokenId: number | null): void {
    this.requests.set(userId, (this.requests.get(userId) ?? 0) + 1);
    if (tokenId !== null) this.tokens.add(tokenId);
    this.timer ??= setTimeout(() => void this.flush(), this.intervalMs);
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    if (this.requests.size === 0 && this.tokens.size === 0) return;
    const requests = this.requests;
    const tokens = [...this.tokens];
    this.requests = new Map();
    this.tokens = new Set();
    this.flushing = (async () => {
      try {
        if (requests.size) {
          const values = [...requests].map(() => '(?::int, ?::bigint)').join(', ');
          await this.db.raw(
            `update users set request_count = users.request_count + v.n from (values ${values}) as v(id, n) where users.id = v.id`,
            [...requests].flat(),
          );
        }
        if (tokens.length)
          await this.db('tokens')
            .whereIn('id', tokens)
            .update({ accessed_time: Math.floor(Date.now() / 1000) });
      } catch (err) {
        // Counters are best effort: a lost second of counts must never fail a request.
        this.log.warn({ err }, 'could not write request counters');
      }
    })();
    await this.flushing;
  }
}
