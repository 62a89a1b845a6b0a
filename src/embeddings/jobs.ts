// The embeddings area's jobs, each declared once: payload, result, options and handler, and the embeddings queue's
// hooks. Handlers and hooks load ./generate.js (models, use-lite) when they run: API processes never do.
import { defineJob, defineQueueHooks } from '../jobs/define.js';
import { generationPayload, type GenerationOutcome } from './schema.js';

const generation = () => import('./generate.js');

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
  run: async ({ requests }, { platform }) => (await generation()).generate(platform, requests),
});

/** Every job of the area: the composition root (src/job-kinds.ts) lists them. */
export const embeddingsJobs = [embeddingsCreate] as const;

/** A worker consuming the embeddings queue loads its models first, and withdraws the readiness it announced when it stops. */
export const embeddingsQueueHooks = defineQueueHooks({
  queue: 'embeddings',
  warmUp: async (p) => (await generation()).warmUpEmbeddings(p),
  stop: async (p) => (await generation()).stopEmbeddings(p),
});
