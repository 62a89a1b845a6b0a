// Upstream models: vectors from the cache, or relayed to the channels by the API process that got the call.
import type { Platform } from '../platform.js';
import { sha256Hex } from '../secrets.js';
import { toAppError } from '../errors.js';
import { costOf, type ResolvedModel } from './models.js';
import { relayEmbeddings, relayTimedOut } from './relay.js';
import type { GenerationRequest } from './schema.js';
import { readCache, writeCache } from './store.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export interface UpstreamVectors {
  /** float32 little-endian, one per input: as the upstream sent them, or as the cache kept them. */
  vectors: Buffer[];
  promptTokens: number;
  channelId?: number;
}

/** An upstream model's vectors for one call: from the cache where it has them, the rest relayed once each. */
export async function upstreamVectors(
  p: Platform,
  model: Extract<ResolvedModel, { kind: 'upstream' }>,
  req: GenerationRequest,
  deadline = Number.POSITIVE_INFINITY,
): Promise<UpstreamVectors> {
  const dims = req.dimensions ?? 0; // 0 = "the upstream's default"
  const hashes = req.inputs.map((text) => sha256Hex(text));
  const cached = p.config.EMBEDDINGS_CACHE ? await readCache(p.db, model.name, dims, hashes) : new Map();
  // Each distinct input that is not cached goes upstream once.
  const missing = [...new Set(hashes.filter((h) => !cached.has(h)))];
  const sentUpstream = new Set(missing);
  const vectorByHash = new Map<string, Buffer>([...cached].map(([h, c]) => [h, c.vector]));
  let promptTokens = 0;
  let channelId: number | undefined;
  if (missing.length) {
    const textOf = new Map(hashes.map((h, i) => [h, req.inputs[i]!]));
    const tokensOf = new Map(hashes.map((h, i) => [h, req.tokens[i]!]));
    const relayed = await relayEmbeddings(
      p,
      model.name,
      model.channels,
      missing.map((h) => textOf.get(h)!),
      req.dimensions,
      deadline,
    );
    channelId = relayed.channel.id;
    const rows = missing.map((h, i) => {
      const v = relayed.vectors[i]!;
      return { hash: h, vector: Buffer.from(v.buffer, v.byteOffset, v.byteLength), tokens: tokensOf.get(h)! };
    });
    for (const r of rows) vectorByHash.set(r.hash, r.vector);
    if (p.config.EMBEDDINGS_CACHE) await writeCache(p.db, model.name, dims, rows);
    promptTokens += relayed.promptTokens ?? sum(rows.map((r) => r.tokens));
    p.channels.recordUsage(relayed.channel.id, costOf(relayed.promptTokens ?? sum(rows.map((r) => r.tokens)), model.price));
  }
  // Inputs answered from the cache count with their own tokens (they are billed like any other).
  hashes.forEach((h, i) => {
    if (sentUpstream.has(h))
      sentUpstream.delete(h); // its first occurrence is in the upstream's count
    else promptTokens += req.tokens[i]!;
  });
  return { vectors: hashes.map((h) => vectorByHash.get(h)!), promptTokens, channelId };
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
): Promise<UpstreamVectors> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await upstreamVectors(p, model, req, deadline);
    } catch (raw) {
      const err = toAppError(raw);
      if (!err.retriable || err.status === 429 || attempt >= RELAY_ATTEMPTS) throw err;
      const delay = RELAY_BACKOFF_MS * 2 ** (attempt - 1) * (1 - 0.5 * Math.random());
      if (Date.now() + delay >= deadline) throw relayTimedOut();
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
