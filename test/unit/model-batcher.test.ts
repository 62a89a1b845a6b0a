// The worker's dynamic batching: texts of calls arriving together reach the model in one call, in order.
import { describe, expect, it, vi } from 'vitest';
import { type BatchModel, CallerGoneError, ModelBatcher } from '../../src/embeddings/model-batcher.js';

/** A model that records the batches it is given; each vector holds its text's length, so answers can be checked. */
function recordingModel(delayMs = 0) {
  const batches: string[][] = [];
  const model: BatchModel = {
    async embed(texts) {
      batches.push([...texts]);
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      return texts.map((t) => Float32Array.from([t.length]));
    },
  };
  return { batches, model };
}

/** As TF.js's wasm kernels do: the work is synchronous (`ms` of it), and the promise is already settled. */
function blockingModel(ms: number) {
  const batches: string[][] = [];
  const model: BatchModel = {
    embed(texts) {
      batches.push([...texts]);
      const until = performance.now() + ms;
      while (performance.now() < until) {
        // busy, as the model is
      }
      return Promise.resolve(texts.map(() => new Float32Array(1)));
    },
  };
  return { batches, model };
}

describe('ModelBatcher', () => {
  it('gives calls that arrive within the wait one model call, and each call its own vectors in order', async () => {
    const { batches, model } = recordingModel();
    const b = new ModelBatcher(async () => model, 256, 5);
    const calls = [['a', 'bb'], ['ccc'], ['dddd', 'eeeee', 'ffffff']];
    const answers = await Promise.all(calls.map((c) => b.embed(c)));
    expect(batches).toEqual([['a', 'bb', 'ccc', 'dddd', 'eeeee', 'ffffff']]);
    expect(answers.map((a) => a.map((v) => v[0]))).toEqual([[1, 2], [3], [4, 5, 6]]);
  });

  it('gathers what arrives while the model is busy into the next call', async () => {
    const { batches, model } = recordingModel(30);
    const b = new ModelBatcher(async () => model, 256, 1);
    const first = b.embed(['first']);
    await new Promise((r) => setTimeout(r, 10)); // the first call is now running
    const later = await Promise.all([b.embed(['x']), b.embed(['y']), b.embed(['z'])]);
    await first;
    expect(batches).toEqual([['first'], ['x', 'y', 'z']]);
    expect(later.map((a) => a.length)).toEqual([1, 1, 1]);
  });

  it('by default waits for no company: calls made in one tick go together at once, with no timer to wait for', async () => {
    const { batches, model } = recordingModel();
    const b = new ModelBatcher(async () => model);
    // With timers stopped, a batcher that waited on one (as a maxWaitMs > 0 does) would never call the model.
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] });
    try {
      await Promise.all([b.embed(['a']), b.embed(['b'])]);
      await b.embed(['c']);
    } finally {
      vi.useRealTimers();
    }
    expect(batches).toEqual([['a', 'b'], ['c']]);
  });

  it('never puts more than maxTexts texts in a call: a bigger request is split, filling the room the others leave', async () => {
    const { batches, model } = recordingModel();
    const b = new ModelBatcher(async () => model, 4, 5);
    const answers = await Promise.all([b.embed(['1', '2', '3']), b.embed(['4', '5']), b.embed(['6', '7', '8', '9', '10', '11'])]);
    // [3] alone (the 2 do not fit beside it; small requests are never split); then the 2 and two of the big one's; then the rest.
    expect(batches).toEqual([
      ['1', '2', '3'],
      ['4', '5', '6', '7'],
      ['8', '9', '10', '11'],
    ]);
    expect(answers.map((a) => a.map((v) => v[0]))).toEqual([
      [1, 1, 1],
      [1, 1],
      [1, 1, 1, 1, 2, 2],
    ]);
  });

  it('a big request takes turns: one that arrives during its first call goes in the next, not after all of it', async () => {
    const { batches, model } = recordingModel(20);
    const b = new ModelBatcher(async () => model, 4);
    const big = b.embed(Array.from({ length: 12 }, (_, i) => `big-${i}`));
    await new Promise((r) => setTimeout(r, 5)); // the first call (4 of the big one's) is running
    const small = b.embed(['small']);
    await Promise.all([big, small]);
    expect(batches.map((x) => x.length)).toEqual([4, 4, 4, 1]);
    expect(batches[1]).toContain('small');
    expect(batches.flat().filter((x) => x.startsWith('big-'))).toEqual(Array.from({ length: 12 }, (_, i) => `big-${i}`));
  });

  it('lets the event loop turn between the calls of a big request, so a call made meanwhile (from a timer) goes before its end', async () => {
    const { batches, model } = blockingModel(15);
    const b = new ModelBatcher(async () => model, 4);
    const big = b.embed(Array.from({ length: 16 }, (_, i) => `big-${i}`));
    const small = new Promise<Float32Array[]>((resolve) => setTimeout(() => resolve(b.embed(['small'])), 0));
    await Promise.all([big, small]);
    const at = batches.findIndex((x) => x.includes('small'));
    expect(at).toBeGreaterThan(-1);
    expect(at).toBeLessThan(batches.length - 1); // not after the whole of the big one
  });

  it('holds at most budget.max of cost in a call: long texts go fewer to a call, a big request split by it', async () => {
    const { batches, model } = recordingModel();
    const b = new ModelBatcher(async () => model, 64, 0, { cost: (t) => t.length, max: 10 });
    await Promise.all([b.embed(['aaaa', 'bbbb', 'cccc']), b.embed(['dd'])]);
    // 12 > 10: the first request is split after 8, and 'dd' (2) fills the call; 'cccc' goes next.
    expect(batches).toEqual([['aaaa', 'bbbb', 'dd'], ['cccc']]);
  });

  it('after a long call, pauses so that a request arriving over a few turns of the event loop (a job from Redis) goes next', async () => {
    const { batches, model } = blockingModel(30);
    // A pause far longer than the default's 5 ms, so that a busy machine's slow turns of the event loop do not outlast
    // it (what is checked is that there is a pause, not its length).
    const b = new ModelBatcher(async () => model, 4, 0, undefined, { ms: 250, afterCallMs: 20 });
    const big = b.embed(Array.from({ length: 12 }, (_, i) => `big-${i}`));
    // A timer, then three turns of the event loop (as a job's round trips to Redis take), then the call.
    const small = new Promise<Float32Array[]>((resolve) =>
      setTimeout(() => setImmediate(() => setImmediate(() => setImmediate(() => resolve(b.embed(['small']))))), 0),
    );
    await Promise.all([big, small]);
    expect(batches.findIndex((x) => x.includes('small'))).toBe(1);
  });

  it('answers an empty request at once, with no model call', async () => {
    const { batches, model } = recordingModel();
    const b = new ModelBatcher(async () => model);
    expect(await b.embed([])).toEqual([]);
    expect(batches).toEqual([]);
  });

  it('a failed call fails the requests it held a part of, including the rest of a big one, and the next call goes on', async () => {
    let fail = true;
    const seen: string[][] = [];
    const model: BatchModel = {
      async embed(texts) {
        seen.push([...texts]);
        if (fail) throw new Error('model broke');
        return texts.map(() => new Float32Array(1));
      },
    };
    const b = new ModelBatcher(async () => model, 2);
    const results = await Promise.allSettled([b.embed(['a', 'b', 'c', 'd', 'e'])]);
    expect(results[0]!.status).toBe('rejected');
    expect(seen).toEqual([['a', 'b']]); // its other texts were dropped, not run
    fail = false;
    expect(await b.embed(['f'])).toHaveLength(1);
  });

  it('fails every call of a batch the model fails, and carries on with the next', async () => {
    let fail = true;
    const model: BatchModel = {
      async embed(texts) {
        if (fail) throw new Error('model broke');
        return texts.map(() => new Float32Array(1));
      },
    };
    const b = new ModelBatcher(async () => model, 256, 2);
    const results = await Promise.allSettled([b.embed(['a']), b.embed(['b'])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await b.embed(['c'])).toHaveLength(1);
  });

  it("is fair between callers: another caller's one text is in the next model call, however much one caller has queued", async () => {
    const { batches, model } = recordingModel(15);
    const b = new ModelBatcher(async () => model, 4);
    const flood = Array.from({ length: 10 }, (_, r) =>
      b.embed(
        Array.from({ length: 8 }, (__, i) => `a${r}-${i}`),
        { caller: 1 },
      ),
    );
    await new Promise((r) => setTimeout(r, 5)); // caller 1's first call is running
    const other = b.embed(['b-only'], { caller: 2 });
    await Promise.all([...flood, other]);
    expect(batches[1]).toContain('b-only');
    // Caller 1's texts still go in its own order.
    expect(batches.flat().filter((x) => x.startsWith('a'))).toEqual(
      Array.from({ length: 10 }, (_, r) => Array.from({ length: 8 }, (__, i) => `a${r}-${i}`)).flat(),
    );
  });

  it('two callers with long queues take turns call by call', async () => {
    const { batches, model } = recordingModel(2);
    const b = new ModelBatcher(async () => model, 4);
    const one = Array.from({ length: 4 }, (_, r) =>
      b.embed(
        Array.from({ length: 4 }, (__, i) => `x${r}${i}`),
        { caller: 'x' },
      ),
    );
    const two = Array.from({ length: 4 }, (_, r) =>
      b.embed(
        Array.from({ length: 4 }, (__, i) => `y${r}${i}`),
        { caller: 'y' },
      ),
    );
    await Promise.all([...one, ...two]);
    expect(batches.map((c) => c[0]![0])).toEqual(['x', 'y', 'x', 'y', 'x', 'y', 'x', 'y']);
  });

  it('drops a request whose caller is gone: its texts never reach the model, and it fails with CallerGoneError', async () => {
    const { batches, model } = recordingModel(20);
    const b = new ModelBatcher(async () => model, 4);
    const first = b.embed(['busy'], { caller: 1 });
    await new Promise((r) => setTimeout(r, 5)); // the model is busy
    let gone = false;
    const leaving = b.embed(['never-embedded-1', 'never-embedded-2'], { caller: 2, gone: () => gone });
    const staying = b.embed(['kept'], { caller: 3 });
    gone = true; // the client went away while its texts waited
    await expect(leaving).rejects.toBeInstanceOf(CallerGoneError);
    await Promise.all([first, staying]);
    expect(batches.flat()).toEqual(['busy', 'kept']);
    expect(b.dropped).toBe(1);
    // A big request's remaining texts go too, when its caller leaves between its calls.
    let left = false;
    const big = b.embed(
      Array.from({ length: 12 }, (_, i) => `big-${i}`),
      { caller: 4, gone: () => left },
    );
    await new Promise((r) => setTimeout(r, 5));
    left = true;
    await expect(big).rejects.toBeInstanceOf(CallerGoneError);
    expect(batches.flat().filter((x) => x.startsWith('big-'))).toEqual(['big-0', 'big-1', 'big-2', 'big-3']);
  });

  it('with two lanes, a second caller is served at once beside a flooding one, which never holds both lanes', async () => {
    const running = new Map<string, number>();
    let most = 0;
    const starts: string[] = [];
    const model: BatchModel = {
      async embed(texts) {
        const who = texts[0]![0]!;
        starts.push(texts.join(','));
        running.set(who, (running.get(who) ?? 0) + 1);
        most = Math.max(most, running.get(who)!);
        await new Promise((r) => setTimeout(r, 25));
        running.set(who, running.get(who)! - 1);
        return texts.map(() => new Float32Array(1));
      },
    };
    const b = new ModelBatcher(async () => model, 2, 0, undefined, undefined, 2);
    const flood = Array.from({ length: 6 }, (_, r) => b.embed([`a${r}-0`, `a${r}-1`], { caller: 'a' }));
    await new Promise((r) => setTimeout(r, 5));
    await b.embed(['b-only'], { caller: 'b' });
    // It ran in the free lane while caller a's call went on: its call started second, not after a's calls.
    expect(starts[1]).toBe('b-only');
    await Promise.all(flood);
    expect(most).toBe(1);
  });
});
