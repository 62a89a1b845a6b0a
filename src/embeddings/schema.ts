// The embeddings area's request rules (OpenAI's embeddings API) and the embeddings.create job's payload and result.
import { z } from 'zod';
import { badRequest, type AppError } from '../errors.js';
import { BPE_IDS, decodeTokens, isToken, tokenBytes } from './tokenizer.js';

export const MAX_INPUTS = 2048;
export const MAX_INPUT_TOKENS = 8192;
export const MAX_REQUEST_TOKENS = 300_000;
/**
 * The most vector components (inputs × dimensions) one request may ask a local model for: 2^21,
 * e.g. 2048 inputs at 1024 dimensions, 682 at 3072, or every input count at the default 384. It
 * bounds what one free call makes us compute and carry: 8 MiB of float32, ~11 MiB as the job's
 * base64 result, ~25 MB as a float JSON answer — where 2048 × 3072 (the other limits alone) is
 * 6.3 M floats, a ~34 MB result, past Redis's default 32 MB pub/sub client-output-buffer limit.
 * Upstream models are bounded by their own providers. Checked before quota is reserved or a job
 * enqueued; the coalescer also never puts more than this into one job.
 */
export const MAX_FLOATS_PER_REQUEST = 2_097_152;

export interface EmbeddingsRequest {
  model: string;
  /** The inputs' text: as sent, or the text of the token ids sent (decoded with cl100k_base). */
  inputs: string[];
  /** The inputs as sent, when they were token ids (cl100k_base): one array per input. */
  tokenIds?: number[][];
  encodingFormat: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  /** use-lite only: embed text the model does not know (e.g. Chinese) instead of refusing it. */
  allowUnsupportedText: boolean;
}

/** A cl100k_base text token id, as `input` may hold them (in the documentation: they are checked by hand, see tokenInputs). */
const tokenId = z
  .number()
  .int()
  .min(0)
  .max(BPE_IDS - 1);

/** The body of POST /v1/embeddings: validates requests and documents them (/openapi.json). */
export const embeddingsBody = z.object({
  model: z.string().max(200).nullish().describe('Model id; the path model of /v1/engines/{model}/embeddings is the fallback (also for an empty or null one)'),
  input: z
    .union([
      z.string().min(1),
      z.array(z.string().min(1)).min(1).max(MAX_INPUTS),
      z.array(tokenId).min(1).max(MAX_INPUT_TOKENS),
      z.array(z.array(tokenId).min(1).max(MAX_INPUT_TOKENS)).min(1).max(MAX_INPUTS),
    ])
    .describe(
      `A string, an array of up to ${MAX_INPUTS} strings, an array of token ids (cl100k_base), or an array of up to ${MAX_INPUTS} such arrays; each input at most ${MAX_INPUT_TOKENS} tokens, ${MAX_REQUEST_TOKENS} in all`,
    ),
  encoding_format: z.enum(['float', 'base64']).default('float').describe('base64: little-endian float32, as OpenAI'),
  dimensions: z
    .number()
    .int()
    .min(1)
    .nullish()
    .describe('Vector size (local-hash-v1: 1-3072, default 384; use-lite: 1-512, default 512, fewer = truncated and re-normalised)'),
  user: z.string().max(1000).optional(),
  allow_unsupported_text: z
    .boolean()
    .optional()
    .describe('use-lite only (a Switchyard extension): embed text in scripts the model does not know (Chinese, Cyrillic…) instead of answering 400'),
});

/** OpenAI's answer: one vector per input, in input order (base64 strings with encoding_format base64). */
export const embeddingsResponseView = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ object: z.literal('embedding'), index: z.number(), embedding: z.union([z.array(z.number()), z.string()]) })),
  model: z.string(),
  usage: z.object({ prompt_tokens: z.number(), total_tokens: z.number() }),
});

/** OpenAI's model object: GET /v1/models/:model, and each model GET /v1/models lists. */
export const modelView = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().describe('Unix seconds'),
  owned_by: z.string().describe("'switchyard' for a built-in model, 'upstream' for one a channel serves"),
});

/** OpenAI's model list: GET /v1/models, the models the key may use. */
export const modelListView = z.object({ object: z.literal('list'), data: z.array(modelView) });

/** String.prototype.toWellFormed (Node 20; not yet in this TypeScript's lib): lone surrogates become U+FFFD. */
const wellFormed = (t: string): string => (t as string & { toWellFormed(): string }).toWellFormed();

const invalid = (message: string, param: string | null, code: string | null = null) =>
  badRequest(message, { param, code: code ?? undefined, type: 'invalid_request_error' });

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** zod's first complaint about `input`, in OpenAI's words and with its param. */
function inputError(input: unknown): AppError {
  if (input === undefined || input === null) return invalid("Missing required parameter: 'input'.", 'input');
  if (typeof input === 'string') return invalid("'input' must not be an empty string.", 'input');
  if (!Array.isArray(input))
    return invalid(`Invalid type for 'input': expected a string, an array of strings, or token ids, but got ${describe(input)}.`, 'input');
  if (input.length === 0) return invalid("'input' must not be an empty array.", 'input');
  if (input.length > MAX_INPUTS) return invalid(`'input' has ${input.length} items; at most ${MAX_INPUTS} are allowed.`, 'input');
  const bad = input.findIndex((x) => typeof x !== 'string');
  if (bad >= 0) return invalid(`Invalid type for 'input[${bad}]': expected a string, but got ${describe(input[bad])}.`, `input[${bad}]`);
  const empty = input.indexOf('');
  return invalid(`'input[${empty}]' must not be an empty string.`, `input[${empty}]`);
}

