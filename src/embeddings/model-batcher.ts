// Dynamic batching on the worker: texts from jobs that arrive together go to the model in one call.

/** What the batcher needs of a model: vectors for a list of items (texts), in order. */
export interface BatchModel<T = string> {
  embed(items: readonly T[]): Promise<Float32Array[]>;
}

/**
 * Who a request is for. `caller` (a user id): the model's calls are shared fairly between callers, not requests. `gone`:
 * true once nobody waits for the answer any more (the client went away, or its wait ran out); its items not yet
 * embedded are dropped then, before they reach the model.
 */
export interface Requester {
  caller?: string | number;
  gone?: () => boolean;
}

/** Why a request was dropped before the model embedded it: its caller is no longer waiting. */
export class CallerGoneError extends Error {
  constructor() {
    super('the caller stopped waiting: its texts were dropped before the model embedded them');
  }
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

interface Waiting<T> {
  items: readonly T[];
  caller: string | number | symbol;
  gone?: () => boolean;
  resolve: (vectors: Float32Array[]) => void;
  reject: (err: unknown) => void;
  /** Vectors of the items already embedded (a request bigger than a model call goes in several). */
  done: Float32Array[];
  /** A part of it is in a model call now (with lanes > 1, the next part waits for it). */
  running: boolean;
}

/**
 * A model call has a fixed cost (~10–15 ms for use-lite) on top of its per-text cost, so one call for
 * 32 texts is far cheaper than 32 calls. Texts that find the model idle wait at most `maxWaitMs` for
 * company (by default none: they go with what arrived in the same turn of the event loop); while the
 * model is busy, whatever arrives meanwhile waits and goes in the next call, up to `maxTexts` texts.
 * A request bigger than that (or than the cost budget) is split across calls and takes turns with the
 * others (and the event loop turns between calls, so the worker takes in new jobs and keeps its jobs' locks).
 *
 * Fair between callers: each call is filled caller by caller, the callers served longest ago (or never) first, so
 * another caller's text is in the next call whatever one caller has queued; a caller's own requests go in their order.
 * With `lanes` > 1 (the model has that many threads), that many calls run at once, and a caller has texts in at most
 * one of them: one caller's flood takes one lane, and the others stay free for everyone else.
 * A request whose caller is gone is dropped (rejected with CallerGoneError) before any more of it is embedded.
 */
export class ModelBatcher<T = string> {
  private waiting: Waiting<T>[] = [];
  private queued = 0;
  private running = 0;
  private timer?: NodeJS.Timeout;
  private immediate?: NodeJS.Immediate;
  /** Callers by the number of the call that last served them (those with nothing waiting are forgotten). */
  private lastServed = new Map<string | number | symbol, number>();
  /** Model calls made, items embedded and requests dropped because their caller was gone, for tests and metrics. */
  calls = 0;
  texts = 0;
  dropped = 0;

  constructor(
    private readonly model: () => Promise<BatchModel<T>>,
    private readonly maxTexts = 256,
    private readonly maxWaitMs = 0,
    /** An item's cost (e.g. its pieces) and the most a call may hold in all: long texts go fewer to a call. */
    private readonly budget: { cost: (item: T) => number; max: number } = { cost: () => 1, max: Number.POSITIVE_INFINITY },
    private readonly pause: CallPause = DEFAULT_PAUSE,
    /** Model calls that may run at once (the model's threads). */
    private readonly lanes = 1,
  ) {}

