// Forwarding an embeddings call to upstream channels: priority tiers, weighted choice, failover, Retry-After.
import type { ClientRequest } from 'node:http';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Platform } from '../platform.js';
import type { ChannelEntry } from '../channels/directory.js';
import { autoDisableChannel } from '../channels/store.js';
import { AppError } from '../errors.js';
import { float32View } from './float32.js';
import { redact } from '../logs/entries.js';
import { scrubSecret } from '../secrets.js';
import { OutboundRefusedError, type OutboundPolicy, outboundPolicy, policyRequest } from '../outbound.js';
import { providerFor } from '../channels/providers/registry.js';
import { type EmbedCall, forModel, isNoKey, openaiErrorMessage, type Provider, type ReadAnswer } from '../channels/providers/types.js';

export interface RelayResult {
  /** float32 little-endian, one per input, bit for bit as the upstream sent them. */
  vectors: Buffer[];
  /** The upstream's own count, when it reported one. */
  promptTokens: number | null;
  channel: ChannelEntry;
}

/** Highest priority first; inside a tier, a weighted random order (weight 0 goes last). */
export function channelOrder(channels: ChannelEntry[], random = Math.random): ChannelEntry[] {
  const tiers = new Map<number, ChannelEntry[]>();
  for (const c of channels) tiers.set(c.priority, [...(tiers.get(c.priority) ?? []), c]);
  const out: ChannelEntry[] = [];
  for (const priority of [...tiers.keys()].sort((a, b) => b - a)) {
    const left = [...tiers.get(priority)!];
    while (left.length) {
      const total = left.reduce((s, c) => s + Math.max(c.weight, 0), 0);
      let pick = 0;
      if (total > 0) {
        let r = random() * total;
        pick = left.findIndex((c) => (r -= Math.max(c.weight, 0)) < 0);
        if (pick < 0) pick = left.length - 1;
      }
      out.push(left.splice(pick, 1)[0]!);
    }
  }
  return out;
}

