// Liveness (/healthz), readiness (/readyz: Postgres and Redis answer) and Prometheus metrics (/metrics).
import type { Platform } from '../platform.js';
import { ApiRouter, endpoint } from './route.js';
import { unauthorized } from '../errors.js';
import { metricsAuthorized, registry } from '../metrics.js';
import { readiness } from '../readiness.js';

const healthz = endpoint({ method: 'get', path: '/healthz', summary: 'The process is up', auth: 'none', responses: { 200: 'ok' } }, () => ({ status: 'ok' }));

const readyz = endpoint(
  {
    method: 'get',
    path: '/readyz',
    summary: 'Postgres and Redis answer (and which built-in models workers have loaded)',
    auth: 'none',
    responses: { 200: 'ready', 503: 'a dependency is unavailable (which one is in checks)' },
  },
  async (ctx, { p }) => {
    const ready = await readiness(p);
    ctx.status = ready.status === 'ready' ? 200 : 503;
    return ready;
  },
);

/** Its credential is METRICS_TOKEN, not a user's: checked here, as the endpoint is 'none' to the user roles. */
const metrics = endpoint(
  {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics (with METRICS_TOKEN set: Authorization: Bearer <token>)',
    auth: 'none',
    responses: { 200: 'text exposition format', 401: 'METRICS_TOKEN is set and the request does not carry it' },
  },
  async (ctx, { p }) => {
    if (!metricsAuthorized(ctx.get('authorization'), p.config.METRICS_TOKEN)) {
      throw unauthorized('METRICS_TOKEN required: send Authorization: Bearer <token>', {
        code: 'metrics_token_required',
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    ctx.type = registry.contentType;
    return registry.metrics();
  },
);

export const healthRouter = (p: Platform): ApiRouter => new ApiRouter('Operations', p).add(healthz, readyz, metrics);
