// The embeddings.create job: local vectors computed here, upstream ones through the cache and the relay.
import type { Platform } from '../platform.js';
import { sha256Hex } from '../secrets.js';
import { addChannelUsage } from '../channels/store.js';
import { toAppError } from '../errors.js';
import { embedLocalHash } from './local-hash.js';
import { costOf, resolveModel } from './models.js';
import { relayEmbeddings } from './relay.js';
import { float32ToBase64, type GenerationOutcome, type GenerationRequest } from './schema.js';
import { readCache, writeCache } from './store.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

async function generateOne(p: Platform, req: GenerationRequest): Promise<GenerationOutcome> {
  const model = await resolveModel(p.config, p.channels, req.model);
  if (model.kind === 'local') {
    const dims = req.dimensions ?? model.defaultDimensions;
    return { ok: true, vectors: req.inputs.map((text) => float32ToBase64(embedLocalHash(text, dims))), promptTokens: sum(req.tokens) };
  }

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
    );
    channelId = relayed.channel.id;
    const rows = missing.map((h, i) => {
      const v = relayed.vectors[i]!;
      return { hash: h, vector: Buffer.from(v.buffer, v.byteOffset, v.byteLength), tokens: tokensOf.get(h)! };
    });
    for (const r of rows) vectorByHash.set(r.hash, r.vector);
    if (p.config.EMBEDDINGS_CACHE) await writeCache(p.db, model.name, dims, rows);
    promptTokens += relayed.promptTokens ?? sum(rows.map((r) => r.tokens));
    await addChannelUsage(p.db, relayed.channel.id, costOf(relayed.promptTokens ?? sum(rows.map((r) => r.tokens)), model.price)).catch(() => {});
  }
  // Inputs answered from the cache count with their own tokens (they are billed like any other).
  hashes.forEach((h, i) => {
    if (sentUpstream.has(h))
      sentUpstream.delete(h); // its first occurrence is in the upstream's count
    else promptTokens += req.tokens[i]!;
  });
  return { ok: true, vectors: hashes.map((h) => vectorByHash.get(h)!.toString('base64')), promptTokens, channelId };
}

/**
 * Runs every request of the job. A request's own failure becomes its outcome, so one bad call
 * does not fail the others sharing the job; a job with a single request rethrows transient
 * failures instead, so BullMQ retries it with backoff.
 */
export async function generate(p: Platform, requests: GenerationRequest[]): Promise<GenerationOutcome[]> {
  return Promise.all(
    requests.map(async (req): Promise<GenerationOutcome> => {
      try {
        return await generateOne(p, req);
      } catch (raw) {
        const err = toAppError(raw);
        if (requests.length === 1 && err.retriable) throw raw;
        return { ok: false, error: err.toJSON() };
      }
    }),
  );
}