/** Retry-After (seconds or an HTTP date) or OpenAI's retry-after-ms, in milliseconds. */
export function retryAfterMs(headers: Headers): number | undefined {
  // At most a day: a channel's own number must not set it aside for ever (or past what a Date can hold).
  const bounded = (x: number) => Math.min(Math.max(0, x), MAX_COOLDOWN_MS);
  const ms = Number(headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return bounded(ms);
  const ra = headers.get('retry-after');
  if (!ra) return undefined;
  const secs = Number(ra);
  if (Number.isFinite(secs)) return bounded(secs * 1000);
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : bounded(date - Date.now());
}
const MAX_COOLDOWN_MS = 86_400_000;

// Read together (MGET): on a cluster, all in one slot.
const cooldownKey = (p: Platform, id: number) => p.keys.grouped('channel-cooldown', id);

/** How long this process trusts what it last read of a channel's cool-down (it learns its own 429s at once). */
const COOLDOWN_READ_MS = 250;
const cooldownsSeen = new WeakMap<Platform, Map<number, { until: number; readAt: number }>>();

/**
 * Channels cooling down, as this process knows it: read from Redis (where every process writes them)
 * at most every COOLDOWN_READ_MS per channel, not once per call. A cool-down set by another process
 * is seen within that time: at worst one more call meets the channel's 429, and sets it again.
 */
async function coolingUntil(p: Platform, channels: ChannelEntry[]): Promise<Map<number, number>> {
  let seen = cooldownsSeen.get(p);
  if (!seen) cooldownsSeen.set(p, (seen = new Map()));
  const now = Date.now();
  const stale = channels.filter((c) => (seen.get(c.id)?.readAt ?? 0) <= now - COOLDOWN_READ_MS);
  if (stale.length) {
    const values = await p.redis.mget(stale.map((c) => cooldownKey(p, c.id))).catch(() => null);
    // A 429 met by this process while the read was out is newer than what the read saw: keep the later of the two.
    if (values) stale.forEach((c, i) => seen.set(c.id, { until: Math.max(Number(values[i]) || 0, seen.get(c.id)?.until ?? 0), readAt: now }));
  }
  const out = new Map<number, number>();
  for (const c of channels) {
    const until = seen.get(c.id)?.until ?? 0;
    if (until > now) out.set(c.id, until);
  }
  return out;
}

/** Sets a channel aside for `waitMs`: in Redis for every process, and in this process's view at once. */
async function coolDown(p: Platform, channel: number, waitMs: number): Promise<void> {
  const until = Date.now() + waitMs;
  let seen = cooldownsSeen.get(p);
  if (!seen) cooldownsSeen.set(p, (seen = new Map()));
  seen.set(channel, { until, readAt: Date.now() });
  await p.redis.set(cooldownKey(p, channel), String(until), 'PX', Math.max(1, Math.ceil(waitMs))).catch(() => {});
}

/**
 * A batch's calls to one channel at once, in this process (BATCH_CHANNEL_CONCURRENCY): a batch's chunks (more of them
 * at once, BATCH_CONCURRENCY) queue here for a channel, so one chunk's call goes out while another stores its lines,
 * and a batch never takes more of a channel than that. Interactive calls do not wait here.
 */
const batchSlots = new WeakMap<Platform, Map<number, LimitFunction>>();
function batchSlot(p: Platform, channel: number): LimitFunction {
  let slots = batchSlots.get(p);
  if (!slots) batchSlots.set(p, (slots = new Map()));
  let slot = slots.get(channel);
  if (!slot) slots.set(channel, (slot = pLimit(p.config.BATCH_CHANNEL_CONCURRENCY)));
  return slot;
}

/** The most of a call's wait kept for the next channel while one is tried. */
const FAILOVER_RESERVE_MS = 10_000;

/** How long a channel that timed out is tried after the others (in this process): not set aside, since it may be the only one that answers. */
const SLOW_FOR_MS = 30_000;
const slowSeen = new WeakMap<Platform, Map<number, number>>();

function markSlow(p: Platform, channel: number): void {
  let slow = slowSeen.get(p);
  if (!slow) slowSeen.set(p, (slow = new Map()));
  slow.set(channel, Date.now() + SLOW_FOR_MS);
}

/** The same order, with the channels that timed out lately moved to the end: calls stop waiting on a channel that hangs. */
function afterTheSlow(p: Platform, order: ChannelEntry[]): ChannelEntry[] {
  const slow = slowSeen.get(p);
  if (!slow?.size) return order;
  const now = Date.now();
  const isSlow = (c: ChannelEntry) => (slow.get(c.id) ?? 0) > now;
  return [...order.filter((c) => !isSlow(c)), ...order.filter(isSlow)];
}

/**
 * The upstream's own error message when it answered OpenAI's error shape ({"error":{"message"}}
 * or {"error":"…"}). Anything else is described, never echoed: a base_url aimed at some other
 * service must not turn that service's answers into error messages. `scrub` runs before the message
 * is cut to 500 characters, so that a secret it removes cannot survive in part at the cut.
 */
/** Letters and digits only, lower-cased: how the key scrubber compares, so a quote is seen in any case or spacing. */
const alnum = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/**
 * Whether an upstream's error message quotes one of the call's inputs (its first 16 letters and digits, compared as the
 * key scrubber compares). Such a message is not shown: the caller knows what it sent, and cutting the channel's key out
 * of text the caller chose would tell them which of their guesses was a piece of the key (`***` or not).
 */
export function quotesInput(message: string, inputs: readonly string[]): boolean {
  const said = alnum(message);
  return inputs.some((input) => {
    // A quote of an input is cut with the message at 2,000 characters: what lies past that in the input is never seen.
    const start = alnum(input.slice(0, 2_048)).slice(0, 16);
    return start.length >= 8 && said.includes(start);
  });
}
const QUOTED_INPUT = 'the upstream refused the input (its message quoted the input, so it is not passed on)';

export function upstreamMessage(
  text: string,
  scrub: (s: string) => string = (s) => s,
  read: (body: unknown) => string | undefined = openaiErrorMessage,
): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text ? `a non-JSON answer (${Buffer.byteLength(text)} bytes)` : 'an empty answer';
  }
  const m = read(body);
  // Scrubbing looks at every few characters: a long message is cut first (to more than is kept, so a key at the cut is still seen whole).
  if (typeof m === 'string' && m) return scrub(m.slice(0, 2_000).replace(/\p{Cc}+/gu, ' ')).slice(0, 500);
  return "an answer without the provider's error message";
}

