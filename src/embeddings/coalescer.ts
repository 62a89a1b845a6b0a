// Gathers local-model calls into shared jobs, sized by load, and fans the results back out.
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';
import { LOCAL_HASH_DEFAULT_DIMENSIONS } from './local-hash.js';
import { MAX_FLOATS_PER_REQUEST, type GenerationOutcome, type GenerationRequest } from './schema.js';
import { sayGone } from './gone.js';
import { tracing } from '../telemetry.js';

interface Pending {
  req: GenerationRequest;
  resolve: (o: GenerationOutcome) => void;
  reject: (e: unknown) => void;
  /** Traces on: the caller's context, so the job joins the trace of the request it serves (src/telemetry.ts). */
  trace?: unknown;
}

/**
 * A call this heavy (in vector components, or characters) is a job of its own at once, outside the `maxInFlight` jobs
 * that gather small calls: held in line there, a few of them kept every other caller's small call waiting for their
 * jobs to come back. The workers share their work fairly between callers.
 */
const HEAVY_FLOATS = MAX_FLOATS_PER_REQUEST / 16;
const HEAVY_CHARS = 65_536;
const isHeavy = (req: GenerationRequest) => floatsOf(req) >= HEAVY_FLOATS || req.inputs.reduce((n, t) => n + t.length, 0) >= HEAVY_CHARS;

/** The client left before its call went out: nothing is sent for it. */
export const callerLeft = () => new AppError(499, 'The client closed the connection before the answer was ready.', { code: 'client_closed', retriable: false });

const MAX_REQUESTS = 64;
const MAX_INPUTS = 2048;
/** A job's result is bounded like one request's: a small call never rides with (and waits for) a big one. */
const MAX_FLOATS = MAX_FLOATS_PER_REQUEST;

const floatsOf = (req: GenerationRequest) => req.inputs.length * (req.dimensions ?? LOCAL_HASH_DEFAULT_DIMENSIONS);

/**
 * An upper bound on the JSON size of a job's payload (a string of n UTF-16 units is at most 6n
 * bytes as JSON), so JobClient.enqueue serialises it to measure only when it could be large.
 */
const payloadSizeBound = (batch: Pending[]) =>
  batch.reduce((sum, b) => sum + 128 + b.req.model.length * 6 + b.req.inputs.reduce((n, text) => n + text.length * 6 + 16, 0), 64);

/**
 * One job per request would cap the gateway at the queue's round-trip rate; one job per burst of
 * requests does not. The batching adapts to load: while fewer than `maxInFlight` jobs are out, calls
 * go at once (after the current tick, so a burst travels together); when that many are out, calls
 * wait for one to come back and then leave together. Light load gets the lowest latency, heavy load
 * the biggest jobs. For local-hash-v1, whose vectors cost less than the queue's round trip, a few
 * jobs out (EMBEDDINGS_MAX_IN_FLIGHT) make the biggest jobs. For use-lite, whose model is the cost,
 * many (USE_LITE_MAX_IN_FLIGHT): the worker's model batcher groups what it holds while its model is
 * busy, and it can only group what it has been sent. Upstream calls never come here: the API relays
 * them itself (upstream.ts).
 */
export class EmbeddingsCoalescer {
  private pending: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Calls out in jobs, by caller: a job's place in the queue (see dispatch). */
  private readonly outstanding = new Map<number | undefined, number>();

  constructor(
    private readonly p: Platform,
    /** Jobs kept out at once: EMBEDDINGS_MAX_IN_FLIGHT (local-hash-v1) or USE_LITE_MAX_IN_FLIGHT. */
    private readonly maxInFlight: number,
  ) {}

