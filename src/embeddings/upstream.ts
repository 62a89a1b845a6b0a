// Upstream models: vectors from the cache, or relayed to the channels by the API process that got the call.
import { createHash } from 'node:crypto';
import type { Platform } from '../platform.js';
import { sha256Hex } from '../secrets.js';
import { toAppError } from '../errors.js';
import { assertTaken, ledgerOps, type Payer, type Reservation } from '../accounts/ledger.js';
import type { LogEntry } from '../logs/schema.js';
import { costOf, type ResolvedModel } from './models.js';
import { relayEmbeddings, relayTimedOut } from './relay.js';
import type { GenerationRequest } from './schema.js';
import { type CachedVector, VectorCache } from './store.js';
import { UpstreamCalls } from './calls.js';
import { servesEveryone } from '../channels/directory.js';
import { providerFor } from '../channels/providers/registry.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

type UpstreamModel = Extract<ResolvedModel, { kind: 'upstream' }>;

export interface UpstreamVectors {
  /** One per input: float32 little-endian, as the upstream sent them or as the cache kept them. */
  vectors: CachedVector[];
  /** Each vector's key in the process's hot cache (for keeping its printed form there), when caching is on. */
  keys?: string[];
  promptTokens: number;
  /** The channel that answered; none when every input came from the cache. */
  channelId?: number;
  /** What the channel's part of the call costs (its tokens at the model's price): added to the channel's used_quota once the call is charged. */
  channelQuota?: number;
  /**
   * Vectors the upstream sent for this call, for the cache: only a channel that serves everyone (root's) fills it. The
   * cache is shared by all callers, and a vector from an admin's channel must never reach a caller it does not serve.
   */
  fresh: { hash: string; vector: Buffer; tokens: number }[];
}

/** What the cache holds for a call's inputs. */
export interface CacheLookup {
  hashes: string[];
  found: Map<string, CachedVector>;
}

// Per Platform: the cache (its hot vectors in this process) and the shared round trips.
const states = new WeakMap<Platform, { cache: VectorCache; calls: UpstreamCalls }>();
function state(p: Platform) {
  let s = states.get(p);
  if (!s) {
    s = { cache: new VectorCache(p.db, p.config.EMBEDDINGS_CACHE ? p.config.EMBEDDINGS_MEMORY_CACHE_MB * 2 ** 20 : 0), calls: new UpstreamCalls(p.db) };
    states.set(p, s);
  }
  return s;
}
export const vectorCache = (p: Platform): VectorCache => state(p).cache;

const dimsKey = (req: GenerationRequest) => req.dimensions ?? 0; // 0 = "the upstream's default"

/** Marks token ids' cache keys: a byte that UTF-8 text never holds. */
const TOKEN_IDS = Uint8Array.of(0xff);

/**
 * Each input's key in the vector cache: its text's SHA-256, or for token ids the SHA-256 of a 0xFF byte and the ids
 * as 32-bit integers — no text has such a key. So token ids and the text they decode to are cached apart: to an upstream
 * that takes ids they are another request (the ids need not be how the upstream would split the text, nor its model
 * one of cl100k_base), and which channel will answer is not known when the cache is read. Ids answered by a channel that
 * takes only text (it got their text) are cached as the ids' vectors: every channel of a model serves that one model.
 */
export function inputHashes(req: Pick<GenerationRequest, 'inputs' | 'tokenIds'>): string[] {
  if (!req.tokenIds) return req.inputs.map((text) => sha256Hex(text));
  return req.tokenIds.map((ids) =>
    createHash('sha256')
      .update(TOKEN_IDS)
      .update(new Uint8Array(Uint32Array.from(ids).buffer))
      .digest('hex'),
  );
}

const keysOf = (p: Platform, model: string, req: GenerationRequest, hashes: string[]) =>
  p.config.EMBEDDINGS_CACHE ? hashes.map((h) => VectorCache.key(model, dimsKey(req), h)) : undefined;

