// Runs the content area's jobs (declared in ./jobs.ts); loaded by worker processes only.
import type { ProcessorMap } from '../jobs/processor.js';
import { runBatch } from './batch.js';
import { loadCaller } from './store.js';

export const contentProcessors: ProcessorMap = {
  // The caller's role is read from Postgres when the job runs; the job's data only names the owner.
  'content.batch': async ({ items }, { platform, job, owner }) =>
    runBatch(platform.db, items, await loadCaller(platform.db, owner), (percent) => job.updateProgress(percent)),
};
