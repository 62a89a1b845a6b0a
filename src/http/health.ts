// Liveness (/healthz) and readiness (/readyz: Postgres and Redis answer) probes.
import { Router } from '@koa/router';
import type { Platform } from '../platform.js';
import { redisReady, withTimeout } from '../redis.js';

export function healthRouter(p: Platform): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const [postgres, redis] = await Promise.all([
      withTimeout(p.db.raw('select 1'), 1_500).then(() => 'ok', (err: Error) => `unavailable: ${err.message}`),
      redisReady(p.redis).then((ok) => (ok ? 'ok' : 'unavailable')),
    ]);
    const ready = postgres === 'ok' && redis === 'ok';
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'unavailable', checks: { postgres, redis } };
  });
  return router;
}
