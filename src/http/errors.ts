// How each HTTP area writes an AppError: OpenAI's shape, one-api's envelope, or {error}; the middleware that does it.
import type { Context, Middleware } from 'koa';
import { type AppError, toAppError } from '../errors.js';

/** How an API area writes its errors. */
export type ErrorShape = 'openai' | 'envelope' | 'plain';

export function errorShapeFor(path: string): ErrorShape {
  if (path.startsWith('/v1/') || path === '/v1') return 'openai';
  if (/^\/api\/(user|token|redemption|channel|log|status)(\/|$)/.test(path)) return 'envelope';
  return 'plain';
}

const OPENAI_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'insufficient_quota',
  404: 'invalid_request_error',
  405: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
};

export function errorBody(shape: ErrorShape, err: AppError): unknown {
  switch (shape) {
    case 'openai':
      return {
        error: {
          message: err.message,
          type: err.type ?? OPENAI_TYPES[err.status] ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error'),
          param: err.param ?? null,
          code: err.code ?? null,
        },
      };
    case 'envelope':
      return { success: false, message: err.message };
    default:
      return { error: err.message };
  }
}

/** Maps anything thrown below it to the area's JSON error; logs what the client is not told. */
export function errorMiddleware(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (raw) {
      const err = toAppError(raw);
      if (err.status >= 500) ctx.state.log?.error({ err: raw }, 'request failed');
      else ctx.state.log?.debug({ status: err.status, message: err.message }, 'request rejected');
      writeError(ctx, err);
    }
  };
}

export function writeError(ctx: Context, err: AppError) {
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers ?? {})) ctx.set(k, v);
  ctx.body = errorBody(errorShapeFor(ctx.path), err);
}
