// Embeddings for the Batch API (src/batches): a line's body checked exactly as POST /v1/embeddings checks a request
// (the key's models, the model's limits, its tokens counted), and a chunk's lines embedded by the same code as the
// workers' jobs (the built-in models through their batchers, upstream models through the relay), each line's answer
// printed as /v1/embeddings prints it. Billing and storage are the batches area's.
import type { AuthUser } from '../accounts/auth.js';
import { AppError } from '../errors.js';
import type { Platform } from '../platform.js';
import { decodeVectors, responseJson } from './answer.js';
import { LOCAL_MODELS, resolveModel } from './models.js';
import { type GenerationRequest, MAX_INPUTS, MAX_REQUEST_TOKENS, parseEmbeddingsRequest } from './schema.js';
import { checkRequest } from './service.js';
import { vectorCache } from './upstream.js';

/** A checked line: what its embedding needs, and what it is charged for (its tokens). */
export interface BatchRequest {
  model: string;
  inputs: string[];
  tokens: number[];
  /** An upstream model's inputs as sent, when they were token ids (a built-in model needs only their text, `inputs`). */
  tokenIds?: number[][];
  dimensions?: number;
  base64: boolean;
}

/** The most dimensions an upstream model is asked for (its own default unknown here): what a line's floats are bounded by. */
const UPSTREAM_MAX_DIMENSIONS = 3072;

/** Who a batch runs for: its owner, and the models its API key may use. */
export interface BatchCaller {
  user: AuthUser;
  models: string | null;
}

/** One line's outcome: OpenAI's response body (as /v1/embeddings answers it) and its usage, or the error it got. */
export type BatchOutcome = { ok: true; body: string; promptTokens: number } | { ok: false; error: AppError };

/** A line's body, checked as POST /v1/embeddings checks a request; throws the same AppError it would answer. */
export async function checkBatchBody(p: Platform, caller: BatchCaller, body: unknown): Promise<BatchRequest & { floats: number }> {
  const req = parseEmbeddingsRequest(body);
  const { model, tokens } = await checkRequest(p, caller.user, caller.models, req);
  // At most this many vector components come back for the line (what its chunk's size is bounded by).
  const floats = req.inputs.length * (req.dimensions ?? (model.kind === 'local' ? model.defaultDimensions : UPSTREAM_MAX_DIMENSIONS));
  const tokenIds = model.kind === 'upstream' ? req.tokenIds : undefined;
  return {
    model: req.model,
    inputs: req.inputs,
    tokens,
    ...(tokenIds ? { tokenIds } : {}),
    dimensions: req.dimensions,
    base64: req.encodingFormat === 'base64',
    floats,
  };
}

/** The model's price per token for this caller (an upstream model's is its channels'). */
export async function modelPrice(p: Platform, user: AuthUser, model: string): Promise<number> {
  return (await resolveModel(p.config, p.channels, model, user)).price;
}

/** One request to the workers' code, and the lines whose inputs it carries (each a run of its inputs). */
interface Packed {
  request: GenerationRequest;
  lines: { index: number; from: number; count: number }[];
}

/**
 * A chunk's lines as requests: a built-in model's one per line (its batcher gathers the texts of all of them into
 * model calls as large as the model likes); an upstream model's packed, lines of the same dimensions together, into
 * requests of at most MAX_INPUTS inputs and MAX_REQUEST_TOKENS tokens, so a chunk makes a few upstream calls, not one
 * per line.
 */
function pack(caller: number, requests: BatchRequest[]): Packed[] {
  const out: Packed[] = [];
  const open = new Map<string, Packed & { tokens: number }>();
  requests.forEach((r, index) => {
    // A batch's lines run once: their vectors are looked up in the cache, never added to it (a corpus would flood it).
    const single = { model: r.model, dimensions: r.dimensions, inputs: r.inputs, tokens: r.tokens, tokenIds: r.tokenIds, caller, fillCache: false };
    if (LOCAL_MODELS.includes(r.model as never)) {
      out.push({ request: single, lines: [{ index, from: 0, count: r.inputs.length }] });
      return;
    }
    // Lines of token ids go together, apart from lines of text (a request's inputs are all ids or all text).
    const key = `${r.dimensions ?? 0} ${r.tokenIds ? 'ids' : 'text'}`;
    const lineTokens = r.tokens.reduce((a, b) => a + b, 0);
    let into = open.get(key);
    if (into && (into.request.inputs.length + r.inputs.length > MAX_INPUTS || into.tokens + lineTokens > MAX_REQUEST_TOKENS)) into = undefined;
    if (!into) {
      into = { request: { ...single, inputs: [], tokens: [], tokenIds: r.tokenIds && [] }, lines: [], tokens: 0 };
      open.set(key, into);
      out.push(into);
    }
    into.lines.push({ index, from: into.request.inputs.length, count: r.inputs.length });
    into.request.inputs.push(...r.inputs);
    into.request.tokens.push(...r.tokens);
    if (r.tokenIds) into.request.tokenIds!.push(...r.tokenIds);
    into.tokens += lineTokens;
  });
  return out;
}

/**
 * A chunk's lines, embedded together (see pack), in turns with the owner's other calls. A line's failure is its
 * outcome (a packed request's failure is each of its lines'); only a failure the whole chunk shares (its one request's
 * transient error) throws, for the chunk to be tried again. A line's usage is its own inputs' tokens.
 */
export async function embedBatch(p: Platform, caller: BatchCaller, requests: BatchRequest[]): Promise<BatchOutcome[]> {
  const { generate } = await import('./generate.js');
  const packed = pack(caller.user.id, requests);
  const outcomes = await generate(
    p,
    packed.map((x) => x.request),
  );
  const hot = vectorCache(p).hot;
  const answers: BatchOutcome[] = new Array(requests.length);
  await Promise.all(
    packed.flatMap((x, i) => {
      const o = outcomes[i]!;
      return x.lines.map(async ({ index, from, count }) => {
        if (!o.ok) {
          answers[index] = { ok: false, error: AppError.fromJSON(o.error) };
          return;
        }
        const r = requests[index]!;
        const promptTokens = x.lines.length === 1 ? o.promptTokens : r.tokens.reduce((a, b) => a + b, 0);
        const vectors = await decodeVectors(o.vectors.slice(from, from + count));
        answers[index] = { ok: true, body: (await responseJson(r.model, { vectors, promptTokens }, r.base64, hot)).toString(), promptTokens };
      });
    }),
  );
  return answers;
}
export { costOf } from './models.js';
export { MAX_FLOATS_PER_REQUEST } from './schema.js';
