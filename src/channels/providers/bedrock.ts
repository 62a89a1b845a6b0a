// AWS Bedrock's InvokeModel for its text embedding models: Amazon Titan Text Embeddings (one text a call) and Cohere
// Embed on Bedrock (96 texts a call). Every call is signed with SigV4 by AWS's own signing package (service `bedrock`,
// the channel's region), from the access key pair in the channel's key.
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { z } from 'zod';
import { inOrder, join, type Provider } from './types.js';

const COHERE_INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering'] as const;

export const bedrockConfig = z
  .object({
    /** The AWS region the calls are signed for (the base URL's region: bedrock-runtime.{region}.amazonaws.com). */
    region: z.string({ error: 'is required: the AWS region, e.g. us-east-1' }).regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, 'must be an AWS region, e.g. us-east-1'),
    /** Cohere models only: the input_type sent with every call (Cohere's v3 models require one). */
    input_type: z.enum(COHERE_INPUT_TYPES).optional(),
    /** Cohere models only: how a text longer than the model takes is cut (v3: NONE, START, END; v4: NONE, LEFT, RIGHT). */
    truncate: z.enum(['NONE', 'START', 'END', 'LEFT', 'RIGHT']).optional(),
    /** Titan Text Embeddings v2 only: whether its vectors are normalized (Bedrock's default: true). */
    normalize: z.boolean().optional(),
  })
  .strict();
type BedrockConfig = z.output<typeof bedrockConfig>;

/** The embedding models this adapter knows, by their model id (a foundation model id, an inference profile id or an ARN naming one). */
type Family = 'titan-v2' | 'titan-v1' | 'cohere';
export function familyOf(model: string): Family | undefined {
  const id = model.toLowerCase();
  if (id.includes('amazon.titan-embed-text-v2')) return 'titan-v2';
  if (id.includes('amazon.titan-embed-text-v1') || id.includes('amazon.titan-embed-g1-text')) return 'titan-v1';
  if (id.includes('cohere.embed-')) return 'cohere';
  return undefined;
}

/** What the channel's key holds: ACCESS_KEY_ID|SECRET_ACCESS_KEY, optionally |SESSION_TOKEN. Never quoted in an error. */
export function bedrockCredentials(key: string): { accessKeyId: string; secretAccessKey: string; sessionToken?: string } {
  const parts = key.split('|');
  if ((parts.length !== 2 && parts.length !== 3) || parts.some((p) => !p || /\s/.test(p)))
    throw new Error('its key must be ACCESS_KEY_ID|SECRET_ACCESS_KEY or ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN');
  const [accessKeyId, secretAccessKey, sessionToken] = parts as [string, string, string?];
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey };
}

/** A path label as the AWS SDK writes it: encodeURIComponent, and !'()* escaped too (`:` of a model id is %3A). */
const pathLabel = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function bodyOf(family: Family, model: string, inputs: string[], dimensions: number | undefined, config: BedrockConfig): unknown {
  if (family === 'cohere')
    return { texts: inputs, input_type: config.input_type ?? 'search_document', ...(config.truncate ? { truncate: config.truncate } : {}) };
  if (inputs.length !== 1) throw new Error(`${model} takes one text a call, not ${inputs.length}`);
  if (family === 'titan-v1') return { inputText: inputs[0] };
  return {
    inputText: inputs[0],
    ...(dimensions ? { dimensions } : {}),
    ...(config.normalize === undefined ? {} : { normalize: config.normalize }),
  };
}

/** Bedrock's error types that mean something other than their HTTP status says (sent in x-amzn-ErrorType). */
const ERROR_STATUS: Record<string, number> = {
  // The account's quota for the model (a 400 from Bedrock): wait, as for a throttle.
  ServiceQuotaExceededException: 429,
  // The channel's credentials, however AWS words it: the channel is refused.
  UnrecognizedClientException: 403,
  InvalidSignatureException: 403,
  IncompleteSignatureException: 403,
  MissingAuthenticationTokenException: 403,
  ExpiredTokenException: 403,
  AccessDeniedException: 403,
};

/** The error type of an x-amzn-ErrorType header (`ThrottlingException:http://internal.amazon.com/…`). */
export const bedrockErrorType = (headers: Headers | undefined) => headers?.get('x-amzn-errortype')?.split(':')[0]?.trim() || undefined;

export const bedrock: Provider = {
  type: 'bedrock',
  // one-api's 33 is Bedrock for Claude (chat) only.
  oneApiType: null,
  label: 'AWS Bedrock',
  defaultBaseUrl: null,
  keyProblem(key) {
    try {
      bedrockCredentials(key);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  },
  config: bedrockConfig,
  configFields: [
    { name: 'region', label: 'AWS region', required: true, placeholder: 'us-east-1' },
    { name: 'input_type', label: 'Cohere input_type (default search_document)', placeholder: 'search_document' },
    { name: 'truncate', label: 'Cohere truncate (NONE, START, END; v4: LEFT, RIGHT)', placeholder: 'NONE' },
    { name: 'normalize', label: 'Titan v2 normalize (default true)', placeholder: 'true' },
  ],
  // An unknown model is refused when asked (request()); one text a call is what any of them takes.
  maxInputs: (model) => (familyOf(model) === 'cohere' ? 96 : 1),
  dimensions: (model) => familyOf(model) === 'titan-v2',
  base64: false,
  async request(ch, call) {
    const config = ch.config as BedrockConfig;
    const family = familyOf(call.model);
    if (!family) throw new Error(`'${call.model}' is not a Bedrock embedding model it knows (amazon.titan-embed-text-v1/v2, cohere.embed-*)`);
    if (!config.region) throw new Error('its config has no region');
    const credentials = bedrockCredentials(ch.key);
    const body = JSON.stringify(bodyOf(family, call.model, call.inputs, call.dimensions, config));
    const url = new URL(join(ch.baseUrl, `model/${pathLabel(call.model)}/invoke`));
    const signer = new SignatureV4({ credentials, region: config.region, service: 'bedrock', sha256: Sha256 });
    const signed = await signer.sign(
      new HttpRequest({
        method: 'POST',
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        // host is signed as the HTTP client will send it (with the port when it is not the scheme's).
        headers: { host: url.host, 'content-type': 'application/json', accept: 'application/json' },
        body,
      }),
    );
    return { url: url.href, headers: signed.headers, body };
  },
  read(body, call) {
    const b = body as { embedding?: unknown; inputTextTokenCount?: unknown; embeddings?: unknown } | null;
    if (familyOf(call.model) === 'cohere') {
      // embeddings_floats: a list of vectors; embeddings_by_type (embedding_types asked, or v4): {float: [...]}.
      const e = b?.embeddings;
      return { data: inOrder(Array.isArray(e) ? e : (e as { float?: unknown } | undefined)?.float, 'embeddings') };
    }
    if (!Array.isArray(b?.embedding)) throw new Error('its answer has no embedding');
    return { data: [{ embedding: b.embedding }], promptTokens: b.inputTextTokenCount };
  },
  errorMessage(body) {
    const b = body as { message?: unknown; Message?: unknown } | null;
    const m = b?.message ?? b?.Message;
    return typeof m === 'string' && m ? m : undefined;
  },
  // The relay passes (status, body); with the headers too (a third argument), the x-amzn-ErrorType decides.
  status(status: number, _body: unknown, headers?: Headers) {
    const byType = ERROR_STATUS[bedrockErrorType(headers) ?? ''];
    if (byType) return byType;
    // ModelErrorException: the model failed on Bedrock's side (not the request's fault).
    if (status === 424) return 502;
    return status;
  },
};
