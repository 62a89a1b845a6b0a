// Area A's request rules (OpenAI's embeddings API) and the embeddings.create job's payload and result.
import { z } from 'zod';
import { badRequest } from '../http/errors.js';

export const MAX_INPUTS = 2048;
export const MAX_INPUT_TOKENS = 8192;
export const MAX_REQUEST_TOKENS = 300_000;

export interface EmbeddingsRequest {
  model: string;
  inputs: string[];
  encodingFormat: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

const invalid = (message: string, param: string | null, code: string | null = null) =>
  badRequest(message, { param, code: code ?? undefined, type: 'invalid_request_error' });

/** Validates an embeddings body the way OpenAI does; the body's `model` wins over the path's. */
export function parseEmbeddingsRequest(body: unknown, pathModel?: string): EmbeddingsRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('The request body must be a JSON object.', null);
  }
  const b = body as Record<string, unknown>;
  const model = b.model ?? pathModel;
  if (model === undefined || model === null || model === '') throw invalid('You must provide a model parameter.', 'model');
  if (typeof model !== 'string' || model.length > 200) throw invalid("Invalid type for 'model': expected a string of at most 200 characters.", 'model');

  const input = b.input;
  if (input === undefined || input === null) throw invalid("Missing required parameter: 'input'.", 'input');
  let inputs: string[];
  if (typeof input === 'string') inputs = [input];
  else if (Array.isArray(input)) {
    if (input.length === 0) throw invalid("'input' must not be an empty array.", 'input');
    if (input.length > MAX_INPUTS) throw invalid(`'input' has ${input.length} items; at most ${MAX_INPUTS} are allowed.`, 'input');
    const bad = input.findIndex((x) => typeof x !== 'string');
    if (bad >= 0) throw invalid(`Invalid type for 'input[${bad}]': expected a string, but got ${describe(input[bad])}.`, `input[${bad}]`);
    inputs = input as string[];
  } else throw invalid(`Invalid type for 'input': expected a string or an array of strings, but got ${describe(input)}.`, 'input');
  const empty = inputs.findIndex((x) => x === '');
  if (empty >= 0) throw invalid(`'input${Array.isArray(input) ? `[${empty}]` : ''}' must not be an empty string.`, Array.isArray(input) ? `input[${empty}]` : 'input');

  const format = b.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    throw invalid(`Invalid value for 'encoding_format': expected 'float' or 'base64', but got ${JSON.stringify(format)}.`, 'encoding_format');
  }
  let dimensions: number | undefined;
  if (b.dimensions !== undefined && b.dimensions !== null) {
    if (typeof b.dimensions !== 'number' || !Number.isInteger(b.dimensions)) throw invalid("Invalid type for 'dimensions': expected an integer.", 'dimensions');
    if (b.dimensions < 1) throw invalid(`Invalid 'dimensions': ${b.dimensions} is less than the minimum of 1.`, 'dimensions');
    dimensions = b.dimensions;
  }
  if (b.user !== undefined && typeof b.user !== 'string') throw invalid("Invalid type for 'user': expected a string.", 'user');
  return { model, inputs, encodingFormat: format, dimensions, user: b.user as string | undefined };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** One embeddings call inside a job: the API has already checked it and counted its tokens. */
export const generationRequest = z.object({
  model: z.string().min(1),
  /** Requested dimensions; omitted means the model's default. */
  dimensions: z.number().int().positive().optional(),
  inputs: z.array(z.string()).min(1).max(MAX_INPUTS),
  /** cl100k_base token count of each input. */
  tokens: z.array(z.number().int().nonnegative()),
});
export type GenerationRequest = z.output<typeof generationRequest>;

/** Local-model calls arriving together share one job; an upstream call has a job of its own. */
export const generationPayload = z.object({ requests: z.array(generationRequest).min(1).max(256) });

export type GenerationOutcome =
  | { ok: true; vectors: string[]; promptTokens: number; channelId?: number }
  | { ok: false; error: { status: number; message: string; code?: string; type?: string; param?: string | null; headers?: Record<string, string> } };

export function float32ToBase64(v: Float32Array): string {
  // Float32Array is little-endian on every platform Node runs on; OpenAI's base64 is LE float32 too.
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

export function base64ToFloats(b64: string): Float32Array {
  const buf = Buffer.from(b64, 'base64');
  // A Float32Array view needs 4-byte alignment; pooled Buffers do not promise it.
  const bytes = buf.byteOffset % 4 === 0 ? buf : new Uint8Array(buf);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}
