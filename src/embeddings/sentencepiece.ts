// A SentencePiece (unigram) encoder for the Universal Sentence Encoder lite vocabulary.
//
// The vocabulary is a list of [piece, score] pairs; a piece's id is its index. Encoding follows the
// tokenizer the model is published with (TensorFlow.js's USE-lite tokenizer), which this file
// reproduces exactly, quirks included, because the model was exported with ids from it:
// - the text is NFKC-normalised; a non-empty text gets the word-boundary marker '▁' (U+2581) in
//   front and every space (U+0020) becomes '▁';
// - the first `reserved` entries (unknown, <s>, </s>, three extra ids) never match text;
// - the segmentation maximises the sum of piece scores (Viterbi over code points). At a position
//   where no piece starts, one code point becomes the unknown id with score 0. A missing score
//   (null in the published vocab.json, e.g. for ':') counts as 0. A position's best score of
//   exactly 0 counts as "not reached yet", and among equal scores the later candidate (the one
//   starting further right) wins;
// - when a piece occurs twice in the list, the later entry's id and score are used;
// - consecutive unknown ids collapse into one.

export const WORD_BOUNDARY = '\u2581';

/** [piece, score] as in the model's vocab.json; the score may be null there. */
export type VocabularyEntry = readonly [string, number | null];

interface TrieNode {
  next: Map<number, TrieNode>;
  id: number;
  score: number;
}

const newNode = (): TrieNode => ({ next: new Map(), id: -1, score: 0 });

export class SentencePieceEncoder {
  readonly unknownId: number;
  readonly size: number;
  private readonly root = newNode();

  constructor(vocabulary: readonly VocabularyEntry[], options: { reserved?: number; unknownId?: number } = {}) {
    const reserved = options.reserved ?? 6;
    this.unknownId = options.unknownId ?? 0;
    this.size = vocabulary.length;
    for (let id = reserved; id < vocabulary.length; id++) {
      const [piece, score] = vocabulary[id];
      if (piece.length === 0) continue;
      let node = this.root;
      for (const ch of piece) {
        const cp = ch.codePointAt(0)!;
        let child = node.next.get(cp);
        if (!child) node.next.set(cp, (child = newNode()));
        node = child;
      }
      node.id = id;
      node.score = score ?? 0;
    }
  }

  /** The text as the model sees it: NFKC, '▁' in front and for every space; '' stays ''. */
  static prepare(text: string): string {
    const normalized = text.normalize('NFKC');
    return normalized.length === 0 ? '' : WORD_BOUNDARY + normalized.replaceAll(' ', WORD_BOUNDARY);
  }

  /** The ids of `text` ([] for a text that is empty after normalisation). */
  encode(text: string): number[] {
    return this.analyse(text).ids;
  }

  /**
   * The ids of `text`, with how many code points the prepared text has ('▁' markers included) and
   * how many of them no piece covers (they became the unknown id; '▁' is always covered).
   */
  analyse(text: string): { ids: number[]; points: number; unknownPoints: number } {
    const prepared = SentencePieceEncoder.prepare(text);
    if (prepared.length === 0) return { ids: [], points: 0, unknownPoints: 0 };
    const points: number[] = [];
    for (const ch of prepared) points.push(ch.codePointAt(0)!);
    const n = points.length;
    // best[e]: best total score of a segmentation of points[0, e); piece[e]/length[e]: its last piece.
    const best = new Float64Array(n + 1);
    const piece = new Int32Array(n + 1).fill(this.unknownId);
    const length = new Int32Array(n + 1).fill(1);
    // Going through start positions left to right relaxes each end position in increasing start
    // order, and best[start] is final once every start before it has been visited.
    for (let start = 0; start < n; start++) {
      const base = best[start];
      let node = this.root.next.get(points[start]);
      let matched = false;
      for (let end = start + 1; node; end++) {
        if (node.id >= 0) {
          matched = true;
          const score = node.score + base;
          if (best[end] === 0 || score >= best[end]) {
            best[end] = score;
            piece[end] = node.id;
            length[end] = end - start;
          }
        }
        if (end === n) break;
        node = node.next.get(points[end]);
      }
      if (!matched) {
        const end = start + 1;
        if (best[end] === 0 || base >= best[end]) {
          best[end] = base;
          piece[end] = this.unknownId;
          length[end] = 1;
        }
      }
    }
    const reversed: number[] = [];
    let unknownPoints = 0;
    for (let end = n; end > 0; end -= length[end]) {
      reversed.push(piece[end]);
      if (piece[end] === this.unknownId) unknownPoints += length[end];
    }
    const ids: number[] = [];
    for (let i = reversed.length - 1; i >= 0; i--) {
      const id = reversed[i];
      if (id === this.unknownId && ids.length > 0 && ids[ids.length - 1] === this.unknownId) continue;
      ids.push(id);
    }
    return { ids, points: n, unknownPoints };
  }
}
