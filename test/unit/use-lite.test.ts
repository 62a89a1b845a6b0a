// use-lite: the Universal Sentence Encoder lite model, loaded from disk, its SentencePiece tokenizer
// (checked against the tokenizer of the @energetic-ai/embeddings 0.2.0 wrapper), its token limit,
// and the texts it refuses. The model is loaded once for the whole file.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { SentencePieceEncoder, type VocabularyEntry } from '../../src/embeddings/sentencepiece.js';
import {
  loadUseLite,
  MAX_CALL_SLOTS,
  openUseLite,
  planBatches,
  type SentenceEncoder,
  USE_LITE_DIMENSIONS,
  USE_LITE_MAX_TOKENS,
  useLiteModelDir,
} from '../../src/embeddings/use-lite.js';

const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

const cosine = (a: Float32Array, b: Float32Array) => {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i] * b[i];
  return dot;
};
const norm = (v: Float32Array) => Math.sqrt(cosine(v, v));

let encoder: SentenceEncoder;
let vocabulary: VocabularyEntry[];
const fetchCalls: string[] = [];

beforeAll(async () => {
  // Offline: any fetch during loading fails the suite.
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (input: unknown) => {
    fetchCalls.push(String(input));
    throw new Error('network use');
  }) as typeof fetch;
  try {
    encoder = await loadUseLite();
  } finally {
    globalThis.fetch = realFetch;
  }
  vocabulary = JSON.parse(readFileSync(path.join(useLiteModelDir(), 'vocab.json'), 'utf8')) as VocabularyEntry[];
});