  /**
   * `left` fires when the client goes away: a call still waiting here is dropped, and one already in a job is named on
   * the gone channel (the workers drop its texts not yet embedded). `req.call` names it.
   */
  submit(req: GenerationRequest, left?: AbortSignal): Promise<GenerationOutcome> {
    return new Promise((resolve, reject) => {
      const entry: Pending = { req, resolve, reject, trace: tracing()?.capture() };
      left?.addEventListener(
        'abort',
        () => {
          const at = this.pending.indexOf(entry);
          if (at >= 0) {
            this.pending.splice(at, 1);
            reject(callerLeft());
          } else if (req.call) sayGone(this.p, req.call);
        },
        { once: true },
      );
      if (isHeavy(req)) {
        void this.dispatch([entry]);
        return;
      }
      this.pending.push(entry);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  /**
   * The waiting calls in the order a job takes them: callers take turns (each caller's first call, then each one's
   * second…), so one caller's many calls do not fill the next job while another caller's one call waits behind them.
   */
  private turns(): Pending[] {
    const byCaller = new Map<number | undefined, Pending[]>();
    for (const x of this.pending) {
      const list = byCaller.get(x.req.caller);
      if (list) list.push(x);
      else byCaller.set(x.req.caller, [x]);
    }
    if (byCaller.size === 1) return this.pending;
    const lists = [...byCaller.values()];
    const out: Pending[] = [];
    for (let round = 0; out.length < this.pending.length; round++) for (const list of lists) if (round < list.length) out.push(list[round]!);
    return out;
  }

  private pump() {
    if (this.pending.length && this.inFlight < this.maxInFlight) this.pending = this.turns();
    while (this.pending.length && this.inFlight < this.maxInFlight) {
      const batch: Pending[] = [];
      let inputs = 0;
      let floats = 0;
      while (
        this.pending.length &&
        batch.length < MAX_REQUESTS &&
        (batch.length === 0 || (inputs + this.pending[0]!.req.inputs.length <= MAX_INPUTS && floats + floatsOf(this.pending[0]!.req) <= MAX_FLOATS))
      ) {
        const next = this.pending.shift()!;
        inputs += next.req.inputs.length;
        floats += floatsOf(next.req);
        batch.push(next);
      }
      this.inFlight++;
      void this.dispatch(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /**
   * A job goes to the workers' queue ahead of the others when one of its callers has nothing else out, and behind
   * them by how much its callers have out otherwise (BullMQ takes jobs without a priority first, then by priority):
   * one caller's many calls, queued before another caller's one, do not make it wait for all of them at the workers.
   */
  private async dispatch(batch: Pending[]) {
    const load = Math.min(...batch.map((b) => this.outstanding.get(b.req.caller) ?? 0));
    for (const b of batch) this.outstanding.set(b.req.caller, (this.outstanding.get(b.req.caller) ?? 0) + 1);
    try {
      const job = () =>
        this.p.jobs.run(
          'embeddings.create',
          { requests: batch.map((b) => b.req) },
          {
            owner: null,
            waitMs: this.p.config.SYNC_WAIT_MS,
            sizeHint: payloadSizeBound(batch),
            ...(load > 0 ? { options: { priority: Math.min(load, 2_000_000) } } : {}),
          },
        );
      // Traces on: the job is a child of its first call's request and linked to the others' (it ran later, elsewhere).
      const traces = tracing();
      const run = traces
        ? await traces.span('embeddings.job', { 'switchyard.calls': batch.length }, job, {
            parent: batch[0]!.trace,
            links: batch.slice(1).map((b) => b.trace),
          })
        : await job();
      if (!run.done || !Array.isArray(run.result))
        throw new AppError(504, 'Embedding generation did not finish in time; try again.', { code: 'timeout', type: 'server_error' });
      batch.forEach((b, i) => b.resolve(run.result[i]!));
    } catch (err) {
      for (const b of batch) b.reject(err);
    } finally {
      for (const b of batch) {
        const n = (this.outstanding.get(b.req.caller) ?? 1) - 1;
        if (n > 0) this.outstanding.set(b.req.caller, n);
        else this.outstanding.delete(b.req.caller);
      }
    }
  }
}
