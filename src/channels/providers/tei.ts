// Hugging Face Text Embeddings Inference, its native API: POST {base_url}/embed with `inputs`, the vectors back as a
// bare list of lists of floats (no token count). One server serves one model, so no model name is sent. A key only
// when the server was started with --api-key (as a Bearer token); its errors are {"error", "error_type"}.
import { z } from 'zod';
import { bearerUnlessNoKey } from './no-key.js';
import { inOrder, join, type Provider } from './types.js';

export const teiConfig = z
  .object({
    /** Cut a text past the model's length (true) or have it refused (TEI's default, unless the server runs --auto-truncate). */
    truncate: z.boolean().optional(),
    /** Whether vectors come back L2-normalized (TEI's default: true). */
    normalize: z.boolean().optional(),
    /** A prompt of the model's sentence-transformers config put before every text (e.g. "query"). */
    prompt_name: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[\p{L}\p{N}_.:-]+$/u, 'must be a prompt name (letters, digits, _ . : -)')
      .optional(),
    /**
     * Send token-id inputs as ids (true) rather than as their decoded text. Callers' ids are cl100k_base's (OpenAI's
     * tokenizer); only a server whose model reads that vocabulary gives the right vectors for them.
     */
    token_ids: z.boolean().optional(),
  })
  .strict();

/** TEI's error shape, {"error": "…", "error_type": "…"}: the message, if the body is one. */
export function teiErrorMessage(body: unknown): string | undefined {
  const b = body as { error?: unknown; error_type?: unknown } | null;
  return typeof b?.error === 'string' && b.error && typeof b.error_type === 'string' ? b.error : undefined;
}

const errorType = (body: unknown) => {
  const t = (body as { error_type?: unknown } | null)?.error_type;
  return typeof t === 'string' ? t.toLowerCase() : undefined;
};

/** TEI's --max-client-batch-size default: a call carries at most this many inputs. */
export const TEI_MAX_BATCH = 32;

export const tei: Provider = {
  type: 'tei',
  oneApiType: null,
  label: 'Hugging Face TEI',
  defaultBaseUrl: null,
  config: teiConfig,
  configFields: [
    { name: 'truncate', label: 'Cut texts past the model’s length (true) or refuse them', placeholder: 'false' },
    { name: 'normalize', label: 'Normalize vectors (default true)', placeholder: 'true' },
    { name: 'prompt_name', label: 'Prompt name (from the model’s prompts)', placeholder: 'query' },
    { name: 'token_ids', label: 'Send token ids as ids (the model must read cl100k_base)', placeholder: 'false' },
  ],
  // A server's --max-client-batch-size is its own (default 32) and the relay's split sees only the model: calls are cut
  // at the default. A server started with less refuses a larger call as a batch-size error, read below as its fault.
  maxInputs: TEI_MAX_BATCH,
  dimensions: true,
  base64: false,
  tokenArrays: true,
  request(ch, call) {
    const config = ch.config as z.output<typeof teiConfig>;
    return {
      url: join(ch.baseUrl, '/embed'),
      headers: { ...bearerUnlessNoKey(ch.key), 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: config.token_ids && call.tokenIds ? call.tokenIds : call.inputs,
        ...(config.truncate === undefined ? {} : { truncate: config.truncate }),
        ...(config.normalize === undefined ? {} : { normalize: config.normalize }),
        ...(config.prompt_name === undefined ? {} : { prompt_name: config.prompt_name }),
        ...(call.dimensions ? { dimensions: call.dimensions } : {}),
      }),
    };
  },
  read(body) {
    return { data: inOrder(body, 'list of embeddings') };
  },
  errorMessage: teiErrorMessage,
  retryAfterMs(_headers, body) {
    // Overloaded: more requests at once than its --max-concurrent-requests, a matter of moments (it sends no hint).
    return errorType(body) === 'overloaded' ? 1_000 : undefined;
  },
  status(status, body) {
    // Backend (424): the model failed to run, or is not an embedding model: the server's fault; another channel may answer.
    if (status === 424) return 502;
    // A batch larger than the server's --max-client-batch-size: the server's setting, not the request's fault.
    if (errorType(body) === 'validation' && /batch size/i.test(teiErrorMessage(body) ?? '')) return 502;
    // A path the server does not serve: the base_url is not a TEI server's.
    if (status === 404) return 502;
    return status;
  },
};
