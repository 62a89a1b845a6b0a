// Runs the content area's jobs (declared in ./jobs.ts); loaded by worker processes only.
import type { ProcessorMap } from '../jobs/processor.js';
import { runBatch } from './batch.js';

export const contentProcessors: ProcessorMap = {
  'content.batch': ({ items }, { platform, job }) => runBatch(platform.db, items, (percent) => job.updateProgress(percent)),
};