describe('loading', () => {
  it('loads from the installed package without fetching anything', () => {
    expect(fetchCalls).toEqual([]);
  });

  it('is loaded once per process: a second loadUseLite() returns the same encoder', async () => {
    expect(await loadUseLite()).toBe(encoder);
  });

  it('the tokenizer alone loads without TensorFlow.js, and agrees with the encoder', async () => {
    // In a fresh process: importing use-lite and tokenizing must not start TF.js (an API process can
    // count tokens and refuse unsupported text without the model).
    const script = `
      const m = await import('./src/embeddings/use-lite.ts');
      const t = await m.loadUseLiteTokenizer();
      console.log(JSON.stringify({ ids: t.tokenize('The car would not start').ids, unsupported: t.unsupported('日本語です'), tf: '_tfengine' in globalThis }));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] });
    const child = JSON.parse(out.toString());
    expect(child).toEqual({ ids: encoder.tokenize('The car would not start').ids, unsupported: 'Chinese, Japanese or Korean text', tf: false });
  });

  it('dispose() lets calls already made finish, then refuses to embed', async () => {
    const other = await openUseLite();
    const pending = other.embed(['still alive', 'and well']);
    other.dispose();
    expect(await pending).toHaveLength(2);
    await expect(other.embed(['gone'])).rejects.toThrow(/disposed/);
  });
});

describe('vectors', () => {
  it('are 512-dimension unit-length Float32Arrays', async () => {
    const vectors = await encoder.embed(['The car would not start', 'a', 'Great party last night 🎉🎉 see you soon 👍']);
    expect(vectors).toHaveLength(3);
    for (const v of vectors) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v).toHaveLength(USE_LITE_DIMENSIONS);
      expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
    }
  });

  it('paraphrases score above every unrelated pairing of their sentences', async () => {
    const pairs = [
      ['The car would not start', 'My automobile failed to turn on'],
      ['How do I reset my password?', 'I forgot my password and need to change it'],
      ['The weather is lovely today', 'It is a beautiful sunny day'],
      ['She is reading a novel in the library', 'A woman reads a book at the library'],
      ['The stock market fell sharply this morning', 'Share prices dropped steeply today'],
      ["I'm hungry, let's get some food", "I'd like to eat something, I'm starving"],
      ['The doctor prescribed antibiotics for the infection', 'The physician gave her medicine to treat the infection'],
      ['Our flight was delayed by three hours', 'The plane took off three hours late'],
      ['The kids are playing football in the park', 'Children play soccer in the park'],
      ['Please turn off the lights when you leave', 'Switch off the lamps as you go out'],
    ];
    const texts = pairs.flat();
    const v = await encoder.embed(texts);
    const failures: string[] = [];
    pairs.forEach(([a, b], i) => {
      const paraphrase = cosine(v[2 * i], v[2 * i + 1]);
      for (let j = 0; j < texts.length; j++) {
        if (Math.floor(j / 2) === i) continue;
        for (const k of [2 * i, 2 * i + 1]) {
          const unrelated = cosine(v[k], v[j]);
          if (unrelated >= paraphrase) failures.push(`"${a}" ~ "${b}" ${paraphrase.toFixed(3)} <= "${texts[k]}" ~ "${texts[j]}" ${unrelated.toFixed(3)}`);
        }
      }
    });
    expect(failures).toEqual([]);
  });

  it('a batch gives the same vectors as one text at a time, with mixed lengths and an empty text', async () => {
    const long = 'This sentence is repeated to make an input much longer than the others in its batch. '.repeat(4);
    const texts = ['The car would not start', long, 'short', '', 'Another sentence of moderate length, with a comma.', 'a'];
    const batch = await encoder.embed(texts);
    for (let i = 0; i < texts.length; i++) {
      const [single] = await encoder.embed([texts[i]]);
      expect(cosine(single, batch[i]), texts[i]).toBeGreaterThan(0.9999);
    }
  });

  it('overlapping embed() calls each get their own texts’ vectors', async () => {
    const groups = [['The weather is lovely today'], ['How do I reset my password?', 'x'], ['Children play soccer in the park', '', 'The plane took off']];
    const alone: Float32Array[][] = [];
    for (const g of groups) alone.push(await encoder.embed(g));
    const together = await Promise.all(groups.map((g) => encoder.embed(g)));
    together.forEach((vs, i) => {
      expect(vs).toHaveLength(groups[i].length);
      vs.forEach((v, k) => expect(cosine(v, alone[i][k])).toBeGreaterThan(0.9999));
    });
  });

  it('overlapping embed() calls run one at a time, in call order', async () => {
    const finished: string[] = [];
    const big = Array.from({ length: 48 }, (_, i) => `Sentence number ${i} of a large batch, with a few more words in it.`);
    await Promise.all([
      encoder.embed(big).then(() => finished.push('big')),
      encoder.embed(['small']).then(() => finished.push('small')),
      encoder.embed(['another small one']).then(() => finished.push('another')),
    ]);
    expect(finished).toEqual(['big', 'small', 'another']);
  });

  it('an empty text does not throw: it is the lone word-boundary piece, with a fixed unit vector', async () => {
    const boundary = vocabulary.findIndex(([piece]) => piece === '\u2581');
    expect(encoder.tokenize('')).toEqual({ ids: [boundary], count: 1, truncated: false, read: 0 });
    const [a, b] = await encoder.embed(['', '']);
    expect(Math.abs(norm(a) - 1)).toBeLessThan(1e-5);
    expect(cosine(a, b)).toBeGreaterThan(0.9999);
    expect(await encoder.embed([])).toEqual([]);
  });
});

describe('batch planning', () => {
  it('puts every input in exactly one model call and keeps calls within MAX_CALL_SLOTS', () => {
    const lengths = Array.from({ length: 300 }, (_, i) => 1 + ((i * 37) % USE_LITE_MAX_TOKENS));
    const groups = planBatches(lengths);
    expect(groups.flat().sort((a, b) => a - b)).toEqual(lengths.map((_, i) => i));
    for (const g of groups) expect(g.length * Math.max(...g.map((i) => lengths[i]))).toBeLessThanOrEqual(MAX_CALL_SLOTS);
  });

  it('does not pad a batch of short inputs to one long input', () => {
    const lengths = [12, 14, 11, USE_LITE_MAX_TOKENS, 13, 12, 15, 12];
    const groups = planBatches(lengths);
    const withLong = groups.find((g) => g.includes(3))!;
    expect(withLong).toEqual([3]);
    expect(groups).toHaveLength(2);
  });
});

describe('tokenizer', () => {
  // Texts for which our ids must equal the wrapper's: hand-picked cases, then seeded random ones.
  function tokenizerCases(): string[] {
    const picked = [
      'The car would not start',
      'My automobile failed to turn on.',
      'Hello, world!  Two  spaces',
      ' leading and trailing ',
      '',
      ' ',
      'URL: https://example.com/a?b=c:30 at 10:00',
      'Smileys :) :( :-) ): ok',
      'naïve café — “quoted” ‘single’ …',
      'ﬁne ligature ＦＵＬＬＷＩＤＴＨ ①② ㎏',
      '日本語のテキスト',
      '中文文本 mixed with English',
      '한국어 텍스트',
      'emoji 😀🎉 party 👍🏽',
      'tab\tnew\nline\r\n',
      'Ελληνικά και русский текст',
      'عربي नमस्ते',
      'supercalifragilisticexpialidocious antidisestablishmentarianism',
      '”5 ”5”5',
      '<s> </s> extra_token_id_1 �',
      '\u00a0nbsp\u2003em space\u200bzero width',
      'a:b::c:::d',
      "I'm can't won't they'll",
      'e\u0301 composed by NFKC',
      // Equal-score segmentations ('33|3' and '3|33'): the one whose last piece starts later wins.
      ')333',
      '(333):(',
      'a(aa333',
    ];
    let seed = 12345;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
    const chars = [...'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ.,:;!?\'"-()0123456789 éüñçß€£—–…日本中한😀\t\n▁'];
    const pieces = vocabulary.slice(6).map(([p]) => p.replaceAll('\u2581', ' '));
    const generated: string[] = [];
    for (let i = 0; i < 400; i++) {
      let s = '';
      const n = Math.floor(random() * 50);
      for (let j = 0; j < n; j++) s += chars[Math.floor(random() * chars.length)];
      generated.push(s);
    }
    for (let i = 0; i < 400; i++) {
      let s = '';
      const n = Math.floor(random() * 12);
      for (let j = 0; j < n; j++) s += pieces[Math.floor(random() * pieces.length)] + (random() < 0.3 ? '' : ' ');
      generated.push(s);
    }
    return [...picked, ...generated];
  }

  it('gives the same ids as the @energetic-ai/embeddings 0.2.0 tokenizer', () => {
    const texts = tokenizerCases();
    // The wrapper brings its own TF.js into the global engine, so it runs in a child process.
    const script = `
      const { EmbeddingsModel } = require('@energetic-ai/embeddings');
      const vocabulary = require(${JSON.stringify(path.join(useLiteModelDir(), 'vocab.json'))});
      const { tokenizer } = new EmbeddingsModel({ vocabulary, model: null });
      let input = '';
      process.stdin.on('data', (d) => (input += d)).on('end', () => {
        process.stdout.write(JSON.stringify(JSON.parse(input).map((t) => tokenizer.encode(t))));
      });`;
    const out = execFileSync(process.execPath, ['-e', script], {
      cwd: ROOT,
      input: JSON.stringify(texts),
      maxBuffer: 64 * 2 ** 20,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const expected = JSON.parse(out.toString()) as number[][];
    const ours = new SentencePieceEncoder(vocabulary);
    const differences = texts.flatMap((t, i) => {
      const got = ours.encode(t);
      return JSON.stringify(got) === JSON.stringify(expected[i]) ? [] : [{ text: t, got, expected: expected[i] }];
    });
    expect(differences).toEqual([]);
    expect(texts.length).toBeGreaterThan(800);
  });

  it('segments known words into the vocabulary’s pieces', () => {
    const pieces = (t: string) => encoder.tokenize(t).ids.map((id) => vocabulary[id][0]);
    expect(pieces('The car would not start')).toEqual(['▁The', '▁car', '▁would', '▁not', '▁start']);
    expect(pieces('ﬁne')).toEqual(['▁fine']); // NFKC first
  });
});

describe('token limit', () => {
  const candidates = 'the quick brown fox jumps over a lazy dog while seven old men judge boxing matches in town'.split(' ');
  // A text of exactly n pieces: words that are one piece each ('▁word').
  const textOf = (n: number, first = 'the') => {
    const words = candidates.filter((w) => encoder.tokenize(w).count === 1);
    return [first, ...Array.from({ length: n - 1 }, (_, i) => words[i % words.length])].join(' ');
  };

  it(`cuts inputs at ${USE_LITE_MAX_TOKENS} pieces and says so`, () => {
    const exact = encoder.tokenize(textOf(USE_LITE_MAX_TOKENS));
    expect(exact).toMatchObject({ count: USE_LITE_MAX_TOKENS, truncated: false });
    const over = textOf(USE_LITE_MAX_TOKENS + 40);
    const cut = encoder.tokenize(over);
    expect(cut).toMatchObject({ count: USE_LITE_MAX_TOKENS, truncated: true });
    expect(cut.ids).toEqual(new SentencePieceEncoder(vocabulary).encode(over).slice(0, USE_LITE_MAX_TOKENS));
  });

  it(`the model itself reads no further than ${USE_LITE_MAX_TOKENS} pieces: text after them does not change the vector`, async () => {
    const base = textOf(USE_LITE_MAX_TOKENS);
    const [plain, after, before] = await encoder.embed([
      base,
      `${base} plus many more words about something else entirely`,
      textOf(USE_LITE_MAX_TOKENS, 'dog'),
    ]);
    expect(cosine(plain, after)).toBeGreaterThan(0.99999);
    expect(cosine(plain, before)).toBeLessThan(0.9999);
  });
});

describe('unsupported text', () => {
  it.each([
    ['你好，世界。今天天气很好。', 'Chinese, Japanese or Korean text'],
    ['日本語のテキストです', 'Chinese, Japanese or Korean text'],
    ['한국어 텍스트입니다', 'Chinese, Japanese or Korean text'],
    ['Привет, как дела?', 'Cyrillic text (e.g. Russian or Ukrainian)'],
    ['مرحبا بالعالم', 'Arabic-script text (e.g. Arabic, Persian or Urdu)'],
    ['नमस्ते दुनिया', 'Indic-script text (e.g. Hindi, Bengali or Tamil)'],
    ['Γειά σου κόσμε', 'Greek text'],
    ['😀🎉👍', 'text made mostly of characters the model does not know (emoji or symbols)'],
  ])('%s is refused as %s', (text, name) => {
    expect(encoder.unsupported(text)).toBe(name);
  });

  it.each([
    'The car would not start',
    'Le chat est sur la table, très content de sa journée.',
    'Der Kühlschrank ist leer und ich habe Hunger.',
    'Great party last night 🎉🎉🎉 see you soon 👍😀',
    'How do I say 你好 in English?',
    'https://example.com/path?q=1 and x = a + b; // sum',
    '12345',
    '',
  ])('%j is accepted', (text) => {
    expect(encoder.unsupported(text)).toBeNull();
  });

  it('different Chinese texts are the same input to the model, which is why they are refused', () => {
    expect(encoder.tokenize('今天天气很好').ids).toEqual(encoder.tokenize('我想学习中文').ids);
  });
});
