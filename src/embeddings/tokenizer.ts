// Token counting with OpenAI's cl100k_base BPE (gpt-tokenizer), as the usage of local models.
import { countTokens, isWithinTokenLimit } from 'gpt-tokenizer/encoding/cl100k_base';

// Special-token text such as "<|endoftext|>" in an input is counted as ordinary text.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Tokens in `text`, or false as soon as it passes `limit` (long inputs are not fully encoded). */
export function countWithin(text: string, limit: number): number | false {
  return isWithinTokenLimit(text, limit, AS_TEXT);
}

export const count = (text: string) => countTokens(text, AS_TEXT);