  embed(items: readonly T[], who: Requester = {}): Promise<Float32Array[]> {
    if (items.length === 0) return Promise.resolve([]);
    if (who.gone?.()) {
      this.dropped++;
      return Promise.reject(new CallerGoneError());
    }
    return new Promise((resolve, reject) => {
      // A request without a caller is a caller of its own.
      this.waiting.push({ items, caller: who.caller ?? Symbol(), gone: who.gone, resolve, reject, done: [], running: false });
      this.queued += items.length;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.running >= this.lanes || this.waiting.length === 0) return;
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

  private fitsAlone(w: Waiting<T>, from: number): boolean {
    if (w.items.length - from > this.maxTexts) return false;
    let cost = 0;
    for (let i = from; i < w.items.length; i++) cost += this.budget.cost(w.items[i]!);
    return cost <= this.budget.max;
  }

  /** Drops the requests whose caller is gone: rejected, and never (again) in a call. */
  private dropGone(): void {
    const gone = this.waiting.filter((w) => !w.running && w.gone?.());
    if (gone.length === 0) return;
    const set = new Set(gone);
    this.waiting = this.waiting.filter((w) => !set.has(w));
    for (const w of gone) {
      this.queued -= w.items.length - w.done.length;
      this.dropped++;
      w.reject(new CallerGoneError());
    }
    this.forgetIdleCallers();
  }

  private forgetIdleCallers(): void {
    const present = new Set(this.waiting.map((w) => w.caller));
    for (const c of this.lastServed.keys()) if (!present.has(c)) this.lastServed.delete(c);
  }

  /** The requests in the order a call takes them: callers served longest ago first, each caller's in their order. */
  private line(): Waiting<T>[] {
    const busy = new Set(this.waiting.filter((w) => w.running).map((w) => w.caller));
    const byCaller = new Map<string | number | symbol, Waiting<T>[]>();
    for (const w of this.waiting) {
      if (busy.has(w.caller)) continue;
      const list = byCaller.get(w.caller);
      if (list) list.push(w);
      else byCaller.set(w.caller, [w]);
    }
    const served = (c: string | number | symbol) => this.lastServed.get(c) ?? -1;
    // Map keeps first-arrival order, and the sort is stable: among callers never served, the first to arrive goes first.
    return [...byCaller.keys()].sort((a, b) => served(a) - served(b)).flatMap((c) => byCaller.get(c)!);
  }

  private async run(): Promise<void> {
    this.dropGone();
    if (this.running >= this.lanes || this.waiting.length === 0) return;
    // Whole requests while they fit; a request bigger than a call fills what room is left. A call holds at most
    // maxTexts items and budget.max of cost (always at least one item).
    const parts: { w: Waiting<T>; from: number; count: number }[] = [];
    let n = 0;
    let spent = 0;
    for (const w of this.line()) {
      const from = w.done.length;
      let count = 0;
      let cost = 0;
      while (from + count < w.items.length && n + count < this.maxTexts) {
        const c = this.budget.cost(w.items[from + count]!);
        if (n + count > 0 && spent + cost + c > this.budget.max) break;
        cost += c;
        count++;
      }
      const whole = from + count === w.items.length;
      // A request that would fit a call of its own waits whole for the next one, rather than be cut.
      if (count === 0 || (!whole && n > 0 && this.fitsAlone(w, from))) break;
      parts.push({ w, from, count });
      n += count;
      spent += cost;
      if (n >= this.maxTexts || spent >= this.budget.max) break;
    }
    if (parts.length === 0) return;
    this.running++;
    this.queued -= n;
    const call = ++this.calls;
    for (const { w } of parts) {
      w.running = true;
      this.lastServed.set(w.caller, call);
    }
    // Another lane may be free for the callers this call did not take.
    if (this.running < this.lanes) this.schedule();
    const started = performance.now();
    try {
      const model = await this.model();
      const vectors = await model.embed(parts.flatMap(({ w, from, count }) => w.items.slice(from, from + count)));
      this.texts += n;
      let at = 0;
      for (const { w, count } of parts) {
        w.done.push(...vectors.slice(at, at + count));
        w.running = false;
        at += count;
      }
      // Finished requests are answered; one with items left waits for its caller's next turn.
      const finished = new Set(parts.filter(({ w }) => w.done.length === w.items.length).map(({ w }) => w));
      this.waiting = this.waiting.filter((w) => !finished.has(w));
      for (const w of finished) w.resolve(w.done);
    } catch (err) {
      // A failed call fails every request it held a part of (items of theirs not yet sent are dropped).
      const failed = new Set(parts.map((x) => x.w));
      for (const { w, from, count } of parts) this.queued -= w.items.length - from - count;
      this.waiting = this.waiting.filter((w) => !failed.has(w));
      for (const w of failed) w.reject(err);
    } finally {
      this.running--;
      this.forgetIdleCallers();
      // The next call never starts straight away: the model's calls may not yield (TF.js's wasm kernels run
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
