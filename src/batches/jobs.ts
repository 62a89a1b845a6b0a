// The batches area's jobs: a batch's validation and fan-out, its chunks, its finalizing, and the daily deletion of
// expired files. Handlers load the worker code (./run.js) when they run.
import { defineJob } from '../jobs/define.js';
import { type ChunkResult, chunkPayload, expireFilesPayload, type FinalizeResult, finalizePayload, type RunResult, runPayload } from './schema.js';

const work = () => import('./run.js');

/** A batch's lines live in Postgres: every job only names its batch. Kept a day, as the batch's own record is longer. */
const KEEP = { removeOnComplete: { age: 86_400, count: 10_000 }, removeOnFail: { age: 7 * 86_400, count: 10_000 } };

export const batchesRun = defineJob<RunResult>()({
  name: 'batches.run',
  notCancellable: 'This job is part of a batch: cancel the batch with POST /v1/batches/{id}/cancel.',
  queue: 'batches',
  payload: runPayload,
  options: { attempts: 5, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 }, ...KEEP },
  run: async ({ batchId }, { platform, job }) => (await work()).runBatch(platform, batchId, job.attemptsMade + 1 >= (job.opts.attempts ?? 1)),
});

export const batchesChunk = defineJob<ChunkResult>()({
  name: 'batches.chunk',
  notCancellable: 'This job is part of a batch: cancel the batch with POST /v1/batches/{id}/cancel.',
  queue: 'batches',
  payload: chunkPayload,
  // A line that failed for a passing reason (an upstream down) is tried again with its chunk, over about a minute.
  options: { attempts: 5, backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 }, ...KEEP },
  run: async (payload, { platform, signal, job }) => (await work()).runChunk(platform, payload, { signal, job }),
});

export const batchesFinalize = defineJob<FinalizeResult>()({
  name: 'batches.finalize',
  notCancellable: 'This job is part of a batch: cancel the batch with POST /v1/batches/{id}/cancel.',
  queue: 'batches',
  payload: finalizePayload,
  options: { attempts: 5, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 }, ...KEEP },
  run: async ({ batchId }, { platform }) => (await work()).finalizeBatch(platform, batchId),
});

/** Files past FILE_RETENTION_DAYS (or their own expiry), uploads left unfinished by a process that died, and batches an hour past their window that never ended. */
export const filesExpire = defineJob<{ deleted: number; repaired: number }>()({
  name: 'files.expire',
  queue: 'batches',
  payload: expireFilesPayload,
  options: { attempts: 3, removeOnComplete: { age: 86_400, count: 100 }, removeOnFail: { age: 86_400, count: 100 } },
  run: async (_payload, { platform }) => (await import('./service.js')).expireFiles(platform),
});

export const batchesJobs = [batchesRun, batchesChunk, batchesFinalize, filesExpire] as const;
