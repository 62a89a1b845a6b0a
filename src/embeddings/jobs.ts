// The embeddings area's jobs, declared (payload, result, options); src/embeddings/processors.ts runs them.
import { defineJob } from '../jobs/define.js';
import { generationPayload, type GenerationOutcome } from './schema.js';

/** The vectors for one or more coalesced /v1 calls; the result goes straight back to the waiting API process. */
export const embeddingsCreate = defineJob<GenerationOutcome[]>()({
  name: 'embeddings.create',
  queue: 'embeddings',
  payload: generationPayload,
  reply: 'direct',
  // Someone is waiting on every one of these: retry briefly, keep little.
  options: {
    attempts: 3,
    backoff: { type: 'exponential', delay: 500, jitter: 0.5 },
    removeOnComplete: { age: 60, count: 1000 },
    removeOnFail: { age: 3600, count: 1000 },
  },
});
