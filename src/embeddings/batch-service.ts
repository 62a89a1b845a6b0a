// Embeddings for the Batch API (src/batches): a line's body checked exactly as POST /v1/embeddings checks a request
// (the key's models, the model's limits, its tokens counted), and a chunk's lines embedded by the same code as the
// workers' jobs (the built-in models through their batchers, upstream models through the relay), each line's answer
// printed as /v1/embeddings prints it. Billing and storage are the batches area's.
import type { AuthUser } from '../accounts/auth.js';
import { AppError } from '../errors.js';
import type { Platform } from '../platform.js';
import { decodeVectors, responseJson } from './answer.js';
import { resolveModel } from './models.js';
import { parseEmbeddingsRequest } from './schema.js';
import { checkRequest } from './service.js';
import { vectorCache } from './upstream.js';

/** A checked line: what its embedding needs, and what it is charged for (its tokens). */
export interface BatchRequest {
  model: string;
  inputs: string[];
  tokens: number[];
  dimensions?: number;
  base64: boolean;
}

/** Who a batch runs for: its owner, and the models its API key may use. */
export interface BatchCaller {
  user: AuthUser;
  models: string | null;
}

/** One line's outcome: OpenAI's response body (as /v1/embeddings answers it) and its usage, or the error it got. */
export type BatchOutcome = { ok: true; body: string; promptTokens: number } | { ok: false; error: AppError };

/** A line's body, checked as POST /v1/embeddings checks a request; throws the same AppError it would answer. */
export async function checkBatchBody(p: Platform, caller: BatchCaller, body: unknown): Promise<BatchRequest> {
  const req = parseEmbeddingsRequest(body);
  const { tokens } = await checkRequest(p, caller.user, caller.models, req);
  return { model: req.model, inputs: req.inputs, tokens, dimensions: req.dimensions, base64: req.encodingFormat === 'base64' };
}

/** The model's price per token for this caller (an upstream model's is its channels'). */
export async function modelPrice(p: Platform, user: AuthUser, model: string): Promise<number> {
  return (await resolveModel(p.config, p.channels, model, user)).price;
}

/**
 * A chunk's lines, embedded together (the built-in models batch them as they like; upstream calls go out at once), in
 * turns with the owner's other calls. A line's failure is its outcome; only a failure the whole chunk shares (a
 * single line's transient error) throws, for the chunk to be tried again.
 */
export async function embedBatch(p: Platform, caller: BatchCaller, requests: BatchRequest[]): Promise<BatchOutcome[]> {
  const { generate } = await import('./generate.js');
  const outcomes = await generate(
    p,
    requests.map((r) => ({ model: r.model, dimensions: r.dimensions, inputs: r.inputs, tokens: r.tokens, caller: caller.user.id })),
  );
  const hot = vectorCache(p).hot;
  return Promise.all(
    outcomes.map(async (o, i): Promise<BatchOutcome> => {
      if (!o.ok) return { ok: false, error: AppError.fromJSON(o.error) };
      const r = requests[i]!;
      const body = await responseJson(r.model, { vectors: await decodeVectors(o.vectors), promptTokens: o.promptTokens }, r.base64, hot);
      return { ok: true, body: body.toString(), promptTokens: o.promptTokens };
    }),
  );
}
export { costOf } from './models.js';