/** An upstream model's vectors for one call: those `lookup` found, the rest relayed once each (and returned as `fresh`). */
export async function upstreamVectors(
  p: Platform,
  model: UpstreamModel,
  req: GenerationRequest,
  deadline: number,
  lookup: CacheLookup,
  /** Channels that refused their key earlier in this call (disabled then): not tried again. */
  refused?: Set<number>,
  /** A batch's lines (see relayEmbeddings). */
  batch?: boolean,
): Promise<UpstreamVectors> {
  const { hashes, found } = lookup;
  // Each distinct input that is not cached goes upstream once.
  const missing = [...new Set(hashes.filter((h) => !found.has(h)))];
  const sentUpstream = new Set(missing);
  const vectorByHash = new Map(found);
  let promptTokens = 0;
  let channelId: number | undefined;
  let channelQuota: number | undefined;
  let fresh: UpstreamVectors['fresh'] = [];
  if (missing.length) {
    const textOf = new Map(hashes.map((h, i) => [h, req.inputs[i]!]));
    const tokensOf = new Map(hashes.map((h, i) => [h, req.tokens[i]!]));
    const idsOf = req.tokenIds && new Map(hashes.map((h, i) => [h, req.tokenIds![i]!]));
    const relayed = await relayEmbeddings(
      p,
      model.name,
      model.channels,
      missing.map((h) => textOf.get(h)!),
      {
        dimensions: req.dimensions,
        tokens: sum(missing.map((h) => tokensOf.get(h)!)),
        tokenIds: idsOf && missing.map((h) => idsOf.get(h)!),
        deadline,
        refused,
        batch,
      },
    );
    channelId = relayed.channel.id;
    const answered = missing.map((h, i) => ({ hash: h, vector: relayed.vectors[i]!, tokens: tokensOf.get(h)! }));
    for (const r of answered) vectorByHash.set(r.hash, { vector: r.vector, tokens: r.tokens });
    if (servesEveryone(relayed.channel)) fresh = answered;
    // A text's usage is the upstream's own count when it gives one (bounded by the relay). Token ids sent as they are
    // count as given; sent as their text (a provider that takes only text), they count as given or as the upstream
    // counted that text, whichever is more (the text may split into more tokens than the ids were).
    const given = sum(answered.map((r) => r.tokens));
    const asText = req.tokenIds && !providerFor(relayed.channel.type).tokenArrays;
    const relayedTokens = req.tokenIds ? (asText ? Math.max(given, relayed.promptTokens ?? 0) : given) : (relayed.promptTokens ?? given);
    promptTokens += relayedTokens;
    channelQuota = costOf(relayedTokens, model.price);
  }
  // Inputs answered from the cache count with their own tokens (they are billed like any other).
  hashes.forEach((h, i) => {
    if (sentUpstream.has(h))
      sentUpstream.delete(h); // its first occurrence is in the upstream's count
    else promptTokens += req.tokens[i]!;
  });
  return { vectors: hashes.map((h) => vectorByHash.get(h)!), keys: keysOf(p, model.name, req, hashes), promptTokens, channelId, channelQuota, fresh };
}

/** A worker's upstream call (a batch's lines, or a job queued by an older API): the cache read, the relay, the cache write (unless `fillCache: false`). */
export async function upstreamJob(p: Platform, model: UpstreamModel, req: GenerationRequest): Promise<UpstreamVectors> {
  const hashes = inputHashes(req);
  const cache = vectorCache(p);
  const found = p.config.EMBEDDINGS_CACHE ? await cache.lookup(model.name, dimsKey(req), hashes) : new Map<string, CachedVector>();
  // A request that does not fill the cache is a batch's (src/embeddings/batch-service.ts).
  const r = await upstreamVectors(p, model, req, Number.POSITIVE_INFINITY, { hashes, found }, undefined, req.fillCache === false);
  if (p.config.EMBEDDINGS_CACHE && req.fillCache !== false) await cache.store(model.name, dimsKey(req), r.fresh);
  if (r.channelId !== undefined) p.channels.recordUsage(r.channelId, r.channelQuota ?? 0);
  return r;
}

/** Who pays for a call, and the log rows it writes. */
export interface Bill {
  payer: Payer;
  /** What the call is reserved for (its tokens at the model's price). */
  cost: number;
  /** The consume row of an answered call. */
  consume(answer: { promptTokens: number; channelId?: number }): LogEntry;
  /** The error row of a failed call. */
  failure(err: unknown): LogEntry;
}

/**
 * An upstream model's call, paid for: answered from the cache when it holds every input (charged in
 * the same statement that read the cache, or in one statement when this process holds them all in
 * memory), else reserved, relayed (relayCall) and settled in the statement that caches the new
 * vectors. A failed call gives its reservation back with its error row.
 */
