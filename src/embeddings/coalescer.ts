// Gathers local-model calls into shared jobs, sized by load, and fans the results back out.
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';
import { LOCAL_HASH_DEFAULT_DIMENSIONS } from './local-hash.js';
import { MAX_FLOATS_PER_REQUEST, type GenerationOutcome, type GenerationRequest } from './schema.js';

interface Pending {
  req: GenerationRequest;
  resolve: (o: GenerationOutcome) => void;
  reject: (e: unknown) => void;
}

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

  constructor(
    private readonly p: Platform,
    /** Jobs kept out at once: EMBEDDINGS_MAX_IN_FLIGHT (local-hash-v1) or USE_LITE_MAX_IN_FLIGHT. */
    private readonly maxInFlight: number,
  ) {}

  submit(req: GenerationRequest): Promise<GenerationOutcome> {
    return new Promise((resolve, reject) => {
      this.pending.push({ req, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump() {
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

  private async dispatch(batch: Pending[]) {
    try {
      const run = await this.p.jobs.run(
        'embeddings.create',
        { requests: batch.map((b) => b.req) },
        { owner: null, waitMs: this.p.config.SYNC_WAIT_MS, sizeHint: payloadSizeBound(batch) },
      );
      if (!run.done || !Array.isArray(run.result))
        throw new AppError(504, 'Embedding generation did not finish in time; try again.', { code: 'timeout', type: 'server_error' });
      batch.forEach((b, i) => b.resolve(run.result[i]!));
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  }
}
