// Per-owner slots in Redis (src/jobs/fairness.ts), behind MAIL_USER_CONCURRENCY and JOB_EVENT_STREAMS_PER_USER:
// held slots keep counting for as long as their holders renew them, however long that is.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OwnerSlots } from '../../src/jobs/fairness.js';
import { redisKeys } from '../../src/redis.js';
import { clearRedisPrefix, REDIS_URL } from '../helpers/services.js';

const prefix = `sy-owner-slots-${randomUUID().slice(0, 8)}`;
const keys = redisKeys({ QUEUE_PREFIX: prefix, REDIS_CLUSTER_NODES: undefined });
const LEASE_MS = 1_000;
const LIMIT = 2;
let redis: Redis;
let slots: OwnerSlots;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  slots = new OwnerSlots(redis, keys, LEASE_MS);
});
afterAll(async () => {
  await clearRedisPrefix(prefix);
  await redis.quit();
});

describe(`owner slots (lease ${LEASE_MS} ms, limit ${LIMIT})`, () => {
  it('holders that keep renewing keep their slots past 2 × lease after the last acquire: no third slot is granted', async () => {
    const owner = 1;
    expect(await slots.acquire('q', owner, 'a', LIMIT)).toBe(true);
    expect(await slots.acquire('q', owner, 'b', LIMIT)).toBe(true);
    expect(await slots.acquire('q', owner, 'c', LIMIT)).toBe(false);
    // Renewed every 300 ms for 2.3 s: well past the set's own expiry (2 × lease) had renewals not extended it.
    const until = Date.now() + 2_300;
    while (Date.now() < until) {
      await sleep(300);
      expect(await slots.renew('q', owner, 'a', LIMIT)).toBe(true);
      expect(await slots.renew('q', owner, 'b', LIMIT)).toBe(true);
    }
    const key = keys.of('owner-slots', `q:${owner}`);
    expect(await redis.zrange(key, '0', '-1')).toEqual(['a', 'b']);
    expect(await redis.pttl(key)).toBeGreaterThan(LEASE_MS);
    expect(await slots.acquire('q', owner, 'c', LIMIT)).toBe(false);
    expect(await slots.acquire('q', owner, 'd', LIMIT)).toBe(false);
  });

  it('a renewal whose slot vanished takes it back only while the owner has one free; otherwise it reports the slot lost', async () => {
    const owner = 2;
    const key = keys.of('owner-slots', `q:${owner}`);
    expect(await slots.acquire('q', owner, 'a', LIMIT)).toBe(true);
    expect(await slots.acquire('q', owner, 'b', LIMIT)).toBe(true);
    // The whole set gone (expired while Redis or its holders were away): the renewals put both back.
    await redis.del(key);
    expect(await slots.renew('q', owner, 'a', LIMIT)).toBe(true);
    expect(await slots.renew('q', owner, 'b', LIMIT)).toBe(true);
    expect((await redis.zrange(key, '0', '-1')).sort()).toEqual(['a', 'b']);
    // a's slot lapsed and c took it: a's late renewal must not make three.
    await redis.zrem(key, 'a');
    expect(await slots.acquire('q', owner, 'c', LIMIT)).toBe(true);
    expect(await slots.renew('q', owner, 'a', LIMIT)).toBe(false);
    expect((await redis.zrange(key, '0', '-1')).sort()).toEqual(['b', 'c']);
  });

  it('a holder that stops renewing loses its slot after the lease, and the set expires after 2 × lease', async () => {
    const owner = 3;
    const key = keys.of('owner-slots', `q:${owner}`);
    expect(await slots.acquire('q', owner, 'a', LIMIT)).toBe(true);
    expect(await slots.acquire('q', owner, 'b', LIMIT)).toBe(true);
    await sleep(LEASE_MS + 100);
    expect(await slots.acquire('q', owner, 'c', LIMIT)).toBe(true);
    expect(await redis.zrange(key, '0', '-1')).toEqual(['c']);
    await sleep(2 * LEASE_MS + 100);
    expect(await redis.exists(key)).toBe(0);
  });
});
