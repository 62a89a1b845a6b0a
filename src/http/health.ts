// Liveness (/healthz), readiness (/readyz: Postgres and Redis answer) and Prometheus metrics (/metrics).
import { pingDb } from '../db.js';
import type { Platform } from '../platform.js';
import { ApiRouter } from './route.js';
import { unauthorized } from '../errors.js';
import { metricsAuthorized, registry } from '../metrics.js';
import { redisReady } from '../redis.js';
import { withTimeout } from '../timeout.js';
import { useLiteWorkersReady } from '../embeddings/use-lite-worker.js';

export function healthRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Operations');
  router.endpoint({ method: 'get', path: '/healthz', summary: 'The process is up', auth: 'none', responses: { 200: 'ok' } }, (ctx) => {
    ctx.body = { status: 'ok' };
  });
  const readyz = {
    method: 'get',
    path: '/readyz',
    summary: 'Postgres and Redis answer (and which built-in models workers have loaded)',
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
    // Informational, not part of readiness: the API serves use-lite calls as soon as a worker can.
    const useLite = redis === 'ok' ? await withTimeout(useLiteWorkersReady(p), 1_000).catch(() => null) : null;
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      status: ready ? 'ready' : 'unavailable',
      checks: { postgres, redis },
      models: {
        'use-lite':
          useLite === null ? 'unknown' : useLite > 0 ? `loaded by ${useLite} worker process${useLite === 1 ? '' : 'es'}` : 'not loaded by any worker yet',
      },
    };
  });
  const metrics = {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics (with METRICS_TOKEN set: Authorization: Bearer <token>)',
    auth: 'none',
    responses: { 200: 'text exposition format', 401: 'METRICS_TOKEN is set and the request does not carry it' },
  } as const;
  router.endpoint(metrics, async (ctx) => {
    if (!metricsAuthorized(ctx.get('authorization'), p.config.METRICS_TOKEN)) {
      throw unauthorized('METRICS_TOKEN required: send Authorization: Bearer <token>', {
        code: 'metrics_token_required',
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
