// The one way the console talks to the API: same-origin fetch with the session cookie, errors made readable.
import { type MessageKey, t } from './i18n';

/** An API call that did not succeed: what people are told is in describeError(). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The server's own words (already a sentence meant for people), or '' when it said nothing usable. */
    readonly detail: string,
    readonly code?: string,
    readonly retryAfter?: number,
  ) {
    super(detail || `HTTP ${status}`);
  }
}

export interface ApiResponse<T> {
  data: T;
  status: number;
  headers: Headers;
}

export interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Send this text as text/plain instead of JSON. */
  text?: string;
  /** Send this form as multipart/form-data (the browser writes its boundary). */
  form?: FormData;
}

/** Called when a session-authenticated call answers 401: the session ended. */
let sessionEnded: () => void = () => {};
export const onSessionEnded = (fn: () => void) => {
  sessionEnded = fn;
};

/** The message the server put in any of the API's three error shapes. */
function serverMessage(body: unknown): { message: string; code?: string } {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (typeof b.message === 'string' && b.success === false) return { message: b.message };
    if (typeof b.error === 'string') return { message: b.error };
    if (b.error && typeof b.error === 'object') {
      const e = b.error as Record<string, unknown>;
      if (typeof e.message === 'string') return { message: e.message, code: typeof e.code === 'string' ? e.code : undefined };
    }
  }
  return { message: '' };
}

/** Sends the request; a failure to reach the server at all is an ApiError with status 0. */
async function send(method: string, path: string, opts: CallOptions, headers: Record<string, string>, body?: string | FormData): Promise<Response> {
  try {
    return await fetch(path, { method, headers, body, credentials: 'same-origin', signal: opts.signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, '');
  }
}

const parseJson = (raw: string): unknown => {
  try {
    return raw ? JSON.parse(raw) : undefined;
  } catch {
    return undefined;
  }
};

/** The ApiError for an answer that is not 2xx (a 401 to a call without a credential of its own ends the session). */
function failure(res: Response, parsed: unknown, headers: Record<string, string>, path: string): ApiError {
  const { message, code } = serverMessage(parsed);
  const retry = Number(res.headers.get('retry-after'));
  // A key or token given explicitly failing is about that credential, not about the session.
  if (res.status === 401 && !('authorization' in headers) && path !== '/api/user/login') sessionEnded();
  return new ApiError(res.status, message, code, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}

export async function call<T = unknown>(method: string, path: string, body?: unknown, opts: CallOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  let payload: string | FormData | undefined;
  if (opts.form !== undefined) {
    payload = opts.form;
  } else if (opts.text !== undefined) {
    headers['content-type'] = 'text/plain; charset=utf-8';
    payload = opts.text;
  } else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await send(method, path, opts, headers, payload);
  const parsed = parseJson(await res.text());
  if (!res.ok) throw failure(res, parsed, headers, path);
  // one-api's envelope: {success, message, data}.
  if (parsed && typeof parsed === 'object' && 'success' in parsed && 'message' in parsed) {
    const env = parsed as { success: boolean; message: string; data?: unknown };
    if (!env.success) throw new ApiError(res.status, env.message);
    return { data: env.data as T, status: res.status, headers: res.headers };
  }
  return { data: parsed as T, status: res.status, headers: res.headers };
}

/** A file's bytes (GET), and the name its Content-Disposition gives it ('' when none). */
export async function getBytes(path: string, opts: CallOptions = {}): Promise<{ blob: Blob; filename: string }> {
  const headers: Record<string, string> = { ...opts.headers };
  const res = await send('GET', path, opts, headers);
  if (!res.ok) throw failure(res, parseJson(await res.text()), headers, path);
  const filename = /filename="([^"]*)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? '';
  return { blob: await res.blob(), filename };
}

export const get = async <T>(path: string, opts?: CallOptions): Promise<T> => (await call<T>('GET', path, undefined, opts)).data;
export const post = async <T>(path: string, body?: unknown, opts?: CallOptions): Promise<T> => (await call<T>('POST', path, body, opts)).data;
export const put = async <T>(path: string, body?: unknown, opts?: CallOptions): Promise<T> => (await call<T>('PUT', path, body, opts)).data;
export const del = async <T>(path: string, opts?: CallOptions): Promise<T> => (await call<T>('DELETE', path, undefined, opts)).data;

/** `?a=1&b=x` from the defined, non-empty values. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** The headline for each status with its own (any other: a server error from 500 up, else unexpected). */
const HEADLINES: Record<number, MessageKey> = {
  400: 'error.invalid',
  401: 'error.unauthorized',
  403: 'error.forbidden',
  404: 'error.notFound',
  409: 'error.conflict',
  413: 'error.tooLarge',
  422: 'error.invalid',
  429: 'error.rateLimited',
  502: 'error.upstream',
  503: 'error.unavailable',
  504: 'error.timeout',
};

/** The codes of a call refused for want of quota: the user's (insufficient_quota) or the API key's (token_exhausted). */
const QUOTA_CODES = new Set(['insufficient_quota', 'token_exhausted']);

/** What to tell people about a failure: a headline in their language, and the server's explanation. */
export function describeError(err: unknown): { headline: string; detail: string } {
  if (!(err instanceof ApiError)) return { headline: t('error.unexpected'), detail: err instanceof Error ? err.message : '' };
  const { status, detail, retryAfter } = err;
  if (status === 0) return { headline: t('error.network'), detail: '' };
  // Short of quota (the user's or the key's): a 403 or 401 by status, but nothing to do with who may do what.
  if (err.code && QUOTA_CODES.has(err.code)) return { headline: t('error.quota'), detail };
  if (status === 429 && retryAfter) return { headline: t('error.rateLimitedFor', { s: retryAfter }), detail };
  return { headline: t(HEADLINES[status] ?? (status >= 500 ? 'error.server' : 'error.unexpected')), detail };
}

/** The whole message in one line (toasts). */
export function errorText(err: unknown): string {
  const { headline, detail } = describeError(err);
  return detail ? `${headline} ${detail}` : headline;
}