/**
 * The 400 for a local-model request over MAX_FLOATS_PER_REQUEST, or undefined when within it. It
 * names `dimensions` when the caller chose them (fewer would do), else `input` (fewer inputs would).
 */
export function floatsBoundError(model: string, inputs: number, dimensions: number, explicitDimensions: boolean): AppError | undefined {
  const floats = inputs * dimensions;
  if (floats <= MAX_FLOATS_PER_REQUEST) return undefined;
  const what = `${inputs} inputs × ${dimensions} dimensions is ${floats} floats, more than the ${MAX_FLOATS_PER_REQUEST} one request to ${model} may ask for`;
  const maxDims = Math.floor(MAX_FLOATS_PER_REQUEST / inputs);
  const maxInputs = Math.floor(MAX_FLOATS_PER_REQUEST / dimensions);
  return explicitDimensions && maxDims >= 1
    ? invalid(
        `Invalid 'dimensions': ${what}. Ask for at most ${maxDims} dimensions, or send at most ${maxInputs} inputs per request.`,
        'dimensions',
        'max_floats_per_request',
      )
    : invalid(`Invalid 'input': ${what}. Send at most ${maxInputs} inputs per request.`, 'input', 'max_floats_per_request');
}

/** Whether `input` is token ids: an array whose first item is a number (one input) or an array (several inputs). */
const isTokenInput = (input: unknown): input is unknown[] =>
  Array.isArray(input) && input.length > 0 && (typeof input[0] === 'number' || Array.isArray(input[0]));

/**
 * The most bytes of text an input's tokens may stand for: 8 a token, as text is bounded at 8 characters a token
 * (input-limits.ts) — 65,536 for an input, 2,400,000 for a request. cl100k's tokens stand for at most 128 bytes, so
 * without this 300,000 tokens could be 38 MB of text for a built-in model to embed, the cache to hash and a job to carry.
 */
const TEXT_BYTES_PER_TOKEN = 8;

/**
 * Token ids as OpenAI takes them (one array, or an array of arrays), checked in one loop (zod's union would describe
 * each of 300,000 ids' failure to be a string) and decoded: bounded as text is — at most 2048 inputs, 8192 tokens each,
 * 300,000 in all, none empty — each id a cl100k_base token, and the text they stand for bounded (TEXT_BYTES_PER_TOKEN).
 */
function tokenInputs(input: unknown[]): { tokenIds: number[][]; inputs: string[] } {
  const several = Array.isArray(input[0]);
  const arrays = several ? input : [input];
  if (arrays.length > MAX_INPUTS) throw invalid(`'input' has ${arrays.length} items; at most ${MAX_INPUTS} are allowed.`, 'input');
  let tokens = 0;
  let bytes = 0;
  arrays.forEach((ids, i) => {
    const at = several ? `input[${i}]` : 'input';
    if (!Array.isArray(ids)) throw invalid(`Invalid type for '${at}': expected an array of token ids, but got ${describe(ids)}.`, at);
    if (ids.length === 0) throw invalid(`'${at}' must not be an empty array.`, at);
    if (ids.length > MAX_INPUT_TOKENS)
      throw invalid(
        `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, but ${at} has ${ids.length} tokens. Shorten it.`,
        at,
        'context_length_exceeded',
      );
    tokens += ids.length;
    if (tokens > MAX_REQUEST_TOKENS)
      throw invalid(`The request has more than ${MAX_REQUEST_TOKENS} tokens in all; send fewer inputs per request.`, 'input', 'max_tokens_per_request');
    for (let j = 0; j < ids.length; j++) {
      const id: unknown = ids[j];
      // Only the byte-pair tokens: a special token (<|endoftext|>…) is several tokens of text once decoded, and tiktoken
      // (so LangChain) never sends one unless asked to.
      if (typeof id === 'number' && id < BPE_IDS && isToken(id)) continue;
      const item = `${at}[${j}]`;
      throw typeof id === 'number'
        ? invalid(`Invalid value for '${item}': ${id} is not a cl100k_base token id (an integer from 0 to ${BPE_IDS - 1}; special tokens are not taken).`, item)
        : invalid(`Invalid type for '${item}': expected a token id (an integer), but got ${describe(id)}.`, item);
    }
    const n = tokenBytes(ids);
    if (n > MAX_INPUT_TOKENS * TEXT_BYTES_PER_TOKEN)
      throw invalid(
        `${at} stands for ${n} bytes of text, more than the ${MAX_INPUT_TOKENS * TEXT_BYTES_PER_TOKEN} an input may have (${TEXT_BYTES_PER_TOKEN} per token). Shorten it.`,
        at,
        'context_length_exceeded',
      );
    bytes += n;
    if (bytes > MAX_REQUEST_TOKENS * TEXT_BYTES_PER_TOKEN)
      throw invalid(
        `The request's tokens stand for more than ${MAX_REQUEST_TOKENS * TEXT_BYTES_PER_TOKEN} bytes of text in all (${TEXT_BYTES_PER_TOKEN} per token); send fewer inputs per request.`,
        'input',
        'max_tokens_per_request',
      );
  });
  const tokenIds = arrays as number[][];
  return { tokenIds, inputs: tokenIds.map(decodeTokens) };
}

