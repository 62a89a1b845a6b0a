// How each HTTP area writes an AppError: OpenAI's shape, one-api's envelope, or {error}; the middleware that does it.
import type { Context, Middleware } from 'koa';
import { type AppError, openaiErrorBody, toAppError } from '../errors.js';

/** How an API area writes its errors. */
export type ErrorShape = 'openai' | 'envelope' | 'plain';

export function errorShapeFor(path: string): ErrorShape {
  if (path.startsWith('/v1/') || path === '/v1') return 'openai';
  if (/^\/api\/(user|token|redemption|channel|log|status)(\/|$)/.test(path)) return 'envelope';
  return 'plain';
}

export function errorBody(shape: ErrorShape, err: AppError): unknown {
  switch (shape) {
    case 'openai':
      return openaiErrorBody(err);
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
