// Token counting with OpenAI's cl100k_base BPE (gpt-tokenizer), as the usage of local models.
import { countTokens, isWithinTokenLimit } from 'gpt-tokenizer/encoding/cl100k_base';

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
