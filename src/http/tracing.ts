// Each request's server span when traces are on (src/telemetry.ts): named by its route, with the path but never the
// query string (msOauth2api's GETs carry credentials there), nor any header.
import type Koa from 'koa';
import type { Tracing } from '../telemetry.js';

/** Probes and scrapes, answered many times a minute: no trace of their own. */
const UNTRACED = new Set(['/healthz', '/readyz', '/livez', '/metrics']);

export function traceRequests(t: Tracing): Koa.Middleware {
  return (ctx, next) => {
    if (UNTRACED.has(ctx.path)) return next();
    const attributes = { 'http.request.method': ctx.method, 'url.path': ctx.path, 'url.scheme': ctx.protocol };
    return t.serve(ctx.headers, ctx.method, attributes, async (span) => {
      try {
        await next();
      } finally {
        const matched = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
        const route = typeof matched === 'string' ? matched : undefined;
        span.set({ 'http.route': route, 'http.response.status_code': ctx.status, 'switchyard.request_id': ctx.state.requestId });
        if (route) span.rename(`${ctx.method} ${route}`);
        if (ctx.status >= 500) span.fail();
      }
    });
  };
}
