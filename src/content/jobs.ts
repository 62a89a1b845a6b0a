// The content area's jobs, each declared once: payload, result, options and handler. The handlers load the
// area's worker code when they run, so API processes, which load these declarations, never do.
import { defineJob } from '../jobs/define.js';
import { batchPayload, type BatchResult } from './schema.js';

/** Up to 100 items in one multi-row upsert; a batch over JOB_INLINE_PAYLOAD_BYTES travels through Postgres, not Redis. */
export const contentBatch = defineJob<BatchResult>()({
  name: 'content.batch',
  queue: 'content',
  payload: batchPayload,
  // The caller's role is read from Postgres when the job runs; the job's data only names the owner.
  run: async ({ items }, { platform, job, owner, signal }) => {
    const [{ runBatch }, { loadCaller }] = await Promise.all([import('./batch.js'), import('./store.js')]);
    return runBatch(platform.db, items, await loadCaller(platform.db, owner), (percent) => job.updateProgress(percent), signal);
  },
});

/** Every job of the area: the composition root (src/job-kinds.ts) lists them. */
export const contentJobs = [contentBatch] as const;
