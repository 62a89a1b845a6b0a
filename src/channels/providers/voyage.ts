// Voyage AI's embeddings API: POST {base_url}/v1/embeddings, the key as a Bearer token, OpenAI's answer shape but its own
// request fields (`output_dimension`, `input_type`, `truncation`) and only `usage.total_tokens`; errors {"detail": "…"}.
import { z } from 'zod';
import { join, type Provider } from './types.js';

export const voyageConfig = z
  .object({
    /** Voyage's `input_type`: query or document (Voyage prepends a prompt for it); null or unset: none is sent. */
    input_type: z.enum(['query', 'document']).nullable().optional(),
    /** Voyage's `truncation`: false refuses a text past the model's length (Voyage's default, true, cuts it). */
    truncation: z.boolean().optional(),
  })
  .strict();

export const voyage: Provider = {
  type: 'voyage',
  oneApiType: null,
  label: 'Voyage AI',
  defaultBaseUrl: 'https://api.voyageai.com',
  config: voyageConfig,
  configFields: [
    { name: 'input_type', label: 'Input type (query or document; default none)', placeholder: 'document' },
    { name: 'truncation', label: 'Truncate long texts (true or false; default true)', placeholder: 'true' },
  ],
  maxInputs: 1000,
  // Voyage's models that take output_dimension shorten; an older model's refusal (400) is passed on to the caller.
  dimensions: true,
  // Voyage's base64 is numpy's bytes of the vector: floats are asked for, and the relay encodes.
  base64: false,
  request(ch, call) {
    const config = ch.config as z.output<typeof voyageConfig>;
    return {
      url: join(ch.baseUrl, '/v1/embeddings'),
      headers: { authorization: `Bearer ${ch.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: call.model,
        input: call.inputs,
        ...(config.input_type ? { input_type: config.input_type } : {}),
        ...(config.truncation !== undefined ? { truncation: config.truncation } : {}),
        ...(call.dimensions ? { output_dimension: call.dimensions } : {}),
      }),
    };
  },
  read(body) {
    const b = body as { data?: unknown; usage?: { total_tokens?: unknown } } | null;
    if (!Array.isArray(b?.data)) throw new Error('its answer has no data');
    return { data: b.data as { index?: number; embedding: unknown }[], promptTokens: b.usage?.total_tokens };
  },
  /** Voyage's error shape, {"detail": "…"}, and nothing else. */
  errorMessage(body) {
    const d = (body as { detail?: unknown } | null)?.detail;
    return typeof d === 'string' && d ? d : undefined;
  },
};
