// Natural batching (group commit): what callers ask for while a round trip is out goes together in the next one.

interface Waiting<In, Out> {
  item: In;
  resolve: (out: Out) => void;
  reject: (err: unknown) => void;
}

/**
 * Gathers concurrent requests for the same kind of round trip (a statement, a command) into one.
 * Nothing waits for company: when fewer than `maxInFlight` round trips are out, what was asked for
 * in the current tick leaves at once (an idle caller pays no delay); while that many are out, new
 * requests queue and leave together when one comes back, up to `maxBatch` at a time. So a busy
 * process sends a few large round trips instead of many small ones, and each request still waits
 * for its own answer: nothing is acknowledged before the round trip that carries it is done.
 *
 * `run` answers a batch with one result per item, in order; if it throws, every item of that batch
 * is rejected with the error.
 */
export class Batcher<In, Out> {
  private queue: Waiting<In, Out>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Round trips made, items carried, and items run again alone after their batch failed (tests, metrics). */
  batches = 0;
  items = 0;
  retriedAlone = 0;

  constructor(
    private readonly run: (items: In[]) => Promise<Out[]>,
    private readonly opts: {
      maxBatch: number;
      maxInFlight: number;
      /**
       * When a batch of several fails with an error this says was one item's own doing and undid the whole
       * batch (not, say, a lost connection, after which it may have committed), each item is run again
       * alone, so one bad item does not fail the others. `run` must be all or nothing (one statement).
       */
      retryAlone?: (err: unknown) => boolean;
    },
  ) {}

  submit(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled && this.inFlight < this.opts.maxInFlight) {
        // After the current tick's other requests have joined (they are often many: one burst).
        this.scheduled = true;
        queueMicrotask(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.queue.length && this.inFlight < this.opts.maxInFlight) {
      const batch = this.queue.splice(0, this.opts.maxBatch);
      this.inFlight++;
      this.batches++;
      this.items += batch.length;
      void this.dispatch(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async dispatch(batch: Waiting<In, Out>[]): Promise<void> {
    let out: Out[];
    try {
      out = await this.run(batch.map((w) => w.item));
    } catch (err) {
      if (batch.length > 1 && this.opts.retryAlone?.(err)) {
        this.retriedAlone += batch.length;
        for (const w of batch) await this.dispatch([w]);
        return;
      }
      for (const w of batch) w.reject(err);
      return;
    }
    // Past this point the round trip succeeded: nothing here may run it again.
    if (out.length !== batch.length) {
      const err = new Error(`a batch of ${batch.length} got ${out.length} answers`);
      for (const w of batch) w.reject(err);
      return;
    }
    batch.forEach((w, i) => w.resolve(out[i]!));
  }
}
