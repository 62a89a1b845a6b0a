// The login attempt counters in Redis (src/ratelimit.ts): an attempt given back never outlives or undercuts its window.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptLimiter } from '../../src/ratelimit.js';
import { clearRedisPrefix, REDIS_URL } from '../helpers/services.js';

const prefix = `sy-attempts-${randomUUID().slice(0, 8)}`;
const k = (key: string) => `${prefix}:${key}`;
let redis: Redis;
let limiter: AttemptLimiter;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  limiter = new AttemptLimiter(redis, k, 1);
});
afterAll(async () => {
  await clearRedisPrefix(prefix);
  await redis.quit();
});

describe('AttemptLimiter.succeeded', () => {
  it('gives an attempt back within its window, keeping the window', async () => {
    await limiter.attempt(['live']);
    expect((await limiter.attempt(['live']))[0]!.count).toBe(2);
    await limiter.succeeded(['live'], []);
    expect(await redis.get(k('live'))).toBe('1');
    expect(await redis.pttl(k('live'))).toBeGreaterThan(0);
  });

  it('does not recreate a key whose window ended before the success (no counter at -1 without a TTL)', async () => {
    expect((await limiter.attempt(['expired']))[0]!.count).toBe(1);
    // The login's password check outlived the 1 s window.
    await sleep(1_500);
    expect(await redis.exists(k('expired'))).toBe(0);
    await limiter.succeeded(['expired'], []);
    expect(await redis.exists(k('expired'))).toBe(0);
    // The next window starts at one attempt, not zero.
    expect((await limiter.attempt(['expired']))[0]!.count).toBe(1);
  });

  it('does not take a counter below zero', async () => {
    await redis.set(k('zero'), '0', 'EX', 60);
    await limiter.succeeded(['zero'], []);
    expect(await redis.get(k('zero'))).toBe('0');
  });
});
