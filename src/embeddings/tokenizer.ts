// Token counting with OpenAI's cl100k_base BPE (gpt-tokenizer), as the usage of local models; and token ids decoded to text.
import ranks from 'gpt-tokenizer/bpeRanks/cl100k_base';
import { countTokens, decode, isWithinTokenLimit } from 'gpt-tokenizer/encoding/cl100k_base';

// Special-token text such as "<|endoftext|>" in an input is counted as ordinary text.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * The longest run of non-space (or of space) characters encoded whole. BPE merges within one pre-token
 * (a run of letters, of punctuation, of spaces…) in time that grows with the square of its length:
 * one 200,000-letter word took 18 s, a blocked event loop. A longer run is counted in pieces of this
 * length, each at least one token: at most one token more per 64 characters than OpenAI would count,
 * and only in such runs (long hashes, base64, URLs); prose is counted exactly.
 */
export const LONG_RUN = 64;
const longRun = new RegExp(`\\S{${LONG_RUN + 1},}|\\s{${LONG_RUN + 1},}`, 'g');

/** `text` as the pieces counted one after the other: as it is, unless it has runs longer than LONG_RUN. */
function pieces(text: string): string[] {
  longRun.lastIndex = 0;
  if (!longRun.test(text)) return [text];
  const out: string[] = [];
  let at = 0;
  longRun.lastIndex = 0;
  for (const m of text.matchAll(longRun)) {
    if (m.index > at) out.push(text.slice(at, m.index));
    for (let i = 0; i < m[0].length; i += LONG_RUN) out.push(m[0].slice(i, i + LONG_RUN));
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** Characters handed to the BPE so far in this process (tests check that refusals stop counting at the limit). */
export const counted = { chars: 0 };

/** Tokens in `text`, or false as soon as it passes `limit` (long inputs are not fully encoded). */
export function countWithin(text: string, limit: number): number | false {
  const parts = pieces(text);
  if (parts.length === 1) {
    counted.chars += text.length;
    return isWithinTokenLimit(text, limit, AS_TEXT);
  }
  let total = 0;
  for (const part of parts) {
    counted.chars += part.length;
    const n = isWithinTokenLimit(part, limit - total, AS_TEXT);
    if (n === false) return false;
    total += n;
  }
  return total;
}

/** Tokens in `text` (counted as countWithin does). */
export const count = (text: string) => pieces(text).reduce((sum, part) => sum + countTokens(part, AS_TEXT), 0);

/**
 * Token ids of cl100k_base run from 0 to 100276 (tiktoken's n_vocab): 100,256 byte-pair tokens, then the special ones
 * (<|endoftext|> 100257, the FIM tokens, <|endofprompt|> 100276); 100256 and 100261–100275 are no token.
 */
export const CL100K_IDS = 100_277;
/** The byte-pair tokens' ids (0 to 100255): what a request's token-id input may hold. */
export const BPE_IDS = 100_256;

// Every token's bytes, one after the other (`start[id]` to `start[id + 1]`), and whether an id is a token: made on the
// first use (~30 ms, under 1 MB). gpt-tokenizer's own decode is not used: it joins bytes that are not UTF-8 on their
// own by copying all it holds for each one (a request of such tokens took seconds), and carries a partial character
// from one call to the next in a shared stream decoder.
let table: { bytes: Uint8Array; start: Int32Array; known: Uint8Array } | undefined;
function tokenTable() {
  if (table) return table;
  const utf8 = new TextEncoder();
  const pieces: Uint8Array[] = new Array(CL100K_IDS);
  const known = new Uint8Array(CL100K_IDS);
  let total = 0;
  for (let id = 0; id < CL100K_IDS; id++) {
    let piece: string | readonly number[] | undefined = ranks[id];
    if (piece === undefined && id >= ranks.length) {
      // A special token (plain ASCII text), or no token at all.
      try {
        piece = decode([id]);
      } catch {}
    }
    if (piece === undefined) {
      pieces[id] = new Uint8Array(0);
      continue;
    }
    known[id] = 1;
    pieces[id] = typeof piece === 'string' ? utf8.encode(piece) : Uint8Array.from(piece);
    total += pieces[id]!.length;
  }
  const bytes = new Uint8Array(total);
  const start = new Int32Array(CL100K_IDS + 1);
  for (let id = 0; id < CL100K_IDS; id++) {
    bytes.set(pieces[id]!, start[id]!);
    start[id + 1] = start[id]! + pieces[id]!.length;
  }
  table = { bytes, start, known };
  return table;
}

/** Whether `id` is a cl100k_base token (an integer from 0 to 100276, not one of the unused ids). */
export function isToken(id: number): boolean {
  return Number.isInteger(id) && id >= 0 && id < CL100K_IDS && tokenTable().known[id] === 1;
}

/** The bytes of UTF-8 the tokens stand for (what decodeTokens decodes), counted without decoding. */
export function tokenBytes(ids: readonly number[]): number {
  const { start } = tokenTable();
  let n = 0;
  for (const id of ids) n += start[id + 1]! - start[id]!;
  return n;
}

/**
 * The text of cl100k_base tokens (each a token: see isToken), as tiktoken decodes it: their bytes joined, read as
 * UTF-8, a byte sequence that is not UTF-8 read as U+FFFD. Special tokens are their text ("<|endoftext|>").
 */
export function decodeTokens(ids: readonly number[]): string {
  const { bytes, start } = tokenTable();
  const out = Buffer.allocUnsafe(tokenBytes(ids));
  let at = 0;
  for (const id of ids) {
    const from = start[id]!;
    const to = start[id + 1]!;
    for (let k = from; k < to; k++) out[at++] = bytes[k]!;
  }
  return out.toString('utf8');
}
