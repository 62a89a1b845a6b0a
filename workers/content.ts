// Processors of the content queue: thin, the work is in src/content/.
import { runBatch } from '../src/content/batch.js';
import type { ProcessorMap } from './index.js';

export const contentProcessors: ProcessorMap = {
  'content.batch': ({ items }, { platform, job }) => runBatch(platform.db, items, (percent) => job.updateProgress(percent)),
};
