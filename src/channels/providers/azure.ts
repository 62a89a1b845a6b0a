// Azure OpenAI: OpenAI's embeddings API under an Azure resource's endpoint. Classic calls name a deployment in the path
// and an api-version in the query; the v1 API (api_version "v1") takes OpenAI's own path with the deployment as `model`.
// Either way the key goes in the `api-key` header, and the body, the answer and the errors are OpenAI's.
import { z } from 'zod';
import { openai } from './openai.js';
import { join, openaiErrorMessage, type Provider } from './types.js';

/** The api-version used when a channel gives none: the current GA version of the classic data-plane API. */
export const AZURE_DEFAULT_API_VERSION = '2024-10-21';

export const azureConfig = z
  .object({
    /** A dated version (YYYY-MM-DD, or YYYY-MM-DD-preview) for the classic deployments path, or "v1" for the v1 API. */
    api_version: z
      .string()
      .regex(/^(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(-preview)?|v1)$/, 'must be YYYY-MM-DD, YYYY-MM-DD-preview, or "v1"')
      .optional(),
  })
  .strict();

/** The resource endpoint, without an `/openai` (or `/openai/v1`) an operator may have pasted with it. */
const endpointOf = (baseUrl: string) => baseUrl.replace(/\/+$/, '').replace(/\/openai(\/v1)?$/, '');

export const azure: Provider = {
  type: 'azure',
  oneApiType: 3,
  label: 'Azure OpenAI',
  defaultBaseUrl: null,
  config: azureConfig,
  configFields: [
    { name: 'api_version', label: `API version (default ${AZURE_DEFAULT_API_VERSION}; "v1" for the v1 API)`, placeholder: AZURE_DEFAULT_API_VERSION },
  ],
  maxInputs: 2048,
  dimensions: true,
  base64: true,
  tokenArrays: true,
  request(ch, call) {
    const version = (ch.config as z.output<typeof azureConfig>).api_version ?? AZURE_DEFAULT_API_VERSION;
    const endpoint = endpointOf(ch.baseUrl);
    // The deployment is the upstream model name as the channel maps it, as it is (dots kept: map a model to its deployment).
    const v1 = version === 'v1';
    const url = v1
      ? join(endpoint, '/openai/v1/embeddings')
      : join(endpoint, `/openai/deployments/${encodeURIComponent(call.model)}/embeddings?api-version=${encodeURIComponent(version)}`);
    return {
      url,
      headers: { 'api-key': ch.key, 'content-type': 'application/json' },
      body: JSON.stringify({
        ...(v1 ? { model: call.model } : {}),
        input: call.tokenIds ?? call.inputs,
        encoding_format: call.encoding,
        ...(call.dimensions ? { dimensions: call.dimensions } : {}),
      }),
    };
  },
  read: (body, call) => openai.read(body, call),
  errorMessage: openaiErrorMessage,
  // A 404 names a deployment (or api-version) the resource does not have: the channel's setup, not the caller's request
  // (the gateway chose the deployment), so the call moves on to another channel instead of failing.
  status: (status) => (status === 404 ? 502 : status),
};
