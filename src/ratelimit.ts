// Attempt limits per key in fixed windows (login throttling), counted in Redis with an in-process fallback.
import type { Redis } from './redis.js';

// KEYS[1] a counter. Takes one attempt back only while its window lasts: a DECR after the key expired would make a
// new key at -1 with no TTL, and the next window would start below zero and never end.
const GIVE_BACK = `
if (tonumber(redis.call('GET', KEYS[1])) or 0) > 0 then return redis.call('DECR', KEYS[1]) end
return 0`;

/** One key's count after an attempt, and the seconds until its window ends. */
export interface Counted {
  count: number;
  ttl: number;
}

/**
 * Counts every attempt before it is checked, atomically (INCR), so parallel attempts cannot all
 * slip under a limit: the (max+1)th concurrent attempt sees a count over max even while the first
 * ones are still being verified. A successful attempt is taken back (`succeeded`), so in effect
 * failures count. What the counts mean (which limit, refused or not) is the caller's.
 */
export class AttemptLimiter {
  private readonly local = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly redis: Redis,
    /** The Redis key of a limited key (see RedisKeys.of: on a cluster each lands in its own slot). */
    private readonly k: (key: string) => string,
    readonly windowSeconds: number,
  ) {}

  /** Counts one attempt against every key; each key's window starts at its first attempt. */
  async attempt(keys: string[]): Promise<Counted[]> {
    try {
      // One transaction per key: on a Redis Cluster the keys live in different slots, and a
      // transaction may only touch one.
      return await Promise.all(
        keys.map(async (key) => {
          const replies = (await this.redis.multi().incr(this.k(key)).expire(this.k(key), this.windowSeconds, 'NX').ttl(this.k(key)).exec()) ?? [];
          for (const [err] of replies) if (err) throw err;
          const ttl = Number(replies[2]?.[1] ?? 0);
          return { count: Number(replies[0]?.[1] ?? 0), ttl: ttl > 0 ? ttl : this.windowSeconds };
        }),
      );
    } catch {
      return this.localAttempt(keys);
    }
  }

  /** The attempt succeeded: it no longer counts against `giveBack`, and `clear` starts afresh. */
  async succeeded(giveBack: string[], clear: string[]): Promise<void> {
    for (const key of giveBack) {
      const e = this.local.get(key);
      if (e) e.count = Math.max(0, e.count - 1);
    }
    for (const key of clear) this.local.delete(key);
    try {
      // Key by key: on a Redis Cluster they live in different slots.
      await Promise.all([...giveBack.map((key) => this.redis.eval(GIVE_BACK, 1, this.k(key))), ...clear.map((key) => this.redis.del(this.k(key)))]);
    } catch {
      // Redis is away: its counters lapse with their window anyway.
    }
  }

  private localAttempt(keys: string[]): Counted[] {
    const now = Date.now();
    return keys.map((key) => {
      let e = this.local.get(key);
      if (!e || e.resetAt <= now) this.local.set(key, (e = { count: 0, resetAt: now + this.windowSeconds * 1000 }));
      e.count++;
      return { count: e.count, ttl: Math.ceil((e.resetAt - now) / 1000) };
    });
  }
}
