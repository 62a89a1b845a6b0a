// Google Gemini (the Gemini Developer API, generativelanguage.googleapis.com): `models/{model}:batchEmbedContents`, one
// request per input, the key in `x-goog-api-key`. It answers floats only and no token count; its errors are Google's
// `{"error":{"code","message","status","details"}}`, where a bad key is a 400 and a rate limit's wait is a RetryInfo detail.
import { z } from 'zod';
import { inOrder, join, type Provider } from './types.js';

/** Gemini's TaskType values: what the vectors will be used for (the model tunes them to it). */
export const GEMINI_TASK_TYPES = [
  'TASK_TYPE_UNSPECIFIED',
  'RETRIEVAL_QUERY',
  'RETRIEVAL_DOCUMENT',
  'SEMANTIC_SIMILARITY',
  'CLASSIFICATION',
  'CLUSTERING',
  'QUESTION_ANSWERING',
  'FACT_VERIFICATION',
  'CODE_RETRIEVAL_QUERY',
] as const;

export const GEMINI_DEFAULT_API_VERSION = 'v1beta';

export const geminiConfig = z
  .object({
    /** The API version in the path (default v1beta). */
    api_version: z
      .string()
      .regex(/^v\d+(alpha|beta)?\d*$/, 'must be an API version such as v1beta or v1')
      .optional(),
    /** Sent as every request's taskType; none by default (the model's own default). */
    task_type: z.enum(GEMINI_TASK_TYPES, { error: `must be one of ${GEMINI_TASK_TYPES.join(', ')}` }).optional(),
  })
  .strict();

/** The most a RetryInfo may set a channel aside for (as Retry-After is held to): a day. */
const MAX_RETRY_MS = 86_400_000;

interface GoogleError {
  code?: unknown;
  message?: unknown;
  status?: unknown;
  details?: unknown;
}
const googleError = (body: unknown): GoogleError | undefined => {
  const e = (body as { error?: unknown } | null)?.error;
  return typeof e === 'object' && e !== null && !Array.isArray(e) ? (e as GoogleError) : undefined;
};
/** The error's details of one google.rpc type (e.g. "RetryInfo", "ErrorInfo"). */
const detailsOf = (e: GoogleError | undefined, type: string): Record<string, unknown>[] =>
  Array.isArray(e?.details)
    ? (e.details as unknown[]).filter(
        (d): d is Record<string, unknown> =>
          typeof d === 'object' && d !== null && (d as Record<string, unknown>)['@type'] === `type.googleapis.com/google.rpc.${type}`,
      )
    : [];

/** A model's resource name: `models/{model}` (a name given with its `models/` or `tunedModels/` prefix is kept). */
const resourceName = (model: string) => (/^(models|tunedModels)\//.test(model) ? model : `models/${model}`);

/** A 400 that is Gemini refusing the key (it does not answer 401): ErrorInfo reason API_KEY_INVALID, or its message says so. */
function refusesKey(e: GoogleError | undefined): boolean {
  if (detailsOf(e, 'ErrorInfo').some((d) => d.reason === 'API_KEY_INVALID')) return true;
  return typeof e?.message === 'string' && /\bAPI key (not valid|not found|expired)\b/i.test(e.message);
}

export const gemini: Provider = {
  type: 'gemini',
  oneApiType: 24,
  label: 'Google Gemini',
  defaultBaseUrl: 'https://generativelanguage.googleapis.com',
  config: geminiConfig,
  configFields: [
    { name: 'api_version', label: `API version (default ${GEMINI_DEFAULT_API_VERSION})`, placeholder: GEMINI_DEFAULT_API_VERSION },
    { name: 'task_type', label: 'Task type (default none)', placeholder: 'RETRIEVAL_DOCUMENT' },
  ],
  maxInputs: 100,
  dimensions: true,
  base64: false,
  request(ch, call) {
    const config = ch.config as z.output<typeof geminiConfig>;
    const name = resourceName(call.model);
    // A base URL that already ends in a version (…/v1beta) is used as it is.
    const root = /\/v\d+(alpha|beta)?\d*$/.test(ch.baseUrl) ? ch.baseUrl : join(ch.baseUrl, config.api_version ?? GEMINI_DEFAULT_API_VERSION);
    return {
      url: join(root, `${name.split('/').map(encodeURIComponent).join('/')}:batchEmbedContents`),
      headers: { 'x-goog-api-key': ch.key, 'content-type': 'application/json' },
      body: JSON.stringify({
        requests: call.inputs.map((text) => ({
          model: name,
          content: { parts: [{ text }] },
          ...(config.task_type ? { taskType: config.task_type } : {}),
          ...(call.dimensions ? { outputDimensionality: call.dimensions } : {}),
        })),
      }),
    };
  },
  read(body) {
    const embeddings = (body as { embeddings?: unknown } | null)?.embeddings;
    if (!Array.isArray(embeddings)) throw new Error('its answer has no embeddings');
    // No token count on the Developer API: the gateway's own count is used.
    return {
      data: inOrder(
        embeddings.map((e) => (e as { values?: unknown } | null)?.values),
        'embeddings',
      ),
    };
  },
  errorMessage(body) {
    const m = googleError(body)?.message;
    return typeof m === 'string' && m ? m : undefined;
  },
  retryAfterMs(_headers, body) {
    // RetryInfo's retryDelay is a protobuf Duration in JSON: seconds with an "s" ("30s", "1.5s").
    for (const d of detailsOf(googleError(body), 'RetryInfo')) {
      const m = typeof d.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(d.retryDelay) : null;
      if (m && Number(m[1]) > 0) return Math.min(Math.ceil(Number(m[1]) * 1000), MAX_RETRY_MS);
    }
    return undefined;
  },
  status(status, body) {
    const e = googleError(body);
    if (status === 400 && refusesKey(e)) return 401;
    // FAILED_PRECONDITION is the project's state (e.g. the API is not offered where the gateway runs, or billing is
    // needed): no call on this channel can succeed, so it is disabled with Gemini's reason rather than failing callers.
    if (status === 400 && e?.status === 'FAILED_PRECONDITION') return 403;
    return status;
  },
};