/** Validates an embeddings body the way OpenAI does; the body's `model` wins over the path's. */
export function parseEmbeddingsRequest(body: unknown, pathModel?: string): EmbeddingsRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('The request body must be a JSON object.', null);
  const b = body as Record<string, unknown>;
  // Token ids are checked by tokenInputs (after the other fields: zod sees a stand-in for them).
  const tokens = isTokenInput(b.input);
  const r = embeddingsBody.safeParse(tokens ? { ...b, input: '-' } : b);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const field = String(issue.path[0] ?? '');
    if (field === 'input') throw inputError(b.input);
    if (field === 'model') throw invalid("Invalid type for 'model': expected a string of at most 200 characters.", 'model');
    if (field === 'encoding_format')
      throw invalid(`Invalid value for 'encoding_format': expected 'float' or 'base64', but got ${JSON.stringify(b.encoding_format)}.`, 'encoding_format');
    if (field === 'dimensions') {
      throw invalid(
        typeof b.dimensions === 'number' && Number.isInteger(b.dimensions)
          ? `Invalid 'dimensions': ${b.dimensions} is less than the minimum of 1.`
          : "Invalid type for 'dimensions': expected an integer.",
        'dimensions',
      );
    }
    if (field === 'allow_unsupported_text') throw invalid("Invalid type for 'allow_unsupported_text': expected a boolean.", field);
    throw invalid(`Invalid '${field}': ${issue.message}`, field || null);
  }
  const model = r.data.model || pathModel;
  if (!model) throw invalid('You must provide a model parameter.', 'model');
  return {
    model,
    ...(tokens
      ? tokenInputs(b.input as unknown[])
      : // A lone surrogate has no UTF-8 form: as U+FFFD here, so the text hashed for the cache, counted and sent upstream is one text.
        { inputs: (typeof r.data.input === 'string' ? [r.data.input] : (r.data.input as string[])).map(wellFormed) }),
    encodingFormat: r.data.encoding_format,
    dimensions: r.data.dimensions ?? undefined,
    user: r.data.user,
    allowUnsupportedText: r.data.allow_unsupported_text ?? false,
  };
}

/** POST /v1/embeddings and /v1/engines/:model/embeddings: the body as OpenAI reads it, the path's model its fallback. */
export const parseEmbeddingsBody = (raw: unknown, path: Record<string, string>): EmbeddingsRequest => parseEmbeddingsRequest(raw, path.model);

/** One embeddings call inside a job: the API has already checked it and counted its tokens. */
export const generationRequest = z.object({
  model: z.string().min(1),
  /** Requested dimensions; omitted means the model's default. */
  dimensions: z.number().int().positive().optional(),
  inputs: z.array(z.string()).min(1).max(MAX_INPUTS),
  /**
   * An upstream model's inputs as the caller sent them, when they were token ids (`inputs` holds their text): relayed so
   * to providers that take them, cached apart from text (upstream.ts), and their count is the usage.
   */
  tokenIds: z.array(z.array(z.number().int().nonnegative())).optional(),
  /** Token count of each input: cl100k_base, or the model's own pieces for use-lite (what usage reports). */
  tokens: z.array(z.number().int().nonnegative()),
  /** Whose call it is (a user id): the workers share model time fairly between callers (a job may hold several). */
  caller: z.number().int().optional(),
  /** The call's id, which the API names on the gone channel (src/embeddings/gone.ts) when its client leaves. */
  call: z.string().max(64).optional(),
  /** When the caller stops waiting (epoch ms): texts not embedded by then are dropped. */
  deadline: z.number().int().optional(),
  /** false: an upstream model's vectors are looked up in the cache but not added to it (a batch's lines run once). */
  fillCache: z.boolean().optional(),
});
export type GenerationRequest = z.output<typeof generationRequest>;

/** Local-model calls arriving together share one job; an upstream call has a job of its own. */
export const generationPayload = z.object({ requests: z.array(generationRequest).min(1).max(256) });
export type GenerationPayload = z.output<typeof generationPayload>;

export type GenerationOutcome =
  | { ok: true; vectors: string[]; promptTokens: number; channelId?: number }
  | { ok: false; error: { status: number; message: string; code?: string; type?: string; param?: string | null; headers?: Record<string, string> } };

export function float32ToBase64(v: Float32Array): string {
  // Float32Array is little-endian on every platform Node runs on; OpenAI's base64 is LE float32 too.
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}
