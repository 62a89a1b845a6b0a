// A stand-in for Voyage AI's embeddings API (POST /v1/embeddings, Bearer key), checked with the voyageai SDK: the request
// body as Voyage documents it (input ≤ 1,000 texts, input_type null|query|document, truncation, output_dimension on the
// models that take it), answers {object, data: [{object, embedding, index}], model, usage: {total_tokens}}, errors
// {"detail": "…"}.
import { fakeVector } from './fake-openai.js';
import { FakeJsonUpstream, isTexts, type Refusal, unknownKeys } from './fake-json-upstream.js';

export interface VoyageEmbedBody {
  model: string;
  input: string | string[];
  input_type?: 'query' | 'document' | null;
  truncation?: boolean;
  output_dimension?: number | null;
  output_dtype?: string;
  encoding_format?: string | null;
}

const FIELDS = ['model', 'input', 'input_type', 'truncation', 'output_dimension', 'output_dtype', 'encoding_format'];
/** The models that take output_dimension, as Voyage lists them (voyage-3-large, -3.5, -3.5-lite, -code-3, the 4 series). */
const FLEXIBLE = /^voyage-(3-large|3\.5|3\.5-lite|code-3|4.*)$/;

/** The tokens the fake counts for texts: one per 4 characters, at least one. */
export const voyageTokens = (texts: string[]) => texts.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);

export class FakeVoyage extends FakeJsonUpstream<VoyageEmbedBody> {
  protected readonly path = '/v1/embeddings';
  protected readonly badKey: Refusal = { status: 401, message: 'Provided API key is invalid.' };

  protected errorBody(message: string): unknown {
    return { detail: message };
  }

  protected check(raw: unknown): Refusal | undefined {
    const bad = (message: string): Refusal => ({ status: 400, message });
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return bad('The request body must be an object.');
    const b = raw as Record<string, unknown>;
    const extra = unknownKeys(b, FIELDS);
    if (extra.length) return bad(`Unexpected argument: ${extra[0]}.`);
    if (typeof b.model !== 'string' || !b.model) return bad('Argument model is required.');
    const texts = typeof b.input === 'string' ? [b.input] : b.input;
    if (!isTexts(texts, 1000)) return bad('Argument input must be a non-empty string or a list of 1 to 1000 non-empty strings.');
    if (b.input_type !== undefined && b.input_type !== null && b.input_type !== 'query' && b.input_type !== 'document')
      return bad("Argument input_type must be null, 'query' or 'document'.");
    if (b.truncation !== undefined && typeof b.truncation !== 'boolean') return bad('Argument truncation must be a boolean.');
    if (b.output_dimension !== undefined && b.output_dimension !== null) {
      if (!FLEXIBLE.test(b.model)) return bad(`Model ${b.model} does not support output_dimension.`);
      if (![256, 512, 1024, 2048].includes(b.output_dimension as number)) return bad('Argument output_dimension must be one of 256, 512, 1024, 2048.');
    }
    // The fake answers float lists only: another dtype or base64 is a request it cannot check the adapter reads rightly.
    if (b.output_dtype !== undefined && b.output_dtype !== 'float') return bad('This fake answers only output_dtype float.');
    if (b.encoding_format !== undefined && b.encoding_format !== null) return bad('This fake answers only lists of floats (no encoding_format).');
    return undefined;
  }

  protected answer(body: VoyageEmbedBody, reportUsage: boolean): unknown {
    const texts = typeof body.input === 'string' ? [body.input] : body.input;
    const dims = body.output_dimension ?? 4;
    return {
      object: 'list',
      data: texts.map((t, index) => ({ object: 'embedding', embedding: fakeVector(t, dims), index })),
      model: body.model,
      ...(reportUsage ? { usage: { total_tokens: voyageTokens(texts) } } : {}),
    };
  }
}
