// Cohere's v2 embed API: POST {base_url}/v2/embed, the key as a Bearer token, `texts` with an `input_type` (which v3 and
// later models require) and float vectors asked for by name; `output_dimension` only on embed-v4 and later.
import { z } from 'zod';
import { inOrder, join, type Provider } from './types.js';

export const cohereConfig = z
  .object({
    /** What the texts are for (Cohere's `input_type`): stored documents unless set. */
    input_type: z.enum(['search_document', 'search_query', 'classification', 'clustering']).optional(),
    /** What Cohere does with a text past the model's length (`truncate`): Cohere's own default unless set. */
    truncate: z.enum(['NONE', 'START', 'END']).optional(),
  })
  .strict();

/** The `input_type` sent when a channel sets none: texts embedded to be searched (the common case for an embeddings gateway). */
export const COHERE_DEFAULT_INPUT_TYPE = 'search_document';

/** Cohere's embed-v4 and later models take `output_dimension` (256, 512, 1024, 1536); v3 and older do not. */
export const cohereTakesDimensions = (model: string) => {
  const m = /^embed-v(\d+)(?:[.-]|$)/.exec(model);
  return m !== null && Number(m[1]) >= 4;
};

/** A day: the longest a channel's own hint may set it aside (as the relay holds Retry-After). */
const MAX_WAIT_MS = 86_400_000;

/**
 * Cohere's X-RateLimit-Reset (read as its SDK reads it: when the limit resets, in epoch seconds; a number too small to be
 * a time of this century is taken as seconds from now), in ms.
 */
export function rateLimitResetMs(headers: Headers, now = Date.now()): number | undefined {
  const raw = headers.get('x-ratelimit-reset');
  if (!raw || !/^\d+(\.\d+)?$/.test(raw.trim())) return undefined;
  const n = Number(raw);
  const ms = n >= 1e9 ? n * 1000 - now : n * 1000;
  return ms > 0 ? Math.min(ms, MAX_WAIT_MS) : undefined;
}

export const cohere: Provider = {
  type: 'cohere',
  oneApiType: 35,
  label: 'Cohere',
  defaultBaseUrl: 'https://api.cohere.com',
  config: cohereConfig,
  configFields: [
    { name: 'input_type', label: 'Input type (default search_document)', placeholder: 'search_document' },
    { name: 'truncate', label: 'Truncate long texts (NONE, START or END)', placeholder: 'END' },
  ],
  maxInputs: 96,
  dimensions: cohereTakesDimensions,
  // Cohere's `base64` embedding type is not OpenAI's little-endian float32: floats are asked for, and the relay encodes.
  base64: false,
  request(ch, call) {
    const config = ch.config as z.output<typeof cohereConfig>;
    return {
      url: join(ch.baseUrl, '/v2/embed'),
      headers: { authorization: `Bearer ${ch.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: call.model,
        texts: call.inputs,
        input_type: config.input_type ?? COHERE_DEFAULT_INPUT_TYPE,
        embedding_types: ['float'],
        ...(config.truncate ? { truncate: config.truncate } : {}),
        ...(call.dimensions ? { output_dimension: call.dimensions } : {}),
      }),
    };
  },
  read(body) {
    const b = body as { embeddings?: { float?: unknown }; meta?: { billed_units?: { input_tokens?: unknown } } } | null;
    return { data: inOrder(b?.embeddings?.float, 'embeddings.float'), promptTokens: b?.meta?.billed_units?.input_tokens };
  },
  /** Cohere's error shape, {"message": "…"}, and nothing else. */
  errorMessage(body) {
    const m = (body as { message?: unknown } | null)?.message;
    return typeof m === 'string' && m ? m : undefined;
  },
  retryAfterMs: (headers) => rateLimitResetMs(headers),
  status(status) {
    // 498: Cohere's "invalid token", a key it refuses; 402: the key's account cannot pay (no call will pass until an admin
    // acts): both set the channel aside as a refused key. 499: Cohere's "request cancelled", no fault of the request.
    if (status === 498) return 401;
    if (status === 402) return 403;
    if (status === 499) return 503;
    return status;
  },
};
