// Big answers' work (printing, hashing, counting) takes turns: one slice of all of it per turn of the event loop.
// A timing check (gaps between timer callbacks), so it runs in test/timing, alone: with other suites sharing the two
// cores its median gap doubled and it failed in CI.
import { describe, expect, it } from 'vitest';
import { bigWorkTurn } from '../../src/embeddings/turns.js';

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('bigWorkTurn', () => {
  it('runs one slice of all big work per turn: three big calls hold a timer for one slice, not three', async () => {
    const SLICE_MS = 4;
    const order: string[] = [];
    const big = async (name: string) => {
      for (let i = 0; i < 25; i++) {
        await bigWorkTurn();
        busy(SLICE_MS);
        order.push(name);
      }
    };
    // Another caller's I/O, as a timer: how long it waits between two turns of the loop.
    const gaps: number[] = [];
    let probing = true;
    let last = performance.now();
    const probe = () => {
      const now = performance.now();
      gaps.push(now - last);
      last = now;
      if (probing) setTimeout(probe, 0);
    };
    setTimeout(probe, 0);
    await Promise.all([big('a'), big('b'), big('c')]);
    probing = false;
    // All of the work was done, the three calls taking turns in order of asking.
    expect(order).toHaveLength(75);
    expect(order.slice(0, 6)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    // Each turn of the loop ran one slice (each call waiting for its own next turn, ~3 × 4 ms).
    expect(gaps.length).toBeGreaterThan(50);
    expect(median(gaps)).toBeLessThan(2 * SLICE_MS);
  });
});
