// use-lite's model threads: a pool that loses one thread stops the others and the next call starts a new pool.
import { afterAll, describe, expect, it } from 'vitest';
import { liveUseLiteThreads, useLiteModel } from '../../src/embeddings/use-lite-worker.js';

const until = async (what: string, ok: () => boolean, ms = 20_000) => {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('use-lite model threads', () => {
  afterAll(async () => {
    await Promise.all(liveUseLiteThreads().map((t) => t.terminate()));
  });

  it('a thread that dies takes its pool with it (no model copy left running), and the next call gets a new pool', async () => {
    const first = await useLiteModel();
    expect((await first.embed(['one sentence']))[0]).toHaveLength(512);
    const pool = liveUseLiteThreads();
    expect(pool.length).toBe(2);
    await pool[0]!.terminate();
    await until('the rest of the pool to stop', () => liveUseLiteThreads().every((t) => !pool.includes(t)));
    // A call to the old pool fails at once (no wait for ever on a dead thread); a new one is started.
    await expect(Promise.all([first.embed(['a']), first.embed(['b'])])).rejects.toThrow(/stopped/);
    const second = await useLiteModel();
    expect(second).not.toBe(first);
    expect((await second.embed(['another sentence']))[0]).toHaveLength(512);
    expect(liveUseLiteThreads().length).toBe(2);
  }, 60_000);
});
