// Per-owner limits on running jobs, across every worker: one user's flood waits its turn instead of
// filling a queue's workers. Slots are a Redis sorted set per (queue, owner) of job ids scored by
// lease expiry, taken atomically by a Lua script and renewed while the job runs, so a crashed
// worker's slot lapses by itself.
import type { Redis, RedisKeys } from '../redis.js';

// KEYS[1] the owner's set; ARGV: now, lease expiry, job id, limit, key ttl ms.
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0`;

export class OwnerSlots {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    /** How long a slot holds without renewal (a dead worker's slot frees after this). */
    private readonly leaseMs: number,
  ) {}

  private key(queue: string, owner: number): string {
    return this.keys.of('owner-slots', `${queue}:${owner}`);
  }

  /** Takes one of `limit` slots for the job; false when the owner already runs `limit` jobs. */
  async acquire(queue: string, owner: number, jobId: string, limit: number): Promise<boolean> {
    const now = Date.now();
    const taken = await this.redis.eval(ACQUIRE, 1, this.key(queue, owner), now, now + this.leaseMs, jobId, limit, this.leaseMs * 2);
    return taken === 1;
  }

  /** Extends the job's lease while it runs. */
  async renew(queue: string, owner: number, jobId: string): Promise<void> {
    await this.redis.zadd(this.key(queue, owner), 'XX', Date.now() + this.leaseMs, jobId);
  }

  async release(queue: string, owner: number, jobId: string): Promise<void> {
    await this.redis.zrem(this.key(queue, owner), jobId);
  }
}
