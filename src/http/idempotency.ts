// Idempotency-Key (Stripe's semantics, the IETF httpapi draft) for the endpoints declared `idempotent: true`.
// The same key from the same user with the same request (method, path, query, body) within IDEMPOTENCY_TTL_SECONDS
// answers what the first one answered, marked `Idempotent-Replayed: true`; one still running answers 409 with
// Retry-After; the same key with another request answers 422. Records live in Redis, where the jobs are: one key per
// (user, key), claimed atomically (a Lua script), on a cluster in the slot of its own hash tag.
import crypto from 'node:crypto';
import type { Context } from 'koa';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../accounts/auth.js';
import { AppError, badRequest, toAppError } from '../errors.js';
import { STATE_MAP } from '../jobs/client.js';
import type { Platform } from '../platform.js';
import type { Redis } from '../redis.js';
import { type JobIdempotency, writeAccepted } from './jobs.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** Stripe's bound on a key's length. */
export const MAX_KEY_LENGTH = 255;
/** An answer is kept (sealed) up to this size; a larger one is remembered as done but not kept. */
export const MAX_KEPT_BODY_BYTES = 64 * 1024;
/** How long past SYNC_WAIT_MS a claim holds without renewal: the claiming process died, and the key is free again. */
const LOCK_SLACK_MS = 30_000;
/** What a duplicate of a request still running is told to wait before it tries again. */
const RETRY_AFTER_SECONDS = 1;
/** The answer headers a replay repeats (the rest are the server's own, written again). */
const KEPT_HEADERS = ['content-type', 'location', 'content-security-policy', 'x-total-count'];

/** What Redis holds for one (user, key); `t` is the claiming request's token, `f` the request's fingerprint. */
interface Kept {
  t: string;
  f: string;
  /** Done: the answer below is final. */
  d?: 1;
  /** The answer's status. */
  s?: number;
  h?: Record<string, string>;
  /** The body, sealed with SECRET_KEY: JSON of [kind, value]. */
  b?: string;
  /** An AppError answered (4xx), sealed: replayed through the area's error writer. */
  e?: string;
  /** The answer came from this job: rebuilt from it (its result lives where the job's results live, never here). */
  j?: string;
  /** Done, but the answer was too large (or a stream) to keep. */
  g?: 1;
}

// KEYS[1] the record; ARGV: the running record, the claim's lifetime (ms). The record already there, or nil once claimed.
const CLAIM = `
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`;

