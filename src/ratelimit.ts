// Counting failures per key in fixed windows (login throttling), in Redis with an in-process fallback.
import type { Redis } from './redis.js';

export interface LimitedKey {
  key: string;
  max: number;
}

export class FailureLimiter {
  private readonly local = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly windowSeconds: number,
  ) {}

  private k(key: string) {
    return `${this.prefix}:${key}`;
  }

  /** Seconds until every key is back under its limit; 0 when none is over. */
  async retryAfter(limits: LimitedKey[]): Promise<number> {
    const keys = limits.map((l) => l.key);
    try {
      const pipeline = this.redis.multi();
      for (const key of keys) pipeline.get(this.k(key)).ttl(this.k(key));
      const replies = (await pipeline.exec()) ?? [];
      let wait = 0;
      for (let i = 0; i < keys.length; i++) {
        const count = Number(replies[i * 2]?.[1] ?? 0);
        const ttl = Number(replies[i * 2 + 1]?.[1] ?? 0);
        if (count >= limits[i]!.max) wait = Math.max(wait, ttl > 0 ? ttl : this.windowSeconds);
      }
      return wait;
    } catch {
      return this.localRetryAfter(limits);
    }
  }

  async fail(limits: LimitedKey[]): Promise<void> {
    const keys = limits.map((l) => l.key);
    try {
      const pipeline = this.redis.multi();
      for (const key of keys) pipeline.incr(this.k(key)).expire(this.k(key), this.windowSeconds, 'NX');
      await pipeline.exec();
    } catch {
      const now = Date.now();
      for (const key of keys) {
        const e = this.local.get(key);
        if (!e || e.resetAt <= now) this.local.set(key, { count: 1, resetAt: now + this.windowSeconds * 1000 });
        else e.count++;
      }
    }
  }

  async reset(key: string): Promise<void> {
    this.local.delete(key);
    await this.redis.del(this.k(key)).catch(() => {});
  }

  private localRetryAfter(limits: LimitedKey[]): number {
    const now = Date.now();
    let wait = 0;
    for (const { key, max } of limits) {
      const e = this.local.get(key);
      if (e && e.resetAt > now && e.count >= max) wait = Math.max(wait, Math.ceil((e.resetAt - now) / 1000));
    }
    return wait;
  }
}
