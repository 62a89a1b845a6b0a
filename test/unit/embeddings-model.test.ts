// local-hash-v1 is fixed forever: pinned outputs, the hash it claims to use, and that it means something.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { embedLocalHash, features, murmur3, tokenize } from '../../src/embeddings/local-hash.js';
import { channelOrder } from '../../src/embeddings/relay.js';
import type { ChannelEntry } from '../../src/channels/directory.js';

const fingerprint = (v: Float32Array) => crypto.createHash('sha256').update(Buffer.from(v.buffer)).digest('hex');
const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

/** Textbook MurmurHash3_x86_32 over bytes, to check the string version against. */
function murmur3Bytes(bytes: Buffer, seed: number): number {
  let h = seed >>> 0;
  const n = bytes.length;
  const blocks = n - (n % 4);
  for (let i = 0; i < blocks; i += 4) {
    let k = bytes.readUInt32LE(i);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = n & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= bytes[blocks + 2]! << 16;
    if (tail >= 2) k ^= bytes[blocks + 1]! << 8;
    k ^= bytes[blocks]!;
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
  }
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

describe('local-hash-v1 never changes', () => {
  it('matches the pinned vector for a short text', () => {
    expect(Array.from(embedLocalHash('Hello, world!', 8))).toEqual([
      0.18015094101428986, 0.7206037640571594, -0.3603018820285797, -0.1351132094860077, 0.18015094101428986, -0.18015094101428986, -0.18015094101428986,
      0.45037734508514404,
    ]);
  });

  it('matches pinned fingerprints at 384 dimensions across scripts', () => {
    const pinned: [string, string][] = [
      ['Hello, world!', '4c19e888ec80fab9eff7c1a06a8a5084784234d2ddfb37f5f8886d29ad49618c'],
      ['The quick brown fox jumps over the lazy dog.', '16ba612e44ed4520e9c39b5b2ff58f70e81fac080683a643e070619212297c72'],
      ['今天天气很好，我们去公园散步', 'c5fa02fd26cc80afdd71ba9b31dbb706925a1fa0bb6f112c2226b6126ef0e895'],
      ['ｶﾀｶﾅ と ひらがな', '89d26d068e65c2b5abde509fce35335318e72f89a09e8bbdc77490a39f499711'],
      ['🙂 emoji & symbols ⚙️', '95efbf5e85a1aee104757b2947957fd58c2068432041dd96526ce3cf46890ba4'],
      ['!!!', '8d31f81333443945150a90e387728cd1e04380059f5a924cb93ac102a5e037ed'],
      ['Résumé naïve café', '6a80177ffd299b7e84e12ac56cc3810306018789400091df65f0fdd159c07fc0'],
    ];
    for (const [text, hash] of pinned) expect(fingerprint(embedLocalHash(text, 384)), text).toBe(hash);
  });

  it('its hash is MurmurHash3_x86_32 over the UTF-16LE code units', () => {
    for (const s of ['', 'a', 'ab', 'abc', 'w:hello', 'b:你好 世界', 'c:\u0002ca', '🙂']) {
      for (const seed of [0, 0x5eed0001]) expect(murmur3(s, seed), `${s}/${seed}`).toBe(murmur3Bytes(Buffer.from(s, 'utf16le'), seed));
    }
    // Published test vector of MurmurHash3_x86_32: "" with seed 0 is 0, with seed 1 is 0x514E28B7.
    expect(murmur3('', 0)).toBe(0);
    expect(murmur3('', 1)).toBe(0x514e28b7);
  });

  it('tokenises words, and CJK one character at a time, after NFKC and lower-casing', () => {
    expect(tokenize('Hello, WORLD! ﬁne')).toEqual(['hello', 'world', 'fine']);
    expect(tokenize('我爱Node.js编程')).toEqual(['我', '爱', 'node', 'js', '编', '程']);
    expect([...features('a b').keys()]).toEqual(['w:a', 'b:a b', 'c:\u0002a\u0003', 'w:b', 'c:\u0002b\u0003']);
    expect(features('a b').get('b:a b')).toEqual({ count: 1, weight: 0.7 });
  });

  it('is L2-normalised, sized as asked, and deterministic', () => {
    for (const d of [1, 7, 384, 3072]) {
      const v = embedLocalHash('normalise me please', d);
      expect(v.length).toBe(d);
      expect(Math.abs(Math.sqrt(cosine(v, v)) - 1)).toBeLessThan(1e-6);
    }
    expect(fingerprint(embedLocalHash('same', 384))).toBe(fingerprint(embedLocalHash('same', 384)));
  });

  it('gives blank text (spaces, tabs, U+3000, U+00A0, U+FEFF) a unit vector, the same for all of it, not zeros', () => {
    const blank = ['   ', '\t\n', '\u3000', '\u00a0', '\ufeff'].map((text) => embedLocalHash(text, 384));
    for (const v of blank) {
      expect(Math.abs(Math.sqrt(cosine(v, v)) - 1)).toBeLessThan(1e-6);
      expect(Array.from(v)).toEqual(Array.from(blank[0]!));
    }
  });
});

describe('local-hash-v1 means something', () => {
  const pairs: { similar: [string, string]; unrelated: string }[] = [
    { similar: ['The cat sat on the mat', 'A cat was sitting on the mat'], unrelated: 'Quarterly revenue grew by ten percent' },
    { similar: ['How do I reset my password?', 'I forgot my password, how can I reset it?'], unrelated: 'The train to Berlin leaves at noon' },
    { similar: ['Embedding models turn text into vectors', 'Text embeddings map sentences to vectors'], unrelated: 'The recipe needs two eggs and flour' },
    { similar: ['今天天气很好，我们去公园散步', '今天的天气真好，适合去公园'], unrelated: '股票市场今天大幅下跌' },
    { similar: ['我喜欢用机器学习处理文本', '机器学习可以用来处理文本数据'], unrelated: '这家餐厅的牛肉面非常好吃' },
  ];
  for (const {
    similar: [a, b],
    unrelated,
  } of pairs) {
    it(`"${a}" is closer to "${b}" than to "${unrelated}"`, () => {
      const va = embedLocalHash(a);
      const near = cosine(va, embedLocalHash(b));
      const far = cosine(va, embedLocalHash(unrelated));
      expect(near).toBeGreaterThan(far + 0.2);
      expect(near).toBeGreaterThan(0.3);
    });
  }
});

describe('channel order', () => {
  const ch = (id: number, priority: number, weight: number) => ({ id, priority, weight }) as ChannelEntry;

  it('tries higher priorities first, all of a tier before the next', () => {
    const order = channelOrder([ch(1, 0, 1), ch(2, 10, 1), ch(3, 5, 1), ch(4, 10, 1)]).map((c) => c.id);
    expect(order.slice(0, 2).sort()).toEqual([2, 4]);
    expect(order.slice(2)).toEqual([3, 1]);
  });

  it('picks inside a tier in proportion to weight; weight 0 only after the others', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const firsts = new Map<number, number>();
    for (let i = 0; i < 4000; i++) {
      const order = channelOrder([ch(1, 0, 1), ch(2, 0, 3), ch(3, 0, 0)], random);
      firsts.set(order[0]!.id, (firsts.get(order[0]!.id) ?? 0) + 1);
      expect(order[2]!.id).toBe(3);
    }
    const share = firsts.get(2)! / 4000;
    expect(share).toBeGreaterThan(0.7);
    expect(share).toBeLessThan(0.8);
    expect(firsts.get(3)).toBeUndefined();
  });
});
