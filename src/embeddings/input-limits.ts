// An embeddings request's inputs, checked cheapest first: their lengths in characters, then their tokens, counted no
// further than the limits (a refusal must not cost more than the work it refuses).
import { badRequest } from '../errors.js';
import { MAX_INPUT_TOKENS, MAX_REQUEST_TOKENS } from './schema.js';
import { countWithin } from './tokenizer.js';
import { USE_LITE_MAX_REQUEST_PIECES, USE_LITE_MAX_TOKENS, USE_LITE_MODEL, type UseLiteTokenizer } from './use-lite-text.js';
import { bigWorkTurn } from './turns.js';

/**
 * Characters a token may stand for, at most, before an input is refused uncounted. English prose is ~4 characters a
 * token, code ~3; cl100k's longest tokens are runs of spaces or punctuation, which the counter takes 64 at a time.
 */
export const MAX_CHARS_PER_TOKEN = 8;
/** 65,536 characters: an input this long is refused without being counted. */
export const MAX_INPUT_CHARS = MAX_INPUT_TOKENS * MAX_CHARS_PER_TOKEN;
/** 2,400,000 characters in all: a request this long is refused without counting any of it. */
export const MAX_REQUEST_CHARS = MAX_REQUEST_TOKENS * MAX_CHARS_PER_TOKEN;
/** Counting takes a turn (turns.ts) after this many characters (~1 ms of cl100k counting). */
const YIELD_EVERY_CHARS = 8_192;

const inputTooLong = (i: number, why: string) =>
  badRequest(`This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, but input[${i}] ${why}. Shorten it.`, {
    param: `input[${i}]`,
    code: 'context_length_exceeded',
  });
const requestTooLong = (why: string) =>
  badRequest(`The request has ${why}; send fewer inputs per request.`, { param: 'input', code: 'max_tokens_per_request' });

// A big request's counting takes turns with all other big work (turns.ts): one slice of it per turn of the event loop.
const turn = bigWorkTurn;

/**
 * The tokens of each input (cl100k_base; for use-lite, the model's own pieces, at most 128 an input), or a 400:
 * an input over 65,536 characters or 8192 tokens, a request over 2,400,000 characters or 300,000 tokens (use-lite:
 * 16,384 pieces), and use-lite text the model does not know. Lengths are checked before anything is counted, each
 * input is counted only up to what the limits leave, and the event loop turns between inputs every few milliseconds.
 */
export async function countInputs(inputs: readonly string[], useLite: { pieces: UseLiteTokenizer; allowUnsupportedText: boolean } | null): Promise<number[]> {
  let chars = 0;
  for (let i = 0; i < inputs.length; i++) {
    const n = inputs[i]!.length;
    if (n > MAX_INPUT_CHARS) throw inputTooLong(i, `has ${n} characters (more than ${MAX_INPUT_CHARS}, ${MAX_CHARS_PER_TOKEN} per token)`);
    chars += n;
  }
  if (chars > MAX_REQUEST_CHARS)
    throw requestTooLong(
      `${chars} characters in all, more than ${MAX_REQUEST_CHARS} (${MAX_CHARS_PER_TOKEN} per token of the ${MAX_REQUEST_TOKENS}-token limit)`,
    );

  const tokens: number[] = new Array(inputs.length);
  let total = 0;
  let pieces = 0;
  let sinceTurn = 0;
  for (let i = 0; i < inputs.length; i++) {
    const text = inputs[i]!;
    if (sinceTurn >= YIELD_EVERY_CHARS) {
      sinceTurn = 0;
      await turn();
    }
    sinceTurn += text.length;
    const left = MAX_REQUEST_TOKENS - total;
    const n = countWithin(text, Math.min(MAX_INPUT_TOKENS, left));
    if (n === false) {
      if (left < MAX_INPUT_TOKENS) throw requestTooLong(`more than ${MAX_REQUEST_TOKENS} tokens in all`);
      throw inputTooLong(i, 'is longer');
    }
    total += n;
    tokens[i] = n;
    if (!useLite) continue;
    // The model reads an input's first 128 pieces: the tokenizer reads no further than it needs for them, and what it
    // read is what is judged.
    const read = useLite.pieces.tokenize(text);
    const why = useLite.allowUnsupportedText ? null : useLite.pieces.unsupported(read.read < text.length ? text.slice(0, read.read) : text);
    if (why)
      throw badRequest(
        `input[${i}] is ${why}, which ${USE_LITE_MODEL} (an English model) does not know: its vector would be noise. Use local-hash-v1 or an upstream model for it, or send "allow_unsupported_text": true to embed it anyway.`,
        { param: `input[${i}]`, code: 'unsupported_text' },
      );
    tokens[i] = read.count;
    pieces += read.count;
    // use-lite's cost is in its pieces (~0.6–0.8 ms of one core each): one request may not hold the model for more than ~10–13 s.
    if (pieces > USE_LITE_MAX_REQUEST_PIECES)
      throw requestTooLong(
        `more than ${USE_LITE_MAX_REQUEST_PIECES} ${USE_LITE_MODEL} pieces in all (each input counts its pieces, at most ${USE_LITE_MAX_TOKENS})`,
      );
  }
  return tokens;
}
