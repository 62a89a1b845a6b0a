// /readyz's count of workers with use-lite loaded when one dies without stopping (SIGKILL): its last word stays in
// Redis and counts for 30 s (it said it every 10 s), then no more. The 30 s are not waited out: the dead worker's
// entry is aged by 30 s, as time would age it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READY_FOR_MS, useLiteReadyKey } from '../../src/embeddings/use-lite-worker.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { spawnEntry, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

let t: TestApp;
let worker: Spawned | undefined;

beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await worker?.stop('SIGKILL').catch(() => {});
  await t?.close();
});

const useLite = async () => (await t.anon.get('/readyz')).body.models['use-lite'] as string;

describe('a use-lite worker killed with SIGKILL', () => {
  it('still counts in /readyz while its last word is under 30 s old, and leaves the count once it is older', async () => {
    worker = spawnEntry('worker', [], { ...t.testEnv.env, WORKER_QUEUES: 'embeddings', USE_LITE_PRELOAD: 'true', LOG_LEVEL: 'info' });
    await worker.waitFor(/workers started/);
    await until('the worker to say it has use-lite', useLite, (s) => s === 'loaded by 1 worker process', 60_000);
    expect(await worker.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    worker = undefined;
    // Dead, it can neither beat nor withdraw: its entry stays as it last wrote it.
    const key = useLiteReadyKey(t.platform);
    const [member, score] = (await t.platform.redis.zrange(key, '0', '0', 'WITHSCORES')) as [string, string];
    expect(await useLite()).toBe('loaded by 1 worker process');
    // A second short of 30 s old: still counted.
    await t.platform.redis.zadd(key, 'XX', String(Date.now() - READY_FOR_MS + 1_000), member);
    expect(await useLite()).toBe('loaded by 1 worker process');
    // Past 30 s: no longer.
    await t.platform.redis.zadd(key, 'XX', String(Date.now() - READY_FOR_MS - 1), member);
    expect(await useLite()).toBe('not loaded by any worker yet');
    expect(Number(score)).toBeGreaterThan(0);
  }, 90_000);
});