// KEYS[1] the record; ARGV: the claim's token, 'renew' (ARGV[3] ms) | 'set' (ARGV[3] the record, ARGV[4] seconds) | 'del'.
// Acts only while the record is still this claim's: one that lapsed and was claimed again is the other request's.
const OWNED = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).t ~= ARGV[1] then return 0 end
if ARGV[2] == 'renew' then return redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if ARGV[2] == 'set' then redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4]) return 1 end
return redis.call('DEL', KEYS[1])`;

/** The two scripts as commands of their own on each connection: ioredis sends EVALSHA (the script text only once). */
interface IdempotencyCommands {
  idempotencyClaim(key: string, record: string, lockMs: number): Promise<string | null>;
  idempotencyOwned(key: string, token: string, ...args: (string | number)[]): Promise<number>;
}
const defined = new WeakSet<Redis>();
function commands(redis: Redis): IdempotencyCommands {
  if (!defined.has(redis)) {
    redis.defineCommand('idempotencyClaim', { numberOfKeys: 1, lua: CLAIM });
    redis.defineCommand('idempotencyOwned', { numberOfKeys: 1, lua: OWNED });
    defined.add(redis);
  }
  return redis as unknown as IdempotencyCommands;
}

const invalidKey = () =>
  badRequest(`Idempotency-Key must be 1-${MAX_KEY_LENGTH} printable ASCII characters (a UUID is a good one), bare or as a quoted string`, {
    code: 'invalid_idempotency_key',
  });

/** The key as sent: bare (Stripe) or an RFC 8941 string (the IETF draft: `"8e03978e-…"`). */
export function parseKey(raw: string | string[]): string {
  if (Array.isArray(raw)) throw invalidKey();
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(raw);
  const key = quoted ? quoted[1]!.replace(/\\(["\\])/g, '$1') : raw;
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key)) throw invalidKey();
  return key;
}

/** JSON with every object's keys sorted: the same body however its fields are ordered. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

const without = (o: unknown, name: string | undefined): unknown => {
  if (!name || !o || typeof o !== 'object' || Array.isArray(o) || !(name in o)) return o;
  const { [name]: _dropped, ...rest } = o as Record<string, unknown>;
  return rest;
};

/**
 * What makes two requests the same: method, path, query and body (JSON canonicalised, text as sent), hashed. The
 * parameter a credential travels in (msOauth2api's `password`) is left out: the key is already the caller's own.
 */
export function fingerprint(ctx: Context, credentialParam?: string): string {
  const body = ctx.request.body;
  const h = crypto.createHash('sha256');
  h.update(`${ctx.method}\n${ctx.path}\n${canonical(without(ctx.query, credentialParam))}\n`);
  h.update(typeof body === 'string' ? `t${body}` : body === undefined ? '-' : `j${canonical(without(body, credentialParam))}`);
  return h.digest('base64url');
}

/** Keys are per user: the record's name is the user's id and a digest of the key (the key itself may be anything). */
const recordKey = (p: Platform, userId: number, key: string) =>
  p.keys.of('idempotency', `${userId}:${crypto.createHash('sha256').update(key).digest('hex').slice(0, 32)}`);

/** Answers not kept: the request may be tried again with the same key (nothing was done, or a job id makes it safe). */
const released = (status: number) => status >= 500 || status === 408 || status === 429;

/**
 * Runs `run` (the endpoint's handler, writing its answer on ctx) at most once per (user, key, request). Called only
 * when the request carries the header; the key is checked, the request claimed, and the answer kept, or a kept
 * answer replayed.
 */
export async function idempotently(ctx: Context, p: Platform, principal: Principal, credentialParam: string | undefined, run: () => Promise<void>) {
  const key = parseKey(ctx.headers[IDEMPOTENCY_HEADER]!);
  const fp = fingerprint(ctx, credentialParam);
  const rkey = recordKey(p, principal.user.id, key);
  const token = uuidv7();
  const lockMs = p.config.SYNC_WAIT_MS + LOCK_SLACK_MS;
  const redis = commands(p.redis);
  const found = await redis.idempotencyClaim(rkey, JSON.stringify({ t: token, f: fp } satisfies Kept), lockMs);
  if (found !== null) return replay(ctx, p, JSON.parse(found) as Kept, fp);

  // A job the handler runs gets an id derived from the user, the key and the request (runJobForRequest).
  const forJob: JobIdempotency = { seed: `${principal.user.id}\n${key}\n${fp}` };
  ctx.state.idempotency = forJob;
  const renew = setInterval(() => void redis.idempotencyOwned(rkey, token, 'renew', lockMs).catch(() => {}), lockMs / 3);
  renew.unref();
  // The answer is kept as it leaves, not before: the command is on the connection ahead of any later claim this
  // process sends, so a request sent again once this one is answered finds it (from another API process, one that
  // comes within that round trip may still read 409). Not kept (Redis went away): the claim lapses after lockMs, and
  // a request sent again runs again (a job's id derived from the key makes that safe).
  const settle = (record: Kept | undefined) => {
    clearInterval(renew);
    const args = record ? ['set', JSON.stringify(record), p.config.IDEMPOTENCY_TTL_SECONDS] : ['del'];
    redis.idempotencyOwned(rkey, token, ...args).catch((err) => ctx.state.log?.warn({ err }, 'could not keep an idempotent answer'));
  };
  try {
    await run();
  } catch (raw) {
    const err = toAppError(raw);
    settle(released(err.status) ? undefined : { t: token, f: fp, d: 1, s: err.status, e: p.secrets.encrypt(JSON.stringify(err.toJSON())) });
    throw raw;
  }
  settle(released(ctx.status) ? undefined : kept(ctx, p, token, fp, forJob.jobId));
}

/** The answer on ctx as Redis keeps it: a job's id (rebuilt on replay), or the body sealed, or "too big". */
function kept(ctx: Context, p: Platform, token: string, fp: string, jobId: string | undefined): Kept {
  const h: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const v = ctx.response.get(name);
    if (v) h[name] = String(v);
  }
  const record: Kept = { t: token, f: fp, d: 1, s: ctx.status, h };
  if (jobId) return { ...record, j: jobId };
  const body: unknown = ctx.body;
  const packed =
    body === null || body === undefined
      ? ['none', null]
      : Buffer.isBuffer(body)
        ? ['bytes', body.toString('base64')]
        : typeof body === 'string'
          ? ['text', body]
          : typeof (body as { pipe?: unknown }).pipe === 'function'
            ? undefined
            : ['json', body];
  const json = packed && JSON.stringify(packed);
  if (!json || Buffer.byteLength(json) > MAX_KEPT_BODY_BYTES) return { ...record, g: 1 };
  return { ...record, b: p.secrets.encrypt(json) };
}

const answerGone = (why: string) =>
  new AppError(410, `This Idempotency-Key's request was done already; ${why}. It was not done again: use a new key for a new request`, {
    code: 'idempotent_answer_gone',
  });

/** A second request with a key already claimed: 422, 409 or the first answer again. */
async function replay(ctx: Context, p: Platform, record: Kept, fp: string): Promise<void> {
  if (record.f !== fp) {
    throw new AppError(422, 'This Idempotency-Key was used for another request (method, path or body differ): use a new key for a new request', {
      code: 'idempotency_key_reused',
    });
  }
  if (!record.d) {
    throw new AppError(409, 'A request with this Idempotency-Key is still running: try again shortly for its answer', {
      code: 'idempotency_key_in_use',
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
  ctx.set(REPLAYED_HEADER, 'true');
  if (record.e) throw AppError.fromJSON(JSON.parse(p.secrets.decrypt(record.e)));
  if (record.g) throw answerGone('its answer was too large to keep');
  if (record.j) return replayJob(ctx, p, record.j, record.s!);
  const [kind, value] = JSON.parse(p.secrets.decrypt(record.b!)) as [string, unknown];
  ctx.status = record.s!;
  ctx.body = kind === 'bytes' ? Buffer.from(value as string, 'base64') : value;
  for (const [name, v] of Object.entries(record.h ?? {})) ctx.set(name, v);
}

/** A job-backed answer again, from the job: 202 with its state now, or its result (where results live: never in this record). */
async function replayJob(ctx: Context, p: Platform, jobId: string, status: number): Promise<void> {
  const job = await p.jobs.getJob(jobId);
  if (!job) throw answerGone(`its job ${jobId} is no longer kept (JOB_KEEP_COMPLETED_SECONDS)`);
  const final = status === 202 ? undefined : await p.jobs.finalState(jobId);
  if (final?.type === 'completed') {
    ctx.status = status;
    ctx.body = final.result;
    return;
  }
  if (final?.type === 'failed') throw final.error;
  writeAccepted(ctx, jobId, STATE_MAP[await job.getState()] ?? 'waiting');
}
