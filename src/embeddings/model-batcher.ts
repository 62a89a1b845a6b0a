// Dynamic batching on the worker: texts from jobs that arrive together go to the model in one call.

/** What the batcher needs of a model: vectors for a list of texts, in order. */
export interface BatchModel {
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

interface Waiting {
  texts: readonly string[];
  resolve: (vectors: Float32Array[]) => void;
  reject: (err: unknown) => void;
}

/**
 * A model call has a fixed cost (~10–15 ms for use-lite) on top of its per-text cost, so one call for
 * 32 texts is far cheaper than 32 calls. Texts that find the model idle wait at most `maxWaitMs` for
 * company (by default none: they go with what arrived in the same turn of the event loop); while the
 * model is busy, whatever arrives meanwhile waits and goes in the next call, up to `maxTexts` texts (a
 * request bigger than that goes alone). Only one model call runs at a time: the model uses the CPU
 * the process has, and two calls at once would only take turns.
 */
export class ModelBatcher {
  private waiting: Waiting[] = [];
  private queued = 0;
  private busy = false;
  private timer?: NodeJS.Timeout;
  private immediate?: NodeJS.Immediate;
  /** Model calls made and texts embedded, for tests and metrics. */
  calls = 0;
  texts = 0;

  constructor(
    private readonly model: () => Promise<BatchModel>,
    private readonly maxTexts = 256,
    private readonly maxWaitMs = 0,
  ) {}

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ texts, resolve, reject });
      this.queued += texts.length;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.busy || this.waiting.length === 0) return;
    if (this.queued >= this.maxTexts) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.run();
    } else if (this.maxWaitMs <= 0) {
      // No waiting for company: what arrived in this turn of the event loop goes now, together.
      if (this.immediate) return;
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        void this.run();
      });
    } else
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        void this.run();
      }, this.maxWaitMs);
  }

  private async run(): Promise<void> {
    if (this.busy || this.waiting.length === 0) return;
    this.busy = true;
    const batch: Waiting[] = [];
    let n = 0;
    while (this.waiting.length && (batch.length === 0 || n + this.waiting[0]!.texts.length <= this.maxTexts)) {
      const next = this.waiting.shift()!;
      n += next.texts.length;
      batch.push(next);
    }
    this.queued -= n;
    try {
      const model = await this.model();
      const vectors = await model.embed(batch.flatMap((w) => w.texts));
      this.calls++;
      this.texts += n;
      let at = 0;
      for (const w of batch) {
        w.resolve(vectors.slice(at, at + w.texts.length));
        at += w.texts.length;
      }
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.busy = false;
      this.schedule();
    }
  }
}
