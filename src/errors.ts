// The one error hierarchy: AppError (status, code, retriable) and how anything thrown becomes one.
import { isDbUnavailable } from './db.js';

export interface AppErrorOptions {
  /** Machine-readable code (OpenAI's `code`, e.g. invalid_api_key). */
  code?: string;
  /** OpenAI's `type`; defaults by status. */
  type?: string;
  /** OpenAI's `param`: the request field at fault. */
  param?: string | null;
  /** Extra response headers (Retry-After, Allow, ...). */
  headers?: Record<string, string>;
  /** A transient failure: a job that throws it is retried. */
  retriable?: boolean;
  cause?: unknown;
}

export class AppError extends Error {
  readonly status: number;
  readonly code?: string;
  readonly type?: string;
  readonly param?: string | null;
  readonly headers?: Record<string, string>;
  readonly retriable: boolean;

  constructor(status: number, message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = opts.code;
    this.type = opts.type;
    this.param = opts.param;
    this.headers = opts.headers;
    this.retriable = opts.retriable ?? status >= 500;
  }

  toJSON() {
    return { status: this.status, message: this.message, code: this.code, type: this.type, param: this.param, headers: this.headers };
  }

  static fromJSON(o: { status: number; message: string; code?: string; type?: string; param?: string | null; headers?: Record<string, string> }) {
    return new AppError(o.status, o.message, { code: o.code, type: o.type, param: o.param, headers: o.headers });
  }
}

export const badRequest = (message: string, opts?: AppErrorOptions) => new AppError(400, message, { code: 'invalid_request', ...opts });
export const unauthorized = (message = 'Authentication required', opts?: AppErrorOptions) => new AppError(401, message, { code: 'unauthorized', ...opts });
export const forbidden = (message = 'Forbidden', opts?: AppErrorOptions) => new AppError(403, message, { code: 'forbidden', ...opts });
export const notFound = (message = 'Not found', opts?: AppErrorOptions) => new AppError(404, message, { code: 'not_found', ...opts });
export const conflict = (message: string, opts?: AppErrorOptions) => new AppError(409, message, { code: 'conflict', ...opts });
export const tooManyRequests = (message: string, retryAfterSeconds: number, opts?: AppErrorOptions) =>
  new AppError(429, message, { code: 'rate_limited', headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) }, ...opts });
export const serviceUnavailable = (message: string, opts?: AppErrorOptions) =>
  new AppError(503, message, { code: 'service_unavailable', headers: { 'Retry-After': '2' }, ...opts });

/** Turns any thrown value into an AppError whose message is safe to show. */
export function toAppError(raw: unknown): AppError {
  if (raw instanceof AppError) return raw;
  const e = raw as { status?: number; statusCode?: number; expose?: boolean; message?: string; type?: string; headers?: Record<string, string> };
  if (isDbUnavailable(raw)) return serviceUnavailable('Database unavailable, try again shortly', { code: 'database_unavailable' });
  if (isRedisUnavailable(raw)) return serviceUnavailable('Queue unavailable (Redis is not reachable), try again shortly', { code: 'queue_unavailable' });
  const status = e?.status ?? e?.statusCode;
  // http-errors thrown by Koa or @koa/router (404, 405, 501 ...) carry safe messages.
  if (typeof status === 'number' && status >= 400 && status < 500 && e.expose !== false) {
    return new AppError(status, e.message ?? 'Request failed', { headers: e.headers });
  }
  return new AppError(500, 'Internal server error', { code: 'internal_error', cause: raw });
}

export function isRedisUnavailable(err: unknown): boolean {
  const e = err as { message?: string; code?: string; name?: string } | null;
  if (!e?.message) return false;
  return (
    /Stream isn't writeable|enableOfflineQueue|Connection is closed|ECONNREFUSED.*6379|MaxRetriesPerRequestError|Reached the max retries per request limit|Command timed out|Redis is not ready|LOADING Redis/i.test(
      e.message,
    ) || e.name === 'MaxRetriesPerRequestError'
  );
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

/** An error as OpenAI's API answers it: `{error: {message, type, param, code}}` (/v1, and a batch's error lines). */
export function openaiErrorBody(err: AppError) {
  return {
    error: {
      message: err.message,
      type: err.type ?? OPENAI_TYPES[err.status] ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: err.param ?? null,
      code: err.code ?? null,
    },
  };
}
