// OpenAI and every upstream that speaks its embeddings API: Jina, Mistral, SiliconFlow, Together, DashScope's
// compatible mode, Zhipu (path /api/paas/v4/embeddings), vLLM, LM Studio, Ollama's and TEI's /v1.
import { z } from 'zod';
import { openaiErrorMessage, join, type Provider } from './types.js';

/** A header a channel may add: a token of header-name characters, not one the relay sets itself. */
const RESERVED = new Set([
  'authorization',
  'content-type',
  'content-length',
  'content-encoding',
  'host',
  'connection',
  'transfer-encoding',
  'te',
  'upgrade',
  'keep-alive',
  'expect',
  'proxy-authorization',
]);
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'must be a header name')
  .refine((h) => !RESERVED.has(h.toLowerCase()), 'is set by the gateway itself');
const headerValue = z
  .string()
  .max(2_000)
  // What HTTP lets a header value hold (Node refuses the rest at send time): tab, printable ASCII and Latin-1.
  .refine((v) => /^[\t\x20-\x7e\x80-\xff]*$/.test(v), 'must be one line of printable characters');

export const openaiConfig = z
  .object({
    /** The path of the embeddings endpoint under the base URL (default: /v1/embeddings, or /embeddings when the base URL ends in /v1). */
    path: z
      .string()
      .max(300)
      .regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/, 'must be a path starting with /, without a query')
      // No dot segment, written or encoded: the path stays under the base URL's prefix.
      .refine((v) => !v.split('/').some((seg) => /^(\.|%2e){1,2}$/i.test(seg)), 'must not have . or .. segments')
      .optional(),
    /** Headers sent with every call (e.g. an organisation id): names and values. */
    headers: z
      .record(headerName, headerValue)
      .refine((h) => Object.keys(h).length <= 20, 'at most 20 headers')
      .optional(),
  })
  .strict();

/** The embeddings URL of an OpenAI-compatible base URL: `/v1/embeddings` under it, or `/embeddings` under a `/v1` one. */
export function openaiUrl(baseUrl: string, path?: string): string {
  if (path) return join(baseUrl, path);
  return /\/v1$/.test(baseUrl) ? `${baseUrl}/embeddings` : `${baseUrl}/v1/embeddings`;
}

export const openai: Provider = {
  type: 'openai',
  oneApiType: 1,
  label: 'OpenAI-compatible',
  defaultBaseUrl: 'https://api.openai.com',
  config: openaiConfig,
  configFields: [
    { name: 'path', label: 'Endpoint path (default /v1/embeddings)', placeholder: '/api/paas/v4/embeddings' },
    { name: 'headers', label: 'Extra headers (JSON object)', placeholder: '{"OpenAI-Organization": "org-…"}' },
  ],
  maxInputs: 2048,
  dimensions: true,
  base64: true,
  tokenArrays: true,
  request(ch, call) {
    const config = ch.config as z.output<typeof openaiConfig>;
    return {
      url: openaiUrl(ch.baseUrl, config.path),
      headers: { ...config.headers, authorization: `Bearer ${ch.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: call.model,
        input: call.tokenIds ?? call.inputs,
        encoding_format: call.encoding,
        ...(call.dimensions ? { dimensions: call.dimensions } : {}),
      }),
    };
  },
  read(body) {
    const data = (body as { data?: unknown })?.data;
    if (!Array.isArray(data)) throw new Error('its answer has no data');
    return { data: data as { index?: number; embedding: unknown }[], promptTokens: (body as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens };
  },
  errorMessage: openaiErrorMessage,
};
