// A stand-in for a Hugging Face Text Embeddings Inference server's native route (POST /embed), as TEI's OpenAPI
// document gives it: `EmbedRequest {inputs, truncate, truncation_direction, prompt_name, normalize, dimensions}`, inputs a
// text, a list of token ids, or a list of either; `EmbedResponse`, a bare list of lists of floats; errors
// `ErrorResponse {error, error_type}` with error_type Unhealthy 503, Backend 424, Overloaded 429, Validation and
// Tokenizer 422 (Empty 400). With --api-key, a call without `Authorization: Bearer <key>` gets 401 and no body. There is
// no official TEI client for Node: test/integration/providers-tei.test.ts checks this fake against those documented
// shapes. Stricter than TEI on one point: a field it does not document is refused, so a wrong field name fails here.
import { fakeVector } from './fake-openai.js';
import { extraKeys, type Refused, SelfHostedFake } from './fake-self-hosted.js';

export type TeiInput = string | number[];
export interface TeiEmbedBody {
  inputs: TeiInput | TeiInput[];
  truncate?: boolean | null;
  truncation_direction?: string;
  prompt_name?: string | null;
  normalize?: boolean;
  dimensions?: number;
}

/** TEI's error types and the status each is sent with. */
export const TEI_ERROR_STATUS = { Unhealthy: 503, Backend: 424, Overloaded: 429, Validation: 422, Tokenizer: 422, Empty: 400 } as const;
const typeOf = (status: number) =>
  (Object.entries(TEI_ERROR_STATUS).find(([, s]) => s === status)?.[0] ?? (status === 413 ? 'Validation' : 'Backend')) as keyof typeof TEI_ERROR_STATUS;

const l2 = (v: number[]) => {
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
};

/** The vector the fake answers for an input (a text, or token ids): `dims` long (4 unless asked), normalized unless `normalize` is false. */
export function teiVector(input: TeiInput, opts: { dims?: number; normalize?: boolean; promptName?: string | null } = {}): number[] {
  const text = typeof input === 'string' ? input : `ids:${input.join(',')}`;
  const raw = fakeVector(opts.promptName ? `${opts.promptName}: ${text}` : text, opts.dims ?? 4);
  return opts.normalize === false ? raw : l2(raw);
}

const FIELDS = ['inputs', 'truncate', 'truncation_direction', 'prompt_name', 'normalize', 'dimensions'] as const;
const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x) && x >= 0 && x < 2 ** 32);

export class FakeTei extends SelfHostedFake<TeiEmbedBody> {
  protected readonly route = '/embed';
  protected readonly wrongKey: Refused = { status: 401, body: undefined };
  /** --max-client-batch-size (TEI's default 32). */
  maxClientBatchSize = 32;
  /** The prompts of the model's sentence-transformers config. */
  prompts = ['query', 'document'];
  /** Texts longer than this are past the model's length: cut when truncate is true, else a Validation error. */
  maxChars = 10_000;

  protected errorBody(status: number, message: string, errorType?: string) {
    // An unknown route is axum's bare 404.
    return status === 404 ? undefined : { error: message, error_type: errorType ?? typeOf(status) };
  }

  protected check(body: unknown): Refused | undefined {
    const bad = (type: keyof typeof TEI_ERROR_STATUS, error: string): Refused => ({ status: TEI_ERROR_STATUS[type], body: { error, error_type: type } });
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('Validation', 'invalid type: expected struct EmbedRequest');
    const b = body as Record<string, unknown>;
    const extra = extraKeys(b, FIELDS);
    if (extra.length) return bad('Validation', `unknown field(s) \`${extra.join('`, `')}\``);
    // A text, one list of ids, or a list of texts and lists of ids.
    const batch: unknown[] = typeof b.inputs === 'string' || isIds(b.inputs) ? [b.inputs] : Array.isArray(b.inputs) ? b.inputs : [];
    if (b.inputs === undefined) return bad('Validation', 'missing field `inputs`');
    if (!batch.every((i) => typeof i === 'string' || isIds(i))) return bad('Validation', 'data did not match any variant of untagged enum Input');
    if (batch.length === 0 || batch.some((i) => i === '')) return bad('Empty', '`inputs` cannot be empty');
    if (batch.length > this.maxClientBatchSize) return bad('Validation', `batch size ${batch.length} > maximum allowed batch size ${this.maxClientBatchSize}`);
    for (const f of ['truncate', 'normalize'] as const)
      if (b[f] !== undefined && b[f] !== null && typeof b[f] !== 'boolean') return bad('Validation', `invalid type for \`${f}\`: expected a boolean`);
    if (b.truncation_direction !== undefined && !['left', 'right'].includes(String(b.truncation_direction).toLowerCase()))
      return bad('Validation', 'unknown variant for `truncation_direction`');
    if (b.dimensions !== undefined && !(Number.isInteger(b.dimensions) && (b.dimensions as number) > 0))
      return bad('Validation', '`dimensions` must be a positive integer');
    if (b.prompt_name !== undefined && b.prompt_name !== null && !this.prompts.includes(String(b.prompt_name)))
      return bad('Validation', `prompt_name \`${String(b.prompt_name)}\` is not in the model's prompts`);
    if (b.truncate !== true && batch.some((i) => typeof i === 'string' && i.length > this.maxChars))
      return bad('Validation', `\`inputs\` must have less than ${this.maxChars} tokens`);
    return undefined;
  }

  protected answer(body: TeiEmbedBody) {
    const batch = typeof body.inputs === 'string' || isIds(body.inputs) ? [body.inputs] : (body.inputs as TeiInput[]);
    return batch.map((i) => teiVector(i, { dims: body.dimensions, normalize: body.normalize, promptName: body.prompt_name }));
  }
}
