// What a provider adapter is: how one upstream's embeddings API is asked (URL, auth, body) for an OpenAI-shaped call,
// how its answer is read back into OpenAI's shape, and what it cannot do. The relay (src/embeddings/relay.ts) does the
// rest the same for every provider: the outbound policy, failover, cool-downs, disabling a channel that refuses its key,
// quota and the batch work. Adding a provider: one file here, one line in registry.ts, its fake in test/helpers.
import type { z } from 'zod';

export { isNoKey } from './no-key.js';

/** One upstream call, as the relay asks it of a channel. */
export interface EmbedCall {
  /** The model as the upstream names it (the channel's model_mapping applied). */
  model: string;
  inputs: string[];
  /** Asked only of a provider with `dimensions: true`. */
  dimensions?: number;
  /** What the relay would like back: base64 (little-endian float32) is cheaper to read; asked only where `base64: true`. */
  encoding: 'base64' | 'float';
  /**
   * The inputs as the caller sent them, token ids (cl100k_base), when they came so and the provider has `tokenArrays`:
   * send these instead of `inputs` (which then hold their decoded text, for anything else that needs the text).
   */
  tokenIds?: number[][];
}

/** A channel as its adapter needs it: the key in clear (only in the relay, never stored or logged so). */
export interface ChannelAccess {
  baseUrl: string;
  key: string;
  /** The channel's `config`, as the provider's own schema parsed it. */
  config: Record<string, unknown>;
}

export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A 2xx answer read back: one entry per input, in OpenAI's `data` shape (index optional: input order). */
export interface ReadAnswer {
  data: { index?: number; embedding: unknown }[];
  /** The upstream's own token count, when it reports one (held to a bound by the relay). */
  promptTokens?: unknown;
}

/** A field of a provider's `config`, for the console's channel form and the docs. */
export interface ConfigField {
  name: string;
  /** What to fill in: English, short; the console translates by name. */
  label: string;
  required?: boolean;
  placeholder?: string;
}

export interface Provider {
  /** Its name in the API (`type` of a channel). */
  type: string;
  /** one-api's channel type number, where one-api has one for it (a channel may be made with either). */
  oneApiType: number | null;
  label: string;
  /** The base URL used when a channel gives none; null: a channel must give one. */
  defaultBaseUrl: string | null;
  /** Why a key cannot be this provider's (its shape), checked when a channel is saved; never quotes the key. */
  keyProblem?(key: string): string | undefined;
  /** The channel's `config` for this provider: checked when a channel is saved ({} when none is given). */
  config: z.ZodType<Record<string, unknown>>;
  configFields: readonly ConfigField[];
  /** Inputs one upstream call may carry (for this upstream model): the relay splits a larger call. */
  maxInputs: number | ((model: string) => number);
  /** Whether it honours `dimensions` (for this upstream model); else a call with dimensions is 400 unless another channel can. */
  dimensions: boolean | ((model: string) => boolean);
  /** Whether it can send base64 float32 (else floats are asked for, and the relay encodes for the caller). */
  base64: boolean;
  /** Whether it takes inputs as token id arrays (see EmbedCall.tokenIds); others get the ids decoded to text. */
  tokenArrays?: boolean;
  /** The upstream request for one call (async: a signature may need hashing). */
  request(ch: ChannelAccess, call: EmbedCall): UpstreamRequest | Promise<UpstreamRequest>;
  /** A 2xx answer's parsed JSON read back; throws (Error) when it is not an answer to this call. */
  read(body: unknown, call: EmbedCall): ReadAnswer;
  /** The provider's own error message in an error answer's parsed JSON, if it has one. */
  errorMessage(body: unknown): string | undefined;
  /** A rate-limited answer's wait beyond Retry-After (a header or body of the provider's own), in ms. */
  retryAfterMs?(headers: Headers, body: unknown): number | undefined;
  /** The status to act on, where the provider's differs from HTTP's meaning (e.g. a throttle sent as 400). */
  status?(status: number, body: unknown, headers: Headers): number;
}

/**
 * OpenAI's error shapes ({"error":{"message"}} or {"error":"…"}): the message, if the body is one. Nothing else is read:
 * a base URL aimed at some other service must not turn its answers into error messages (a provider whose errors have
 * another shape reads that shape only).
 */
export function openaiErrorMessage(body: unknown): string | undefined {
  const e = (body as { error?: unknown } | null)?.error;
  if (typeof e === 'string' && e) return e;
  const m = (e as { message?: unknown } | null | undefined)?.message;
  return typeof m === 'string' && m ? m : undefined;
}

/** A provider's limit or ability for one upstream model. */
export const forModel = <T>(v: T | ((model: string) => T), model: string): T => (typeof v === 'function' ? (v as (model: string) => T)(model) : v);

/** Joins a base URL (no trailing slash) and a path. */
export const join = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;

/** An answer's list of vectors in order (each a list of numbers), as OpenAI's data. */
export const inOrder = (vectors: unknown, what: string): ReadAnswer['data'] => {
  if (!Array.isArray(vectors)) throw new Error(`its answer has no ${what}`);
  return vectors.map((embedding) => ({ embedding }));
};
