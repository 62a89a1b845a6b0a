// The embeddings area's jobs, declared (payload, result, options); src/embeddings/processors.ts runs them.
import { defineJob } from '../jobs/define.js';
import { generationPayload, type GenerationOutcome } from './schema.js';

/** The vectors for one or more coalesced /v1 calls; the result goes straight back to the waiting API process. */
export const embeddingsCreate = defineJob<GenerationOutcome[]>()({
  name: 'embeddings.create',
  queue: 'embeddings',
  payload: generationPayload,
  // The callers' texts: sealed in Redis, where Bull Board shows admins every job (a Postgres row per job would cost
  // the busiest path a round trip); the vectors go straight back to the waiting process (reply 'direct').
  payloadIn: 'sealed',
  reply: 'direct',
  // Someone is waiting on every one of these: retry briefly, keep little.
  options: {
    attempts: 3,
    backoff: { type: 'exponential', delay: 500, jitter: 0.5 },
    removeOnComplete: { age: 60, count: 1000 },
    removeOnFail: { age: 3600, count: 1000 },
  },
});
