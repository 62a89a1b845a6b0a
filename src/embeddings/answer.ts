// A call's answer as the API writes it: the workers' base64 vectors read back as bytes, and OpenAI's response printed.
import { float32ArrayToJsonBytes, float32View } from './float32.js';
import type { HotVectors } from './store.js';
import { bigWorkTurn, mapInTurns } from './turns.js';
import type { UpstreamVectors } from './upstream.js';

/** A call's answer: its vectors (for an upstream model, with their keys in the hot cache) and usage. */
export type Answer = Pick<UpstreamVectors, 'vectors' | 'keys' | 'promptTokens' | 'channelId'>;

/** Base64 characters decoded in one turn of the event loop at most (~1 ms). */
const DECODE_SLICE_CHARS = 1 << 20;

/** A job's base64 vectors as bytes: a big answer's (~11 MB of base64) in slices, taking turns with other big work (turns.ts). */
export const decodeVectors = (vectors: string[]): Promise<Answer['vectors']> =>
  mapInTurns(
    vectors,
    (v) => ({ vector: Buffer.from(v, 'base64'), tokens: 0 }),
    (v) => v.length,
    DECODE_SLICE_CHARS,
  );

/** Floats printed in one turn of the event loop at most (~1 ms), in an answer of more than SLICED_ANSWER_FLOATS. */
const PRINT_SLICE_FLOATS = 16_384;
const SLICED_ANSWER_FLOATS = 65_536;

/**
 * OpenAI's response, written as a string: the vectors are the bulk of it, each float printed as the
 * shortest decimal of its float32 value (src/embeddings/float32.ts), as OpenAI prints them. A cached
 * vector's printed form is kept with it in the hot cache, so a hot input is printed once.
 */
export async function responseJson(model: string, answer: Answer, base64: boolean, hot: HotVectors): Promise<Buffer> {
  const parts: Buffer[] = [Buffer.from('{"object":"list","data":[')];
  // Only a big answer is printed in slices; a small one (the bench's sentences, 64 cached inputs) goes in one go.
  const sliced = !base64 && answer.vectors.reduce((n, v) => n + v.vector.length / 4, 0) > SLICED_ANSWER_FLOATS;
  let floats = 0;
  for (let index = 0; index < answer.vectors.length; index++) {
    const v = answer.vectors[index]!;
    parts.push(Buffer.from(`${index ? ',' : ''}{"object":"embedding","index":${index},"embedding":`));
    if (base64) parts.push(Buffer.from(`"${v.vector.toString('base64')}"`, 'latin1'));
    else if (v.json !== undefined) parts.push(v.json);
    else {
      const json = float32ArrayToJsonBytes(float32View(v.vector));
      if (answer.keys) hot.setJson(answer.keys[index]!, v, json);
      parts.push(json);
      // A big answer (up to 2,097,152 floats, ~150 ms of printing) is printed in slices, one slice of all big work
      // per turn of the event loop (turns.ts): other callers' requests are not held for all of it. Small answers never wait.
      floats += v.vector.length / 4;
      if (sliced && floats >= PRINT_SLICE_FLOATS) {
        floats = 0;
        await bigWorkTurn();
      }
    }
    parts.push(Buffer.from('}'));
  }
  parts.push(Buffer.from(`],"model":${JSON.stringify(model)},"usage":{"prompt_tokens":${answer.promptTokens},"total_tokens":${answer.promptTokens}}}`));
  return Buffer.concat(parts);
}