interface UpstreamResponse {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * POSTs to an upstream through the outbound policy (src/outbound.ts): the host is checked before
 * the request, and the socket connects only to an address the policy's lookup vetted after DNS
 * (TLS still verifies the URL's host name). Rejects with OutboundRefusedError, a network error, or
 * a TimeoutError after `timeoutMs` for the whole exchange.
 */
function postUpstream(
  policy: OutboundPolicy,
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  /** An answer longer than this is cut off and refused (an unusable answer, not one to hold in memory). */
  maxBytes: number,
): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    let request: ClientRequest;
    try {
      request = policyRequest(policy, new URL(url), { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } });
    } catch (err) {
      reject(err);
      return;
    }
    let timedOut: Error | undefined;
    const timer = setTimeout(() => {
      timedOut = Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' });
      request.destroy(timedOut);
    }, timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(timedOut ?? err);
    };
    request.on('error', fail);
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes > maxBytes) {
          request.destroy(Object.assign(new Error(`the upstream's answer passed ${maxBytes} bytes`), { code: 'EANSWERTOOBIG' }));
          return;
        }
        chunks.push(c);
      });
      res.on('error', fail);
      res.on('close', () => {
        if (!res.complete) fail(Object.assign(new Error('the upstream closed the connection mid-answer'), { code: 'ECONNRESET' }));
      });
      res.on('end', () => {
        clearTimeout(timer);
        try {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) {
            if (v !== undefined) for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
          }
          resolve({ status: res.statusCode ?? 0, headers: h, text: Buffer.concat(chunks).toString('utf8') });
        } catch (err) {
          fail(err as Error);
        }
      });
    });
    request.end(body);
  });
}

/** The longest vector taken from an upstream (OpenAI's models answer at most 3,072). */
const MAX_DIMENSIONS = 16_384;

/**
 * The tokens a relayed call is charged for: the upstream's usage.prompt_tokens, read as a whole number and
 * held to what its inputs could plausibly be in any tokenizer — 4 of ours each, plus 16 per input for the
 * tokens some models add, plus 64 — so that a channel reporting 9e15 tokens cannot empty its callers'
 * balances (its vectors are still good: the call is answered, and charged the bound). A count that is not
 * a number of tokens at all (missing, negative, fractional, a string) gives null: ours is used.
 */
export function reportedTokens(reported: unknown, ours: number, inputs: number): number | null {
  if (typeof reported !== 'number' || !Number.isSafeInteger(reported) || reported < 0) return null;
  return Math.min(reported, 4 * ours + 16 * inputs + 64);
}

/** An answer this channel will give again whatever we do (e.g. it ignores `dimensions`): no point asking it twice. */
class UnusableAnswer extends Error {}

