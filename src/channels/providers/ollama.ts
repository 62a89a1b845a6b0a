// Ollama's native embed API: POST {base_url}/api/embed with `input` as a list, float vectors back in `embeddings` and
// the tokens it read in `prompt_eval_count`. A local server takes no key; ollama.com's API takes one as a Bearer token.
import { z } from 'zod';
import { bearerUnlessNoKey } from './no-key.js';
import { inOrder, join, type Provider } from './types.js';

/** A Go duration as Ollama reads `keep_alive` ("5m", "1h30m", "300ms"; "0" unloads the model after the call). */
const goDuration = /^(0|-?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$/;

export const ollamaConfig = z
  .object({
    /** Whether a text past the model's context is cut (Ollama's default) or refused (false: the server answers 400). */
    truncate: z.boolean().optional(),
    /** How long the server keeps the model loaded after a call (Ollama's default 5m): a duration, or seconds (negative: for ever). */
    keep_alive: z
      .union([z.string().max(32).regex(goDuration, 'must be a duration such as "5m", "1h" or "0"'), z.number().int().min(-1).max(31_536_000)])
      .optional(),
  })
  .strict();

/** Ollama's error shape, {"error": "…"}, and nothing else. */
export function ollamaErrorMessage(body: unknown): string | undefined {
  const e = (body as { error?: unknown } | null)?.error;
  return typeof e === 'string' && e ? e : undefined;
}

export const ollama: Provider = {
  type: 'ollama',
  oneApiType: 30,
  label: 'Ollama',
  defaultBaseUrl: 'http://localhost:11434',
  config: ollamaConfig,
  configFields: [
    { name: 'truncate', label: 'Cut texts past the context (true, the default) or refuse them (false)', placeholder: 'true' },
    { name: 'keep_alive', label: 'Keep the model loaded for (default 5m)', placeholder: '5m' },
  ],
  // Ollama documents no limit: 512 a call keeps one answer (floats as JSON text) bounded, and a server that runs requests
  // in parallel (OLLAMA_NUM_PARALLEL) works on the parts of a larger call at once.
  maxInputs: 512,
  dimensions: true,
  base64: false,
  request(ch, call) {
    const config = ch.config as z.output<typeof ollamaConfig>;
    return {
      url: join(ch.baseUrl, '/api/embed'),
      headers: { ...bearerUnlessNoKey(ch.key), 'content-type': 'application/json' },
      body: JSON.stringify({
        model: call.model,
        input: call.inputs,
        ...(config.truncate === undefined ? {} : { truncate: config.truncate }),
        ...(call.dimensions ? { dimensions: call.dimensions } : {}),
        ...(config.keep_alive === undefined ? {} : { keep_alive: config.keep_alive }),
      }),
    };
  },
  read(body) {
    const b = body as { embeddings?: unknown; prompt_eval_count?: unknown } | null;
    return { data: inOrder(b?.embeddings, 'embeddings'), promptTokens: b?.prompt_eval_count };
  },
  errorMessage: ollamaErrorMessage,
  status(status) {
    // A model the server has not pulled (or a base_url that is not an Ollama server): this channel's fault, not the
    // request's; another channel serving the model may have it.
    return status === 404 ? 502 : status;
  },
};
