// Dynamic batching on the worker: texts from jobs that arrive together go to the model in one call.

/** What the batcher needs of a model: vectors for a list of texts, in order. */
export interface BatchModel {
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/**
 * The pause between a long model call and the next while a big request is being split (see run()): `ms` of it
 * after a call that took at least `afterCallMs`.
 */
export interface CallPause {
  ms: number;
  afterCallMs: number;
}

/** At most a tenth of the call's time: enough for a job's round trips to Redis on a quiet worker. */
const DEFAULT_PAUSE: CallPause = { ms: 5, afterCallMs: 50 };

interface Waiting {
  texts: readonly string[];
  resolve: (vectors: Float32Array[]) => void;
  reject: (err: unknown) => void;
  /** Vectors of the texts already embedded (a request bigger than a model call goes in several). */
  done: Float32Array[];
}

/**
 * A model call has a fixed cost (~10–15 ms for use-lite) on top of its per-text cost, so one call for
 * 32 texts is far cheaper than 32 calls. Texts that find the model idle wait at most `maxWaitMs` for
 * company (by default none: they go with what arrived in the same turn of the event loop); while the
 * model is busy, whatever arrives meanwhile waits and goes in the next call, up to `maxTexts` texts.
 * A request bigger than that (or than the cost budget) is split across calls and takes turns with the
 * others: requests not yet begun go first, so a small request waits for the model call under way,
 * not for all of a big one (and the event loop turns between calls, so the worker takes in new jobs
 * and keeps its jobs' locks).
 * Only one model call runs at a time: the model uses the CPU the process has, and two calls at once
 * would only take turns.
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
    /** A text's cost (e.g. its pieces) and the most a call may hold in all: long texts go fewer to a call. */
    private readonly budget: { cost: (text: string) => number; max: number } = { cost: () => 1, max: Number.POSITIVE_INFINITY },
    private readonly pause: CallPause = DEFAULT_PAUSE,
  ) {}

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.waiting.push({ texts, resolve, reject, done: [] });
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

  private fitsAlone(w: Waiting, from: number): boolean {
    if (w.texts.length - from > this.maxTexts) return false;
    let cost = 0;
    for (let i = from; i < w.texts.length; i++) cost += this.budget.cost(w.texts[i]!);
    return cost <= this.budget.max;
  }

  private async run(): Promise<void> {
    if (this.busy || this.waiting.length === 0) return;
    this.busy = true;
    // Whole requests while they fit; a request bigger than a call fills what room is left. A call holds at most
    // maxTexts texts and budget.max of cost (always at least one text).
    const parts: { w: Waiting; count: number }[] = [];
    let n = 0;
    let spent = 0;
    // Requests not yet begun go first, in their order, then those a call has begun: a request that arrives while a
    // big one is being worked through goes in the next call, beside what is left of the big one.
    const line = [...this.waiting.filter((w) => w.done.length === 0), ...this.waiting.filter((w) => w.done.length > 0)];
    for (const w of line) {
      const from = w.done.length;
      let count = 0;
      let cost = 0;
      while (from + count < w.texts.length && n + count < this.maxTexts) {
        const c = this.budget.cost(w.texts[from + count]!);
        if (n + count > 0 && spent + cost + c > this.budget.max) break;
        cost += c;
        count++;
      }
      const whole = from + count === w.texts.length;
      // A request that would fit a call of its own waits whole for the next one, rather than be cut.
      if (count === 0 || (!whole && n > 0 && this.fitsAlone(w, from))) break;
      parts.push({ w, count });
      n += count;
      spent += cost;
      if (n >= this.maxTexts || spent >= this.budget.max) break;
    }
    this.queued -= n;
    const started = performance.now();
    try {
      const model = await this.model();
      const vectors = await model.embed(parts.flatMap(({ w, count }) => w.texts.slice(w.done.length, w.done.length + count)));
      this.calls++;
      this.texts += n;
      let at = 0;
      for (const { w, count } of parts) {
        w.done.push(...vectors.slice(at, at + count));
        at += count;
      }
      // Finished requests are answered; one with texts left goes to the back of the line.
      const taken = new Set(parts.map((x) => x.w));
      const unfinished = parts.filter(({ w }) => w.done.length < w.texts.length).map(({ w }) => w);
      this.waiting = [...this.waiting.filter((w) => !taken.has(w)), ...unfinished];
      for (const { w } of parts) if (w.done.length === w.texts.length) w.resolve(w.done);
    } catch (err) {
      // A failed call fails every request it held a part of (texts of theirs not yet sent are dropped).
      const failed = new Set(parts.map((x) => x.w));
      for (const w of failed) this.queued -= w.texts.length - w.done.length - (parts.find((x) => x.w === w)?.count ?? 0);
      this.waiting = this.waiting.filter((w) => !failed.has(w));
      for (const w of failed) w.reject(err);
    } finally {
      this.busy = false;
      // The next call never starts straight away: the model's calls do not yield (TF.js's wasm kernels run
      // synchronously), and between two calls the process must take in new jobs (which join the line) and renew
      // its jobs' locks. Taking a job in is a few round trips to Redis, more than one turn of the event loop:
      // after a long call, while a big request is being worked through, a short pause lets them through (calls of
      // requests that each fit one call go on at once).
      const took = performance.now() - started;
      if (took >= this.pause.afterCallMs && this.waiting.some((w) => w.done.length > 0)) setTimeout(() => this.schedule(), this.pause.ms);
      else setImmediate(() => this.schedule());
    }
  }
}
