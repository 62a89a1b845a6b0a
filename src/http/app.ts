// The Koa app, composed in one place: request id and logs, errors, body, then each area's routes.
import crypto from 'node:crypto';
import Koa from 'koa';
import type { Router } from '@koa/router';
import type { Platform } from '../platform.js';
import { AppError, errorMiddleware } from './errors.js';
import { bodyParser } from './body.js';
import { healthRouter } from './health.js';
import { accountsRouter } from '../accounts/routes.js';
import { contentRouter } from '../content/routes.js';
import { channelsRouter } from '../accounts/channel-routes.js';
import { embeddingsRouter } from '../embeddings/routes.js';
import { mailRouter } from '../mail/routes.js';
import { httpMetrics, metricsRouter } from '../metrics.js';
import { docsRouter } from './openapi.js';
import { jobsRouter } from './jobs.js';
import { boardGuard, boardPlugin } from './board.js';

export function createApp(p: Platform): Koa {
  const app = new Koa({ proxy: p.config.TRUST_PROXY, keys: p.secrets.cookieKeys });
  app.silent = true;
  app.on('error', (err) => p.log.debug({ err }, 'koa error event'));

  const routers = buildRouters(p);

  app.use(requestContext(p));
  app.use(httpMetrics());
  app.use(errorMiddleware());
  // The board reads its own request bodies, so it sits before ours.
  app.use(boardGuard(p));
  app.use(boardPlugin(p));
  app.use(bodyParser(p.config.BODY_LIMIT_BYTES));
  for (const r of routers) app.use(r.routes());
  app.use(notFoundOrNotAllowed(routers));
  return app;
}

/** Every area's routes (also read by the test that holds /openapi.json to them). */
export function buildRouters(p: Platform): Router[] {
  return [healthRouter(p), metricsRouter(), docsRouter(), embeddingsRouter(p), accountsRouter(p), channelsRouter(p), jobsRouter(p), contentRouter(p), mailRouter(p)];
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** X-Request-Id in and out, a child logger that carries it, and one access log line per request. */
function requestContext(p: Platform): Koa.Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    const log = p.log.child({ reqId: requestId });
    ctx.state.log = log;
    const started = performance.now();
    try {
      await next();
    } finally {
      const ms = Math.round((performance.now() - started) * 100) / 100;
      log.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms, user: ctx.state.principal?.user.id }, 'request');
    }
  };
}

/** Nothing matched: 405 with Allow when the path exists under other methods, else 404. */
function notFoundOrNotAllowed(routers: Router[]): Koa.Middleware {
  return async (ctx) => {
    const allowed = new Set<string>();
    for (const r of routers) {
      for (const layer of r.match(ctx.path, ctx.method).path) for (const m of layer.methods) allowed.add(m);
    }
    if (allowed.size === 0) throw new AppError(404, `No route for ${ctx.method} ${ctx.path}`, { code: 'not_found' });
    const allow = [...allowed].join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Allow', allow);
      ctx.status = 204;
      return;
    }
    throw new AppError(405, `Method ${ctx.method} not allowed for ${ctx.path} (allowed: ${allow})`, { code: 'method_not_allowed', headers: { Allow: allow } });
  };
}
