// Per-owner limits on running jobs, across every worker: one user's flood waits its turn instead of
// filling a queue's workers. Slots are a Redis sorted set per (queue, owner) of job ids scored by
// lease expiry, taken atomically by a Lua script and renewed while the job runs, so a crashed
// worker's slot lapses by itself. The set's own key expires (2 × lease) only when no slot in it was
// taken or renewed for that long: each renewal pushes the key's expiry on with its member's score.
import type { Redis, RedisKeys } from '../redis.js';

// KEYS[1] the owner's set; ARGV: now, lease expiry, job id, limit, key ttl ms. Takes a slot, or renews one already
// held (its score and the key's expiry, together).
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

  /**
   * Extends the job's lease while it runs, and the set's expiry with it. A slot that vanished meanwhile
   * (it lapsed while the holder or Redis was stalled, or the set expired) is taken again only if the
   * owner has one free, the same check as acquire: a renewal never takes an owner past `limit`. False
   * then: the slot is lost, and the holder should stop (or at least know it runs uncounted).
   */
  async renew(queue: string, owner: number, jobId: string, limit: number): Promise<boolean> {
    return this.acquire(queue, owner, jobId, limit);
  }

  async release(queue: string, owner: number, jobId: string): Promise<void> {
    await this.redis.zrem(this.key(queue, owner), jobId);
  }
}
