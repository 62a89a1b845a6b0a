// Liveness (/healthz), readiness (/readyz: Postgres and Redis answer) and Prometheus metrics (/metrics).
import { pingDb } from '../db.js';
import type { Platform } from '../platform.js';
import { ApiRouter } from './route.js';
import { registry } from '../metrics.js';
import { redisReady, withTimeout } from '../redis.js';

export function healthRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Operations');
  router.endpoint({ method: 'get', path: '/healthz', summary: 'The process is up', auth: 'none', responses: { 200: 'ok' } }, (ctx) => {
    ctx.body = { status: 'ok' };
  });
  const readyz = {
    method: 'get',
    path: '/readyz',
    summary: 'Postgres and Redis answer',
    auth: 'none',
    responses: { 200: 'ready', 503: 'a dependency is unavailable (which one is in checks)' },
  } as const;
  router.endpoint(readyz, async (ctx) => {
    const [postgres, redis] = await Promise.all([
      withTimeout(pingDb(p.db), 1_500).then(
        () => 'ok',
        (err: Error) => `unavailable: ${err.message}`,
      ),
      redisReady(p.redis).then((ok) => (ok ? 'ok' : 'unavailable')),
    ]);
    const ready = postgres === 'ok' && redis === 'ok';
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'unavailable', checks: { postgres, redis } };
  });
  router.endpoint(
    { method: 'get', path: '/metrics', summary: 'Prometheus metrics', auth: 'none', responses: { 200: 'text exposition format' } },
    async (ctx) => {
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
    },
  );
  return router;
}
