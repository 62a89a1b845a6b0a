// Request body reading: a byte limit (413), strict JSON at most MAX_JSON_DEPTH deep (400), form and text bodies, nothing else (415).
import type { Middleware } from 'koa';
import { AppError, badRequest } from '../errors.js';

declare module 'koa' {
  interface Request {
    body?: unknown;
    rawBody?: string;
  }
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Arrays and objects nested deeper than this are refused (400 invalid_json) before the body is
 * parsed: no API takes more than a few levels, and a very deep value (200k `[`) would overflow the
 * stack of whatever walks it later (JSON.stringify when it is queued, validators, loggers).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * A body refused unread (too large, or of a type we do not read) is still read and dropped, up to this many times
 * the limit, before the answer goes out: a client that is still sending when the server closes the connection gets
 * EPIPE or ECONNRESET instead of the answer (Node's fetch does). Past that much the connection is cut.
 */
export const DRAIN_FACTOR = 4;
/** Nor does it wait longer than this for the rest: a client trickling its body would hold the socket meanwhile. */
export const DRAIN_MS = 10_000;

/**
 * `streamed`: requests whose endpoint reads the body itself, as it arrives (an upload declared `body: 'multipart'`),
 * within bounds of its own: left unread here.
 */
export function bodyParser(limitBytes: number, readTimeoutMs: number, streamed: (method: string, path: string) => boolean = () => false): Middleware {
  const drainBytes = limitBytes * DRAIN_FACTOR;
  return async (ctx, next) => {
    const length = ctx.request.length;
    const chunked = ctx.get('transfer-encoding') !== '';
    if (BODYLESS.has(ctx.method) || (!length && !chunked)) return next();
    if (ctx.request.type === 'multipart/form-data' && streamed(ctx.method, ctx.path)) return next();
    const type = ctx.request.type; // lower-cased media type without parameters
    const isJson = type === 'application/json' || type.endsWith('+json') || type === '';
    const isForm = type === 'application/x-www-form-urlencoded';
    const isText = type === 'text/plain';
    const refused =
      length !== undefined && length > limitBytes
        ? tooLarge(limitBytes)
        : !isJson && !isForm && !isText
          ? new AppError(415, `Unsupported Content-Type "${type}": send application/json`, { code: 'unsupported_media_type' })
          : undefined;
    if (refused) {
      // The connection closes after the answer either way; it is sent once the client has sent its body, if that fits in the bound.
      ctx.set('Connection', 'close');
      if (length === undefined || length <= drainBytes) await drain(ctx.req, drainBytes);
      throw refused;
    }
    const text = await readText(ctx.req, limitBytes, drainBytes, () => ctx.set('Connection', 'close'), readTimeoutMs);
    ctx.request.rawBody = text;
    // `curl -d '{...}'` labels JSON as a form: a form body that opens like JSON is read as JSON.
    const looksJson = /^\s*[[{]/.test(text);
    // fetch() labels a string body text/plain: one that is JSON is read as JSON (as content-analyzer does); other text stays text.
    if (isText) ctx.request.body = looksJson ? (jsonOrUndefined(text) ?? text) : text;
    else if (isForm && !looksJson) ctx.request.body = Object.fromEntries(new URLSearchParams(text));
    else if (text.trim() === '') ctx.request.body = undefined;
    else {
      if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
        throw badRequest(`JSON in request body is nested too deeply (at most ${MAX_JSON_DEPTH} levels of arrays and objects)`, { code: 'invalid_json' });
      }
      try {
        ctx.request.body = JSON.parse(text);
      } catch (err) {
        throw badRequest(`Malformed JSON in request body: ${(err as Error).message}`, { code: 'invalid_json' });
      }
    }
    return next();
  };
}

/** The value of well-formed JSON within MAX_JSON_DEPTH, else undefined. */
function jsonOrUndefined(text: string): unknown {
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Whether JSON text opens more than `max` arrays/objects inside each other. One pass, no parsing:
 * brackets inside strings do not count (a string is skipped to its closing quote, one not preceded
 * by an odd run of backslashes). Malformed text is left to JSON.parse to report.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return false; // unterminated string: malformed
        let k = end - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((end - 1 - k) % 2 === 0) break;
      }
      i = end;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

const tooLarge = (limit: number) => new AppError(413, `Request body too large (limit ${limit} bytes)`, { code: 'payload_too_large' });

/** Reads the body up to `limit` bytes; past that, drops the rest (up to `drainBytes` in all) and fails with 413. */
function readText(req: NodeJS.ReadableStream, limit: number, drainBytes: number, onOverflow: () => void, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // A body still not whole after timeoutMs (a client sending slowly, or not at all) is answered 408 and its socket
    // closed: up to the limit in memory per connection, held by anyone, even without credentials, until Node's own
    // request timeout (300 s).
    const timer = setTimeout(() => {
      cleanup();
      chunks.length = 0;
      onOverflow();
      req.pause();
      reject(new AppError(408, `The request body did not arrive within ${timeoutMs} ms`, { code: 'request_timeout' }));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        onOverflow();
        drain(req, drainBytes - size).then(() => reject(tooLarge(limit)));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(badRequest(`Could not read request body: ${err.message}`));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Reads and drops the rest of a request body: resolves when it has ended, when the client is gone, or (the socket
 * then left paused, and closed after the answer) once more than `maxBytes` arrived or DRAIN_MS passed.
 */
function drain(req: NodeJS.ReadableStream, maxBytes: number, maxMs = DRAIN_MS): Promise<void> {
  return new Promise((resolve) => {
    let size = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      req.pause();
      req.removeListener('data', onData);
      req.removeListener('end', done);
      req.removeListener('error', done);
      req.removeListener('close', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) done();
    };
    if (maxBytes < 0 || (req as { readableEnded?: boolean }).readableEnded) return resolve();
    timer = setTimeout(done, maxMs);
    req.on('data', onData);
    req.on('end', done);
    req.on('error', done);
    req.on('close', done);
    req.resume();
  });
}
