// The hot vectors of an API process: most recently used kept, bounded in bytes, printed forms counted.
import { describe, expect, it } from 'vitest';
import { HotVectors } from '../../src/embeddings/store.js';

const vec = (bytes: number) => ({ vector: Buffer.alloc(bytes), tokens: 1 });

describe('HotVectors', () => {
  it('keeps the most recently used within its byte budget, evicting the least recently used', () => {
    const hot = new HotVectors(3 * 1_300);
    for (const k of ['a', 'b', 'c']) hot.set(k, vec(1_000));
    expect(hot.get('a')).toBeDefined(); // a is now the most recent
    hot.set('d', vec(1_000));
    expect(hot.get('b')).toBeUndefined();
    expect(['a', 'c', 'd'].map((k) => hot.get(k) !== undefined)).toEqual([true, true, true]);
    expect(hot.size.bytes).toBeLessThanOrEqual(3 * 1_300);
  });

  it('counts a printed form with its vector, and evicts to make room for it', () => {
    const hot = new HotVectors(2 * 1_300);
    hot.set('a', vec(1_000));
    hot.set('b', vec(1_000));
    const b = hot.get('b')!;
    hot.setJson('b', b, Buffer.alloc(1_000));
    expect(b.json).toBeDefined();
    expect(hot.get('a')).toBeUndefined();
    expect(hot.size.entries).toBe(1);
  });

  it("keeps a copy of its own of a small vector cut from Node's shared pool, so its budget counts what it holds", () => {
    const hot = new HotVectors(10_000);
    const pooled = Buffer.from(new Uint8Array(64).fill(7)); // small Buffers share an 8 KB slab
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length);
    hot.set('a', { vector: pooled, tokens: 1 });
    const kept = hot.get('a')!;
    expect(kept.vector.buffer.byteLength).toBe(64);
    expect([...kept.vector]).toEqual([...pooled]);
    hot.setJson('a', kept, Buffer.from('[1,2]'));
    expect(kept.json!.buffer.byteLength).toBe(5);
  });

  it('keeps nothing when its budget is 0', () => {
    const hot = new HotVectors(0);
    hot.set('a', vec(10));
    expect(hot.get('a')).toBeUndefined();
  });
});
