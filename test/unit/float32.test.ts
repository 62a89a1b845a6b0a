// Printing float32 values: the shortest decimal that reads back (as a double, then rounded to float32) to the same value.
import { describe, expect, it } from 'vitest';
import { float32ArrayToJson, float32ToString } from '../../src/embeddings/float32.js';

/** The definition, by brute force: the fewest significant digits (1..9) whose decimal rounds back to x. */
function reference(x: number): string {
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  for (let p = 1; p <= 9; p++) {
    const d = Number(x.toPrecision(p));
    if (Math.fround(d) === x) return String(d);
  }
  throw new Error(`no 9-digit decimal for ${x}`);
}

describe('float32ToString', () => {
  it('prints the values an upstream sent as it sent them', () => {
    expect(float32ArrayToJson(Float32Array.from([0.6, 0.8, 3]))).toBe('[0.6,0.8,3]');
    expect(float32ToString(Math.fround(-0.0069292835))).toBe('-0.0069292835');
    expect(float32ToString(Math.fround(0.1))).toBe('0.1');
    expect(float32ArrayToJson(new Float32Array(0))).toBe('[]');
  });

  it('gives the shortest round-tripping decimal for 200,000 random float32 bit patterns, tiny, huge and subnormal included', () => {
    const bits = new Uint32Array(1);
    const f = new Float32Array(bits.buffer);
    let seed = 12345;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const wrong: string[] = [];
    for (let i = 0; i < 200_000; i++) {
      bits[0] = next() ^ (next() << 16);
      const x = f[0]!;
      if (!Number.isFinite(x)) continue;
      const got = float32ToString(x);
      if (got !== reference(x) && wrong.length < 5) wrong.push(`${x}: ${got} (want ${reference(x)})`);
    }
    for (const x of [1e-45, 1.17549435e-38, 3.4028235e38, 1, 10, 100, 1e10, 0.001, 1e-7, 123456789, 16777216, 16777217].map(Math.fround)) {
      if (float32ToString(x) !== reference(x) || float32ToString(-x) !== reference(-x)) wrong.push(`${x}: ${float32ToString(x)} (want ${reference(x)})`);
    }
    expect(wrong).toEqual([]);
  });

  it('never needs more than 9 significant digits, and every printed value reads back to its float32 exactly', () => {
    const v = Float32Array.from({ length: 4096 }, (_, i) => Math.sin(i * 12.9898) * 0.1);
    const printed = JSON.parse(float32ArrayToJson(v)) as number[];
    printed.forEach((x, i) => expect(Math.fround(x)).toBe(v[i]));
    const digits = float32ArrayToJson(v)
      .slice(1, -1)
      .split(',')
      .map((s) => s.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').length);
    expect(Math.max(...digits)).toBeLessThanOrEqual(9);
  });
});
