// The embeddings.create job, run by workers: the built-in models' vectors. (Upstream calls are relayed
// by the API itself, src/embeddings/upstream.ts; a job for one, queued by an older API, is still run.)
import type { Platform } from '../platform.js';
import { toAppError } from '../errors.js';
import { embedLocalHash, LOCAL_HASH_MODEL } from './local-hash.js';
import { resolveModel } from './models.js';
import { getUser } from '../accounts/store.js';
import { float32ToBase64, type GenerationOutcome, type GenerationRequest } from './schema.js';
import { upstreamJob } from './upstream.js';
import { USE_LITE_MODEL } from './use-lite-text.js';
import { announceUseLite, useLiteBatcher, warmUpUseLite, withdrawUseLite } from './use-lite-worker.js';
import { goneError, isGone, listenForGone, stopListeningForGone } from './gone.js';
import { ModelBatcher, type Requester } from './model-batcher.js';
import { bigWorkTurn, mapInTurns } from './turns.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * The first `dims` components, re-normalised to unit length: what OpenAI's text-embedding-3 models
 * answer for a smaller `dimensions` (and what their documentation says to do by hand).
 */
export function shorten(v: Float32Array, dims: number): Float32Array {
  if (dims >= v.length) return v;
  const out = v.slice(0, dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) norm += out[i]! * out[i]!;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < dims; i++) out[i]! *= scale;
  return out;
}

/**
 * local-hash-v1's work goes through a batcher too, though it needs no model: in slices of ~8K characters, callers
 * taking turns and a slice of more than a sentence's work waiting for its turn among all big work (turns.ts), so one
 * caller's 2048 long inputs (~0.3 s of hashing) hold another's one sentence for a slice, not for all of them, and do
 * not stall the process's Redis and Postgres traffic.
 */
interface HashItem {
  text: string;
  dims: number;
}
const LOCAL_HASH_COST_PER_CALL = 8_192;
/** A slice costing more than this (a few hundred µs) waits for its turn among all big work (turns.ts); a sentence's does not. */
const LOCAL_HASH_TURN_COST = 4_096;
const hashCost = ({ text, dims }: HashItem) => text.length + dims / 4;
const localHash = new ModelBatcher<HashItem>(
  async () => ({
    embed: async (items) => {
      if (items.reduce((sum, item) => sum + hashCost(item), 0) > LOCAL_HASH_TURN_COST) await bigWorkTurn();
      return items.map(({ text, dims }) => embedLocalHash(text, dims));
    },
  }),
  4_096,
  0,
  { cost: hashCost, max: LOCAL_HASH_COST_PER_CALL },
);

/** Floats encoded in one turn of the event loop at most (~2 ms), in an answer of more than 65,536. */
const BASE64_SLICE_FLOATS = 65_536;

/** Vectors as base64: a big answer's (2048 × 1024 floats: ~20–60 ms in one go) in slices, taking turns with other big work. */
const toBase64 = (vectors: Float32Array[]): Promise<string[]> => mapInTurns(vectors, float32ToBase64, (v) => v.length, BASE64_SLICE_FLOATS);

/** Worker start: hear which calls are abandoned, and load use-lite. */
export async function warmUpEmbeddings(p: Platform): Promise<void> {
  await listenForGone(p);
  await warmUpUseLite(p);
}

/** Worker stop. */
export async function stopEmbeddings(p: Platform): Promise<void> {
  await withdrawUseLite(p);
  await stopListeningForGone(p);
}

async function generateOne(p: Platform, req: GenerationRequest): Promise<GenerationOutcome> {
  // Built-in models first: no caller to look up on the hot path. An upstream job names its caller by id (an older
  // API's job without one may use only the channels that serve everyone).
  const local = req.model === LOCAL_HASH_MODEL || req.model === USE_LITE_MODEL;
  const caller = local || req.caller === undefined ? null : ((await getUser(p.db, req.caller)) ?? null);
  const model = await resolveModel(p.config, p.channels, req.model, caller);
  if (model.kind === 'local') {
    const dims = req.dimensions ?? model.defaultDimensions;
    const who: Requester = { caller: req.caller, gone: () => isGone(p, req) };
    if (model.name === USE_LITE_MODEL) {
      const vectors = await useLiteBatcher(p).embed(req.inputs, who);
      announceUseLite(p);
      return { ok: true, vectors: vectors.map((v) => float32ToBase64(shorten(v, dims))), promptTokens: sum(req.tokens) };
    }
    const vectors = await localHash.embed(
      req.inputs.map((text) => ({ text, dims })),
      who,
    );
    return { ok: true, vectors: await toBase64(vectors), promptTokens: sum(req.tokens) };
  }
  const r = await upstreamJob(p, model, req);
  return { ok: true, vectors: r.vectors.map((v) => v.vector.toString('base64')), promptTokens: r.promptTokens, channelId: r.channelId };
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
        const err = toAppError(goneError(raw));
        if (requests.length === 1 && err.retriable) throw raw;
        return { ok: false, error: err.toJSON() };
      }
    }),
  );
}
