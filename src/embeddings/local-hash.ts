// local-hash-v1: a deterministic embedding by signed feature hashing of words, word pairs and character trigrams.
//
// Fixed forever (a vector must not change between releases or machines; test/embeddings-model.test.ts
// pins exact outputs):
//   1. text → NFKC → toLowerCase().
//   2. tokens: runs of letters, marks and digits; every Han, Hiragana or Katakana character is a
//      token of its own (those scripts do not separate words with spaces).
//   3. features and weights, for each token in order: "w:" + token (1.0), "b:" + token + " " +
//      next token (0.7), and unless it is a single CJK character "c:" + each trigram (of code
//      points) of "\u0002" + token + "\u0003" (0.4). With no token at all, "c:" trigrams of the
//      text without white space stand in. Features are summed in order of first occurrence.
//   4. each feature f with count n adds ±weight × sqrt(n) to one bucket: with h = murmur3(f,
//      0x5eed0001), the bucket is (h >>> 1) mod d and the sign is + when h's low bit is 0.
//      murmur3 is MurmurHash3_x86_32 over the UTF-16 code units (little-endian) of f.
//   5. divide by the L2 norm (summed in index order), round to float32.
// sqrt and the arithmetic above are exactly rounded in IEEE 754, so every platform agrees.

export const LOCAL_HASH_MODEL = 'local-hash-v1';
export const LOCAL_HASH_DEFAULT_DIMENSIONS = 384;
export const LOCAL_HASH_MAX_DIMENSIONS = 3072;

const SEED = 0x5eed0001;
const W_WORD = 1.0;
const W_BIGRAM = 0.7;
const W_TRIGRAM = 0.4;

/** MurmurHash3_x86_32 over the UTF-16 code units of `s`, taken two at a time as little-endian words. */
export function murmur3(s: string, seed: number): number {
  let h = seed >>> 0;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  const n = s.length;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    let k = (s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16)) >>> 0;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < n) {
    let k = s.charCodeAt(i);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= n * 2;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const TOKEN_RUN = /[\p{L}\p{M}\p{N}]+/gu;
const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const CJK_SPLIT = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}])/u;

export function tokenize(text: string): string[] {
  const normalized = text.normalize('NFKC').toLowerCase();
  const tokens: string[] = [];
  for (const m of normalized.matchAll(TOKEN_RUN)) {
    const run = m[0];
    if (!CJK_CHAR.test(run)) {
      tokens.push(run);
      continue;
    }
    for (const part of run.split(CJK_SPLIT)) if (part) tokens.push(part);
  }
  return tokens;
}

function addTrigrams(counts: Map<string, number>, word: string) {
  const padded = `\u0002${word}\u0003`;
  // Code points, not UTF-16 units: a trigram never splits a surrogate pair.
  const cps = padded.length === [...padded].length ? null : [...padded];
  const n = cps ? cps.length : padded.length;
  for (let i = 0; i + 3 <= n; i++) {
    const f = `c:${cps ? cps[i]! + cps[i + 1]! + cps[i + 2]! : padded.slice(i, i + 3)}`;
    counts.set(f, (counts.get(f) ?? 0) + 1);
  }
}

const WEIGHTS: Record<string, number> = { w: W_WORD, b: W_BIGRAM, c: W_TRIGRAM, e: W_TRIGRAM };
/** The feature of blank text: no word, pair or trigram feature starts with "e:". */
const BLANK = 'e:';

/**
 * The features of a text with their counts, in first-occurrence order: for each token its word,
 * then its pair with the next token, then its trigrams.
 */
export function featureCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  const tokens = tokenize(text);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const w = `w:${t}`;
    counts.set(w, (counts.get(w) ?? 0) + 1);
    if (i + 1 < tokens.length) {
      const b = `b:${t} ${tokens[i + 1]}`;
      counts.set(b, (counts.get(b) ?? 0) + 1);
    }
    if (!(t.length === 1 && CJK_CHAR.test(t))) addTrigrams(counts, t);
  }
  if (tokens.length === 0) {
    const squeezed = text.normalize('NFKC').toLowerCase().replace(/\s+/gu, '');
    if (squeezed) addTrigrams(counts, squeezed);
  }
  // Blank text (spaces, tabs, U+3000…) has no features of its own: one feature of its own kind, so its
  // vector is a unit vector like every other (a zero vector has no cosine), the same for every blank text.
  if (counts.size === 0) counts.set(BLANK, 1);
  return counts;
}

/** The weighted features of a text (for tests and the README's explanation). */
export function features(text: string): Map<string, { count: number; weight: number }> {
  return new Map([...featureCounts(text)].map(([f, count]) => [f, { count, weight: WEIGHTS[f[0]!]! }]));
}

/** The embedding of `text` in `dimensions` buckets, L2-normalised (blank text too: it has a feature of its own). */
export function embedLocalHash(text: string, dimensions = LOCAL_HASH_DEFAULT_DIMENSIONS): Float32Array {
  const acc = new Float64Array(dimensions);
  for (const [f, count] of featureCounts(text)) {
    const weight = f.charCodeAt(0) === 0x77 ? W_WORD : f.charCodeAt(0) === 0x62 ? W_BIGRAM : W_TRIGRAM;
    const h = murmur3(f, SEED);
    acc[(h >>> 1) % dimensions]! += ((h & 1) === 0 ? weight : -weight) * Math.sqrt(count);
  }
  let sum = 0;
  for (let i = 0; i < dimensions; i++) sum += acc[i]! * acc[i]!;
  const out = new Float32Array(dimensions);
  if (sum === 0) return out;
  const norm = Math.sqrt(sum);
  for (let i = 0; i < dimensions; i++) out[i] = acc[i]! / norm;
  return out;
}
