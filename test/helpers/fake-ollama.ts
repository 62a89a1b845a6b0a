// A stand-in for an Ollama server's native embed API (POST /api/embed), as its API docs give it: `model` and `input`
// (a text or a list) with optional `truncate`, `dimensions`, `keep_alive` and `options`; `{model, embeddings,
// total_duration, load_duration, prompt_eval_count}` back; errors `{"error": "…"}`. No key unless the test sets one (as
// ollama.com's API takes one, 401 {"error":"unauthorized"} without it). Stricter than Ollama on one point: a field it
// does not document is refused, so a request built with a wrong field name fails here.
import { fakeVector } from './fake-openai.js';
import { extraKeys, type Refused, SelfHostedFake } from './fake-self-hosted.js';

export interface OllamaEmbedBody {
  model: string;
  input: string | string[];
  truncate?: boolean;
  dimensions?: number;
  keep_alive?: string | number;
  options?: Record<string, unknown>;
}

/** The token count the fake reports for these texts (a stand-in for the model's tokenizer). */
export const ollamaTokens = (texts: string[]) => texts.reduce((n, t) => n + 2 + Math.ceil(t.length / 4), 0);

/** The vector the fake answers for a text (at `dims` dimensions, 4 unless asked). */
export const ollamaVector = (text: string, dims?: number) => fakeVector(text, dims ?? 4);

const FIELDS = ['model', 'input', 'truncate', 'dimensions', 'keep_alive', 'options'] as const;

export class FakeOllama extends SelfHostedFake<OllamaEmbedBody> {
  protected readonly route = '/api/embed';
  protected readonly wrongKey: Refused = { status: 401, body: { error: 'unauthorized' } };
  /** The models it has pulled; unset: any model. */
  models?: string[];
  /** Texts longer than this are past the model's context: cut when truncate is on (Ollama's default), else 400. */
  contextChars = 10_000;

  protected errorBody(_status: number, message: string) {
    return { error: message };
  }

  protected check(body: unknown): Refused | undefined {
    const bad = (status: number, message: string): Refused => ({ status, body: this.errorBody(status, message) });
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad(400, 'invalid request body');
    const b = body as Record<string, unknown>;
    const extra = extraKeys(b, FIELDS);
    if (extra.length) return bad(400, `unknown field(s): ${extra.join(', ')}`);
    if (typeof b.model !== 'string' || !b.model) return bad(400, 'model is required');
    const input = b.input;
    if (!(typeof input === 'string' || (Array.isArray(input) && input.every((t) => typeof t === 'string')))) return bad(400, 'invalid input type');
    if (b.truncate !== undefined && typeof b.truncate !== 'boolean') return bad(400, 'truncate must be a boolean');
    if (b.dimensions !== undefined && !(Number.isInteger(b.dimensions) && (b.dimensions as number) > 0))
      return bad(400, 'dimensions must be a positive integer');
    if (b.keep_alive !== undefined && typeof b.keep_alive !== 'string' && typeof b.keep_alive !== 'number') return bad(400, 'invalid keep_alive');
    if (this.models && !this.models.includes(b.model)) return bad(404, `model "${b.model}" not found, try pulling it first`);
    const texts = typeof input === 'string' ? [input] : (input as string[]);
    if (b.truncate === false && texts.some((t) => t.length > this.contextChars)) return bad(400, 'the input length exceeds the context length');
    return undefined;
  }

  protected answer(body: OllamaEmbedBody, reportUsage: boolean) {
    const texts = typeof body.input === 'string' ? [body.input] : body.input;
    return {
      model: body.model,
      embeddings: texts.map((t) => ollamaVector(t, body.dimensions)),
      total_duration: 14_143_917,
      load_duration: 1_019_500,
      ...(reportUsage ? { prompt_eval_count: ollamaTokens(texts) } : {}),
    };
  }
}