export async function billedUpstreamCall<T>(
  p: Platform,
  model: UpstreamModel,
  req: GenerationRequest,
  bill: Bill,
  /** Makes the response; it runs while the statement that charges the call is out, and is answered once that has committed. */
  render: (answer: UpstreamVectors) => T,
): Promise<T> {
  const { cache, calls } = state(p);
  const dims = dimsKey(req);
  const hashes = inputHashes(req);
  const found = new Map<string, CachedVector>();
  const cold = new Set<string>();
  if (p.config.EMBEDDINGS_CACHE) {
    for (const h of hashes) {
      if (found.has(h) || cold.has(h)) continue;
      const v = cache.hot.get(VectorCache.key(model.name, dims, h));
      if (v) found.set(h, v);
      else cold.add(h);
    }
  }
  const cachedAnswer = (): UpstreamVectors => ({
    vectors: hashes.map((h) => found.get(h)!),
    keys: keysOf(p, model.name, req, hashes),
    promptTokens: sum(req.tokens),
    fresh: [],
  });
  const hitCost = costOf(sum(req.tokens), model.price);

  if (p.config.EMBEDDINGS_CACHE && cold.size === 0) {
    // All in this process's memory: charged in one statement (the ledger's).
    // Printed before it is charged (a printed form is usually kept already): a vector that cannot be printed is not billed.
    const answer = cachedAnswer();
    const response = render(answer);
    assertTaken(await p.ledger.charge(bill.payer, hitCost, bill.consume(answer)), hitCost);
    return response;
  }
  let reservation: Reservation;
  if (p.config.EMBEDDINGS_CACHE) {
    const held = p.ledger.prepareReservation(bill.payer, bill.cost);
    reservation = held.reservation;
    const begun = await calls.begin({
      model: model.name,
      dimensions: dims,
      hashes: [...cold],
      charge: ledgerOps.charge(bill.payer, hitCost, bill.consume({ promptTokens: sum(req.tokens) })),
      reserve: bill.cost > 0 ? held.op : null,
    });
    for (const [h, v] of begun.found) {
      cache.hot.set(VectorCache.key(model.name, dims, h), v);
      found.set(h, v);
    }
    if (begun.charged) {
      assertTaken(begun.taken, hitCost);
      return render(cachedAnswer());
    }
    assertTaken(begun.taken, bill.cost);
  } else {
    const held = await p.ledger.reserve(bill.payer, bill.cost);
    assertTaken(held, bill.cost);
    reservation = held.reservation;
  }

  let answer: UpstreamVectors;
  try {
    answer = await relayCall(p, model, req, p.config.SYNC_WAIT_MS, { hashes, found });
  } catch (err) {
    // The refund and the call's error row (type 5) in one statement.
    await p.ledger.refund(reservation, bill.failure(err)).catch((e) => p.log.error({ err: e }, 'quota refund failed'));
    throw err;
  }
  const consume = bill.consume(answer);
  const actual = costOf(answer.promptTokens, model.price);
  const settled = p.config.EMBEDDINGS_CACHE
    ? calls.finish({ model: model.name, dimensions: dims, rows: answer.fresh, settle: ledgerOps.settle(reservation, actual, consume) })
    : p.ledger.settle(reservation, actual, consume);
  // Charged: the channel's spend counts (a call refunded below never does), whether or not its answer can be printed.
  settled.then(
    () => answer.channelId !== undefined && p.channels.recordUsage(answer.channelId, answer.channelQuota ?? 0),
    () => {},
  );
  // Printing the vectors overlaps the statement's round trip; nothing is answered before it commits.
  let response: T;
  try {
    response = render(answer);
  } finally {
    await settled.catch(async (err) => {
      // Neither the charge nor its row was written: the reservation goes back, with an error row.
      await p.ledger.refund(reservation, bill.failure(err)).catch((e) => p.log.error({ err: e }, 'quota refund failed'));
      throw err;
    });
  }
  return response;
}

const RELAY_ATTEMPTS = 3;
const RELAY_BACKOFF_MS = 500;

/**
 * An upstream call, relayed by the process that received it: relaying is waiting on the network, and a
 * queue hop would only add latency and CPU (the queue is for work that computes). When every channel
 * failed or timed out, the call is tried again as the job used to be: three attempts in all, 500 ms then
 * 1 s apart (up to half less, at random). Every channel rate limited answers 429 at once, with the
 * shortest Retry-After, for the client to wait on. The whole call ends by `waitMs` (SYNC_WAIT_MS) with 504.
 */
export async function relayCall(
  p: Platform,
  model: Extract<ResolvedModel, { kind: 'upstream' }>,
  req: GenerationRequest,
  waitMs: number,
  lookup: CacheLookup,
): Promise<UpstreamVectors> {
  const deadline = Date.now() + waitMs;
  const refused = new Set<number>();
  for (let attempt = 1; ; attempt++) {
    try {
      return await upstreamVectors(p, model, req, deadline, lookup, refused);
    } catch (raw) {
      const err = toAppError(raw);
      if (!err.retriable || err.status === 429 || attempt >= RELAY_ATTEMPTS) throw err;
      const delay = RELAY_BACKOFF_MS * 2 ** (attempt - 1) * (1 - 0.5 * Math.random());
      if (Date.now() + delay >= deadline) throw relayTimedOut();
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
