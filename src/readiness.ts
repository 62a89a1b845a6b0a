// Readiness: whether Postgres and Redis answer, and (informational) which built-in models workers have loaded.
import { pingDb } from './db.js';
import { useLiteWorkersReady } from './embeddings/use-lite-worker.js';
import type { Platform } from './platform.js';
import { redisReady } from './redis.js';
import { withTimeout } from './timeout.js';

export interface Readiness {
  status: 'ready' | 'unavailable';
  checks: { postgres: string; redis: string };
  models: { 'use-lite': string };
}

/** Postgres and Redis each answer within their time, or say why not; what serves use-lite calls does not count. */
export async function readiness(p: Platform): Promise<Readiness> {
  const [postgres, redis] = await Promise.all([
    withTimeout(pingDb(p.db), 1_500).then(
      () => 'ok',
      (err: Error) => `unavailable: ${err.message}`,
    ),
    redisReady(p.redis).then((ok) => (ok ? 'ok' : 'unavailable')),
  ]);
  const ready = postgres === 'ok' && redis === 'ok';
  // Informational, not part of readiness: the API serves use-lite calls as soon as a worker can.
  const useLite = redis === 'ok' ? await withTimeout(useLiteWorkersReady(p), 1_000).catch(() => null) : null;
  return {
    status: ready ? 'ready' : 'unavailable',
    checks: { postgres, redis },
    models: {
      'use-lite':
        useLite === null ? 'unknown' : useLite > 0 ? `loaded by ${useLite} worker process${useLite === 1 ? '' : 'es'}` : 'not loaded by any worker yet',
    },
  };
}