function parseVectors(data: ReadAnswer['data'], expected: number, dimensions?: number): Buffer[] {
  if (!Array.isArray(data) || data.length !== expected) throw new Error(`expected ${expected} embeddings, got ${Array.isArray(data) ? data.length : 'none'}`);
  const out: Buffer[] = new Array(expected);
  data.forEach((d, i) => {
    if (typeof d !== 'object' || d === null) throw new Error(`embedding ${i} is not an object`);
    if (d.index !== undefined && !Number.isInteger(d.index)) throw new Error(`embedding ${i} has an index that is not a whole number`);
    const index = d.index ?? i;
    const e = d.embedding;
    let v: Buffer;
    if (typeof e === 'string') {
      // What we asked for: little-endian float32, base64, as OpenAI sends it. Node's decoder skips what is not
      // base64 (and reads the URL-safe alphabet too), so a cut or garbled answer could become a shorter vector:
      // only text that is exactly the standard encoding of what it decodes to is taken (for 8 KB, decoding,
      // re-encoding and comparing take ~4 µs here; a regular expression's scan and the decoding took ~17 µs).
      v = e.length % 4 === 0 ? Buffer.from(e, 'base64') : Buffer.alloc(0);
      if (v.length === 0 || v.toString('base64') !== e) throw new Error(`embedding ${i} is not base64`);
      if (v.length % 4 !== 0) throw new Error(`embedding ${i} is not base64 float32`);
    } else if (Array.isArray(e) && e.length > 0 && e.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      // An upstream that answers floats whatever was asked: each is read as the float32 nearest to it.
      const f = Float32Array.from(e as number[]);
      v = Buffer.from(f.buffer, f.byteOffset, f.byteLength);
    } else throw new Error(`embedding ${i} is not a list of numbers`);
    // NaN or infinity (or a double past float32's range) has no JSON form: the answer is unusable, not ours to bill.
    const floats = float32View(v);
    for (let k = 0; k < floats.length; k++) if (!Number.isFinite(floats[k])) throw new Error(`embedding ${i} holds a value that is not a finite float32`);
    const dims = floats.length;
    if (dims > MAX_DIMENSIONS) throw new Error(`embedding ${i} has ${dims} dimensions, more than ${MAX_DIMENSIONS}`);
    if (dimensions && dims !== dimensions) throw new UnusableAnswer(`embedding ${i} has ${dims} dimensions, not the ${dimensions} asked for`);
    if (index < 0 || index >= expected || out[index]) throw new Error(`embedding index ${index} is out of order`);
    out[index] = v;
  });
  return out;
}

/** Every vector of a call (its parts' together) of one length: without `dimensions` asked for, the first one's. */
function oneLength(out: Buffer[]): Buffer[] {
  for (const v of out)
    if (v.length !== out[0]!.length)
      throw new UnusableAnswer(`its embeddings are not all of one length (${out[0]!.length / 4} and ${v.length / 4} dimensions)`);
  return out;
}

// A channel's key, decrypted once per directory entry (the directory makes new entries when it re-reads channels).
const channelKeys = new WeakMap<ChannelEntry, string>();
function channelKeyOf(p: Platform, ch: ChannelEntry): string {
  let key = channelKeys.get(ch);
  if (key === undefined) channelKeys.set(ch, (key = p.secrets.decrypt(ch.keyEnc)));
  return key;
}

/**
 * Channels that refused encoding_format "base64" (some OpenAI-compatible servers take only "float"),
 * by id and base URL: asked for floats from then on, in this process.
 */
const floatOnly = new Set<string>();
const channelKey = (ch: ChannelEntry) => `${ch.id} ${ch.baseUrl}`;

/**
 * An upstream's message with the channel's secrets cut out: its key (not the no-key marker "none", a word messages
 * use), and the values of extra headers its config sends (an operator may put a gateway's key there).
 */
function scrubChannelSecrets(message: string, key: string, config: Record<string, unknown>): string {
  let out = isNoKey(key) ? message : scrubSecret(message, key);
  const headers = config.headers;
  if (typeof headers === 'object' && headers !== null)
    for (const v of Object.values(headers)) if (typeof v === 'string' && v.length >= 8) out = scrubSecret(out, v);
  return out;
}

const succeeded = (a: UpstreamResponse) => a.status >= 200 && a.status < 300;

/** A call's inputs in runs of at most `max` (one run when they fit). */
function partsOf<T>(inputs: T[], max: number): T[][] {
  if (inputs.length <= max) return [inputs];
  const out: T[][] = [];
  for (let i = 0; i < inputs.length; i += max) out.push(inputs.slice(i, i + max));
  return out;
}

/**
 * A call's successful answers read back by its provider, their vectors in input order; their token counts added up when
 * each part reported one. Not ok: why (`problem`), or the answer's text for the provider's own message.
 */
