// Liveness (/healthz), readiness (/readyz: Postgres and Redis answer) and Prometheus metrics (/metrics).
import { Router } from '@koa/router';
import type { Platform } from '../platform.js';
import { registry } from '../metrics.js';
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
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
