// A stand-in for Cohere's v2 embed API (POST /v2/embed, Bearer key), checked with the cohere-ai SDK: the request body as
// Cohere documents it (texts ≤ 96, an input_type, embedding_types, truncate, output_dimension only for embed-v4 and later),
// answers {id, embeddings: {float}, texts, meta: {billed_units: {input_tokens}}}, errors {"message": "…"}.
import { fakeVector } from './fake-openai.js';
import { FakeJsonUpstream, isTexts, type Refusal, unknownKeys } from './fake-json-upstream.js';

export interface CohereEmbedBody {
  model: string;
  texts: string[];
  input_type: string;
  embedding_types?: string[];
  truncate?: string;
  output_dimension?: number;
  max_tokens?: number;
}

const FIELDS = ['model', 'texts', 'input_type', 'embedding_types', 'truncate', 'output_dimension', 'max_tokens', 'priority'];
const INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering'];
const EMBEDDING_TYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary', 'base64'];
const V4_DIMENSIONS = [256, 512, 1024, 1536];

/** The tokens the fake bills a text: one per 4 characters, at least one. */
export const cohereTokens = (texts: string[]) => texts.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);

export class FakeCohere extends FakeJsonUpstream<CohereEmbedBody> {
  protected readonly path = '/v2/embed';
  protected readonly badKey: Refusal = { status: 401, message: 'invalid api token' };
  private seq = 0;

  protected errorBody(message: string): unknown {
    return { id: `fake-error-${++this.seq}`, message };
  }

  protected check(raw: unknown): Refusal | undefined {
    const bad = (message: string): Refusal => ({ status: 400, message: `invalid request: ${message}` });
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return bad('the body must be an object');
    const b = raw as Record<string, unknown>;
    const extra = unknownKeys(b, FIELDS);
    if (extra.length) return bad(`unknown field ${extra[0]}`);
    if (typeof b.model !== 'string' || !b.model) return bad('model is required');
    if (!Array.isArray(b.texts)) return bad('texts is required (this fake embeds texts only)');
    if (!isTexts(b.texts, 96)) return bad(`total number of texts must be between 1 and 96 - received ${b.texts.length}`);
    if (typeof b.input_type !== 'string' || !INPUT_TYPES.includes(b.input_type)) return bad('valid input_type must be provided with the provided model');
    const types = b.embedding_types;
    if (types !== undefined && (!Array.isArray(types) || types.length === 0 || types.some((t) => !EMBEDDING_TYPES.includes(t as string))))
      return bad('embedding_types must be a list of float, int8, uint8, binary, ubinary, base64');
    // The fake answers floats only: any other type asked for is a request it cannot check the adapter reads rightly.
    if (types?.some((t) => t !== 'float')) return bad('this fake answers only the float embedding type');
    if (b.truncate !== undefined && !['NONE', 'START', 'END'].includes(b.truncate as string)) return bad('truncate must be one of NONE, START, END');
    if (b.output_dimension !== undefined) {
      if (!/^embed-v[4-9]/.test(b.model)) return bad(`output_dimension is not supported for model ${b.model}`);
      if (!V4_DIMENSIONS.includes(b.output_dimension as number)) return bad('output_dimension must be one of 256, 512, 1024, 1536');
    }
    if (b.max_tokens !== undefined && !(Number.isInteger(b.max_tokens) && (b.max_tokens as number) > 0)) return bad('max_tokens must be a positive integer');
    return undefined;
  }

  protected answer(body: CohereEmbedBody, reportUsage: boolean): unknown {
    const dims = body.output_dimension ?? 4;
    return {
      id: `fake-embed-${++this.seq}`,
      embeddings: { float: body.texts.map((t) => fakeVector(t, dims)) },
      texts: body.texts,
      meta: { api_version: { version: '2' }, ...(reportUsage ? { billed_units: { input_tokens: cohereTokens(body.texts) } } : {}) },
      response_type: 'embeddings_by_type',
    };
  }
}