function readAnswers(
  provider: Provider,
  answers: UpstreamResponse[],
  parts: string[][],
  callOf: (part: number) => EmbedCall,
  dimensions: number | undefined,
): { ok: true; vectors: Buffer[]; promptTokens: unknown } | { ok: false; problem?: string; text: string; retriable: boolean } {
  const vectors: Buffer[] = [];
  let promptTokens: unknown = 0;
  for (const [i, a] of answers.entries()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(a.text);
    } catch {
      // JSON.parse's message quotes the text: say what it was, not what it said.
      return { ok: false, text: a.text, retriable: true };
    }
    try {
      const read = provider.read(parsed, callOf(i));
      vectors.push(...parseVectors(read.data, parts[i]!.length, dimensions));
      promptTokens = typeof promptTokens === 'number' && typeof read.promptTokens === 'number' ? promptTokens + read.promptTokens : undefined;
    } catch (err) {
      return { ok: false, problem: (err as Error).message, text: a.text, retriable: !(err instanceof UnusableAnswer) };
    }
  }
  try {
    return { ok: true, vectors: oneLength(vectors), promptTokens };
  } catch (err) {
    return { ok: false, problem: (err as Error).message, text: '', retriable: false };
  }
}

/** The caller's wait (SYNC_WAIT_MS) ran out: OpenAI's shape for a request that took too long. */
export const relayTimedOut = () =>
  new AppError(504, 'Embedding generation did not finish in time; try again.', { code: 'timeout', type: 'server_error', retriable: false });

/**
 * Calls the channels in order until one answers. 429 puts a channel aside for its Retry-After;
 * 5xx, 3xx, timeouts and network errors move on (a channel that timed out is tried last for a
 * while); 401/403 disable the channel (with the reason, for admins) and move on; other 4xx are the
 * caller's fault and end the call. Every channel rate limited answers 429 with the shortest wait.
 */
