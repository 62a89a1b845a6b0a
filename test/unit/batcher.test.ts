// Natural batching: an idle caller goes at once, concurrent callers share a round trip, one bad item fails alone.
import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/batcher.js';
import { rolledBackByItsData } from '../../src/db.js';

/** A round trip that takes `ms` and answers each item doubled; records the batches it was given. */
function doubler(ms = 5) {
  const seen: number[][] = [];
  const run = async (items: number[]) => {
    seen.push(items);
    await new Promise((r) => setTimeout(r, ms));
    if (items.includes(-1)) throw new Error('bad item');
    return items.map((x) => x * 2);
  };
  return { seen, run };
}

describe('Batcher', () => {
  it('sends a lone request at once, in a batch of its own', async () => {
    const { seen, run } = doubler();
    const b = new Batcher(run, { maxBatch: 10, maxInFlight: 1 });
    const answer = b.submit(21);
    // At once: it has left before any timer could fire (a few microtask turns, no timer phase in between).
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(seen).toEqual([[21]]);
    expect(await answer).toBe(42);
  });

  it('gathers what is asked while a round trip is out into the next one, up to maxBatch, each caller getting its own answer', async () => {
    const { seen, run } = doubler();
    const b = new Batcher(run, { maxBatch: 4, maxInFlight: 1 });
    const first = b.submit(1);
    await new Promise((r) => setTimeout(r, 1));
    const rest = [2, 3, 4, 5, 6, 7].map((x) => b.submit(x));
    expect(await Promise.all([first, ...rest])).toEqual([2, 4, 6, 8, 10, 12, 14]);
    expect(seen).toEqual([[1], [2, 3, 4, 5], [6, 7]]);
    expect({ batches: b.batches, items: b.items }).toEqual({ batches: 3, items: 7 });
  });

  it('a failed batch fails each of its callers; with retryAlone, the others are answered and only the bad one fails', async () => {
    const plain = new Batcher(doubler().run, { maxBatch: 10, maxInFlight: 1 });
    expect((await Promise.allSettled([plain.submit(1), plain.submit(-1)])).map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const { seen, run } = doubler();
    const isolating = new Batcher(run, { maxBatch: 10, maxInFlight: 1, retryAlone: () => true });
    const settled = await Promise.allSettled([isolating.submit(1), isolating.submit(-1), isolating.submit(3)]);
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value : 'failed'))).toEqual([2, 'failed', 6]);
    expect(seen).toEqual([[1, -1, 3], [1], [-1], [3]]);
    expect(isolating.retriedAlone).toBe(3);
  });
});

describe('rolledBackByItsData (which failed statements the ledger runs again item by item)', () => {
  it('retries what Postgres rolled back for a row (data, constraints, a raised exception, a deadlock), never a lost connection, a timeout or an error of ours', () => {
    const coded = (code?: string) => Object.assign(new Error('x'), code ? { code } : {});
    expect(['22003', '23505', '42703', 'P0001', '40P01'].map((c) => rolledBackByItsData(coded(c)))).toEqual([true, true, true, true, true]);
    expect(['08006', '57014', '55P03', '57P01', 'ECONNRESET', undefined].map((c) => rolledBackByItsData(coded(c)))).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
