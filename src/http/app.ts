// The Koa app, composed in one place: request id and logs, errors, body, then each area's routes.
import crypto from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import Koa from 'koa';
import { Router } from '@koa/router';
import type { Platform } from '../platform.js';
import type { Logger } from '../log.js';
import { errorMiddleware } from './errors.js';
import { AppError } from '../errors.js';
import { bodyParser } from './body.js';
import { healthRouter } from './health.js';
import { accountsRouter } from '../accounts/routes.js';
import { contentRouter } from '../content/routes.js';
import { channelsRouter } from '../channels/routes.js';
import { embeddingsRouter } from '../embeddings/routes.js';
import { mailRouter } from '../mail/routes.js';
import { schedulesRouter } from '../schedules/routes.js';
import { startSchedules } from '../schedules/service.js';
import { webhooksRouter } from '../webhooks/routes.js';
import { batchesRouter } from '../batches/routes.js';
import { logsRouter } from '../logs/routes.js';
import { startLogMaintenance } from '../logs/maintenance.js';
import { observeHttp } from '../metrics.js';
import { docsRouter } from './openapi.js';
import { jobsRouter } from './jobs-routes.js';
import { boardEndpoint, boardMiddleware } from './board.js';
import { consoleMiddleware } from './console.js';
import { traceRequests } from './tracing.js';
import { tracing } from '../telemetry.js';
import type { ApiRouter, Endpoint } from './route.js';

export function createApp(p: Platform): Koa {
  // Behind a proxy, the client is the last X-Forwarded-For entry (what the proxy in front of us saw): earlier ones are
  // whatever the client wrote, and per-address login limits must not be dodged by writing another one each time.
  const app = new Koa({ proxy: p.config.TRUST_PROXY, maxIpsCount: 1, keys: p.secrets.cookieKeys });
  app.silent = true;
  app.on('error', (err) => p.log.debug({ err }, 'koa error event'));

  // Today's partitions and outage rows in every process that serves the API (once per platform); hourly upkeep is the
  // system schedule logs.maintain, which this sync makes sure of with every schedule's job scheduler.
  startLogMaintenance(p);
  startSchedules(p);
  // One router holding every area's routes: one match per request, not one per area.
  const root = new Router();
  const routers = buildRouters(p);
  for (const r of routers) root.use(r.routes());
  // Uploads read their own bodies as they arrive.
  const streamed = new Set(
    routers
      .flatMap((r) => r.endpoints)
      .filter((e) => e.body === 'multipart')
      .map((e) => `${e.method.toUpperCase()} ${e.path}`),
  );

  // Traces on (src/telemetry.ts): each request's server span, around everything else.
  const traces = tracing();
  if (traces) app.use(traceRequests(traces));
  app.use(requestContext(p));
  app.use(noFraming());
  app.use(errorMiddleware());
  // The board reads its own request bodies, so it sits before ours.
  app.use(boardMiddleware(p));
  app.use(bodyParser(p.config.BODY_LIMIT_BYTES, p.config.BODY_READ_TIMEOUT_MS, (method, path) => streamed.has(`${method} ${path}`)));
  app.use(root.routes());
  // The web console: only requests no API route matched reach it, and only its own paths are answered.
  app.use(consoleMiddleware());
  app.use(notFoundOrNotAllowed(root));
  return app;
}

/** Every area's routes, each with its endpoints' descriptions (the test that holds /openapi.json to the routes reads them). */
export function buildRouters(p: Platform): ApiRouter[] {
  // The embeddings routes come first: they are the busiest. The logs routes come before accounts' /api/user/:id,
  // which would otherwise take /api/user/dashboard.
  const areas = [
    embeddingsRouter(p),
    healthRouter(p),
    logsRouter(p),
    accountsRouter(p),
    channelsRouter(p),
    jobsRouter(p),
    contentRouter(p),
    mailRouter(p),
    schedulesRouter(p),
    webhooksRouter(p),
    batchesRouter(p),
  ];
  const docs = docsRouter(p, () => [...areas, docs].flatMap((r) => r.endpoints).concat(boardEndpoint));
  return [...areas, docs];
}

/** Every documented endpoint (the fuzz test walks them). */
export const documentedEndpoints = (p: Platform): Endpoint[] =>
  buildRouters(p)
    .flatMap((r) => r.endpoints)
    .concat(boardEndpoint);

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * X-Request-Id in and out, a child logger that carries it (made only when something logs),
 * the latency histogram, and one access log line per request (when info is enabled).
 */
function requestContext(p: Platform): Koa.Middleware {
  const accessLog = p.log.isLevelEnabled('info');
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    const started = performance.now();
    ctx.state.startedAt = started;
    let log: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', { get: () => (log ??= p.log.child({ reqId: requestId })), configurable: true });
    try {
      await next();
    } finally {
      const ms = performance.now() - started;
      const route = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
      observeHttp(ctx.method, typeof route === 'string' ? route : ctx.path.startsWith('/admin/queues') ? '/admin/queues' : 'unmatched', ctx.status, ms / 1000);
      if (accessLog)
        ctx.state.log!.info(
          { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 100) / 100, user: ctx.state.principal?.user.id },
          'request',
        );
    }
  };
}

/**
 * No HTML page of ours may be framed by another site (clickjacking): whatever answers with HTML — the console, /docs,
 * Bull Board, mail's response_type=html, a page added later — gets X-Frame-Options and, in its policy, frame-ancestors.
 */
function noFraming(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.headerSent || !ctx.response.is('html')) return;
    ctx.set('X-Frame-Options', 'DENY');
    const csp = ctx.response.get('Content-Security-Policy');
    if (!/(^|;)\s*frame-ancestors\s/i.test(csp)) ctx.set('Content-Security-Policy', csp ? `${csp}; frame-ancestors 'none'` : "frame-ancestors 'none'");
  };
}

/**
 * Nothing matched. one-api's collection paths end in a slash (`/api/token/`), and its router redirects the bare form:
 * here a path that matches a route once a slash is added is answered by that route. Otherwise 405 with Allow when the
 * path exists under other methods, else 404.
 */
function notFoundOrNotAllowed(root: Router): Koa.Middleware {
  const dispatch = root.routes();
  return async (ctx, next) => {
    if (!ctx.path.endsWith('/') && root.match(`${ctx.path}/`, ctx.method).route) {
      ctx.path = `${ctx.path}/`;
      return dispatch(ctx as Parameters<typeof dispatch>[0], next);
    }
    const allowed = new Set<string>();
    for (const layer of root.match(ctx.path, ctx.method).path) for (const m of layer.methods) allowed.add(m);
    if (allowed.size === 0 && !ctx.path.endsWith('/'))
      for (const layer of root.match(`${ctx.path}/`, ctx.method).path) for (const m of layer.methods) allowed.add(m);
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

/**
 * Requests Node's HTTP parser refuses before Koa sees them (a malformed request line or header, headers
 * past the size limit, a request that took too long to arrive) answered in JSON like every other error —
 * Node's own answer has no body. The area is not known yet, so the body carries both shapes: one-api's
 * {success, message} and OpenAI's {error}.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'The request headers (the URL included) are too large.']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'The request took too long to arrive.']
          : [400, 'Bad Request', 'The request is not valid HTTP.'];
    const body = JSON.stringify({ success: false, message, error: { message, type: 'invalid_request_error', param: null, code: 'bad_http_request' } });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