export async function relayEmbeddings(
  p: Platform,
  model: string,
  channels: ChannelEntry[],
  inputs: string[],
  opts: {
    dimensions?: number;
    /** The inputs' tokens as counted here: bounds what an upstream may report (see reportedTokens). */
    tokens: number;
    /** The inputs as the caller sent them, when they were token ids (`inputs` is their text): sent so where the provider takes them. */
    tokenIds?: number[][];
    /** When the caller stops waiting (epoch ms): no channel is tried after it, and none is waited on past it. */
    deadline?: number;
    /** Channels that refused their key earlier in this call: skipped; one that does now is added. */
    refused?: Set<number>;
    /** A batch's call: it takes a turn of the channel's batch slots (see batchSlot). */
    batch?: boolean;
  },
): Promise<RelayResult> {
  const { dimensions, tokens } = opts;
  const deadline = opts.deadline ?? Number.POSITIVE_INFINITY;
  const refused = opts.refused ?? new Set<number>();
  if (refused.size) {
    channels = channels.filter((c) => !refused.has(c.id));
    // Every channel refused its key (each is disabled now): another round would only ask them again.
    if (channels.length === 0)
      throw new AppError(502, `Upstream failure for '${model}': every channel refused its key`, {
        code: 'upstream_error',
        type: 'upstream_error',
        retriable: false,
      });
  }
  if (dimensions) {
    // Only the providers that shorten vectors are asked for a length: with none of those, the request is what fails.
    const able = channels.filter((c) => forModel(providerFor(c.type).dimensions, c.mapping[model] ?? model));
    if (able.length === 0) {
      const names = [...new Set(channels.map((c) => providerFor(c.type).label))].join(', ');
      throw new AppError(400, `The model '${model}' does not take 'dimensions': its upstream (${names}) cannot shorten its vectors.`, {
        code: 'unsupported_parameter',
        type: 'invalid_request_error',
        param: 'dimensions',
        retriable: false,
      });
    }
    channels = able;
  }
  const cooling = await coolingUntil(p, channels);
  const usable = afterTheSlow(p, channelOrder(channels.filter((c) => !cooling.has(c.id))));
  const rateLimited = (waits: number[]) =>
    new AppError(429, `Every upstream channel for '${model}' is rate limited; try again shortly.`, {
      code: 'upstream_rate_limited',
      type: 'rate_limit_error',
      // The shortest wait: the first channel back.
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(Math.min(...waits) / 1000))) },
      retriable: true,
    });
  if (usable.length === 0) throw rateLimited([...cooling.values()].map((until) => until - Date.now()));
  let last: { status: number; message: string; retriable?: boolean } = { status: 502, message: 'no channel answered' };
  // The channels set aside for a rate limit (before this call, or by their 429 in it), and for how long: when that is
  // every channel, the call answers 429 with the shortest wait; when some other channel failed otherwise, 502.
  const limitedFor = [...cooling.values()].map((until) => until - Date.now());
  let failedOtherwise = false;
  const policy = outboundPolicy(p.config.OUTBOUND_ALLOWLIST);
  for (const [n, ch] of usable.entries()) {
    const left = deadline - Date.now();
    // With another channel still to try, this one leaves a third of what is left (at most 10 s) for it: a channel that
    // hangs leaves time to fail over, and a slow one that answers still has most of the wait.
    const budget = Math.min(p.config.UPSTREAM_TIMEOUT_MS, n < usable.length - 1 ? left - Math.min(left / 3, FAILOVER_RESERVE_MS) : left);
    if (left <= 0) throw relayTimedOut();
    const provider = providerFor(ch.type);
    // base64 unless the provider cannot or the channel refused it: float32 bits as they are, a third of the bytes of printed floats.
    const format: EmbedCall['encoding'] = provider.base64 && !floatOnly.has(channelKey(ch)) ? 'base64' : 'float';
    const maxInputs = forModel(provider.maxInputs, ch.mapping[model] ?? model);
    const parts = partsOf(inputs, maxInputs);
    // Token ids go as they are to a provider that takes them; any other gets their text (`inputs`).
    const idParts = opts.tokenIds && provider.tokenArrays ? partsOf(opts.tokenIds, maxInputs) : undefined;
    const callOf = (part: number, encoding: EmbedCall['encoding']): EmbedCall => ({
      model: ch.mapping[model] ?? model,
      inputs: parts[part]!,
      dimensions,
      encoding,
      ...(idParts ? { tokenIds: idParts[part]! } : {}),
    });
    const send = async (part: number, encoding: EmbedCall['encoding']) => {
      const r = await provider.request({ baseUrl: ch.baseUrl, key: channelKeyOf(p, ch), config: ch.config }, callOf(part, encoding));
      // What one answer may weigh: its inputs' vectors at the longest we take, as printed floats.
      const maxBytes = Math.min(2 ** 28, 2 ** 20 + parts[part]!.length * 2 ** 18);
      return postUpstream(policy, r.url, r.headers, r.body, Math.max(1, Math.min(budget, deadline - Date.now())), maxBytes);
    };
    // More inputs than the provider takes in one call go as several calls (at most 4 at once); the first answer that is
    // not a success stands for them all.
    const post = (encoding: EmbedCall['encoding']) => {
      if (parts.length === 1) return send(0, encoding).then((a) => [a]);
      const limit = pLimit(4);
      return Promise.all(parts.map((_, i) => limit(() => send(i, encoding))));
    };
    const call = opts.batch ? (encoding: EmbedCall['encoding']) => batchSlot(p, ch.id)(() => post(encoding)) : post;
    // An upstream's words, with this channel's key (whatever its shape, whole or in part) cut out and anything else shaped
    // like a key cut to a hint: they may reach the caller.
    const said = (text: string) =>
      redact(
        upstreamMessage(
          text,
          (m) => (quotesInput(m, inputs) ? QUOTED_INPUT : scrubChannelSecrets(m, channelKeyOf(p, ch), ch.config)),
          (b) => provider.errorMessage(b),
        ),
        500,
      );
    let answers: UpstreamResponse[];
    try {
      answers = await call(format);
      const noBase64 = format === 'base64' && answers.some((a) => (a.status === 400 || a.status === 422) && /encoding|base64/i.test(a.text.slice(0, 4_096)));
      if (noBase64) {
        // The channel takes only floats (OpenAI's error shape or another, e.g. a 422 naming the field): ask again, and from now on.
        answers = await call('float');
        if (answers.every(succeeded)) floatOnly.add(channelKey(ch));
      }
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const timeout = e.name === 'TimeoutError';
      if (timeout) markSlow(p, ch.id);
      if (timeout && Date.now() >= deadline) throw relayTimedOut();
      failedOtherwise = true;
      if (err instanceof OutboundRefusedError) {
        last = { status: 502, message: `channel ${ch.id}: its base_url is refused by the outbound policy` };
        p.log.warn({ channel: ch.id, reason: err.reason }, 'upstream refused by the outbound policy');
        continue;
      }
      if (!(err instanceof Error) || !('code' in err || timeout)) {
        // Not the network's: the adapter could not build the request (a setting it needs, say).
        last = { status: 502, message: `channel ${ch.id} could not be asked: ${(err as Error).message}`.slice(0, 500) };
        p.log.warn({ channel: ch.id, err }, 'upstream request not built');
        continue;
      }
      last = { status: timeout ? 504 : 502, message: `channel ${ch.id} ${timeout ? 'timed out' : `unreachable (${e.code ?? 'network error'})`}` };
      p.log.warn({ channel: ch.id, err }, 'upstream call failed');
      continue;
    }
    const failedAnswer = answers.find((a) => !succeeded(a));
    if (!failedAnswer) {
      const read = readAnswers(provider, answers, parts, (part) => callOf(part, format), dimensions);
      if (read.ok) {
        slowSeen.get(p)?.delete(ch.id);
        return { vectors: read.vectors, promptTokens: reportedTokens(read.promptTokens, tokens, inputs.length), channel: ch };
      }
      failedOtherwise = true;
      // An answer it will give again (it ignores `dimensions`, say) makes trying this round again pointless.
      last = { status: 502, message: `channel ${ch.id} sent an unusable answer: ${read.problem ?? said(read.text)}`, retriable: read.retriable };
      continue;
    }
    const res = failedAnswer;
    const { text } = res;
    let errorBody: unknown;
    try {
      errorBody = JSON.parse(text);
    } catch {}
    const status = provider.status?.(res.status, errorBody, res.headers) ?? res.status;
    if (status !== 429) failedOtherwise = true;
    const message = said(text);
    if (status === 401 || status === 403) {
      refused.add(ch.id);
      await autoDisableChannel(p.db, ch.id, `upstream answered ${res.status}: ${message}`);
      p.channels.invalidate();
      p.log.warn({ channel: ch.id, status: res.status }, 'channel disabled: the upstream refused its key');
      last = { status: 502, message: `channel ${ch.id} refused its key` };
      continue;
    }
    if (status === 429) {
      const hint = provider.retryAfterMs?.(res.headers, errorBody);
      // A provider's own hint is held to a day, as Retry-After is (see retryAfterMs).
      const wait = retryAfterMs(res.headers) ?? (hint === undefined ? undefined : Math.min(Math.max(0, hint), MAX_COOLDOWN_MS)) ?? 5_000;
      await coolDown(p, ch.id, wait);
      limitedFor.push(wait);
      continue;
    }
    // A redirect is not followed (its target has not been through the outbound policy, and a channel's base_url is
    // where its calls go): the channel is misconfigured or moved, which is no fault of the request.
    if (status >= 500 || status === 408 || (status >= 300 && status < 400)) {
      last = { status: 502, message: `channel ${ch.id} answered ${res.status}: ${message}` };
      continue;
    }
    // The upstream says the request itself is wrong: no other channel will think otherwise.
    throw new AppError(status === 404 ? 404 : 400, `Upstream rejected the request: ${message}`, {
      code: status === 404 ? 'model_not_found' : 'upstream_rejected',
      type: 'invalid_request_error',
      retriable: false,
    });
  }
  if (!failedOtherwise && limitedFor.length) throw rateLimited(limitedFor);
  throw new AppError(last.status, `Upstream failure for '${model}': ${last.message}`, {
    code: 'upstream_error',
    type: 'upstream_error',
    retriable: last.retriable ?? true,
  });
}
