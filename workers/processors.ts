// The processors of every area, by area; workers/index.ts checks that each job has exactly one.
import type { ProcessorMap } from './index.js';
import { contentProcessors } from './content.js';
import { embeddingsProcessors } from './embeddings.js';
import { mailProcessors } from './mail.js';
import { pingProcessors } from './ping.js';

export const processorMaps: Record<string, ProcessorMap> = {
  content: contentProcessors,
  embeddings: embeddingsProcessors,
  mail: mailProcessors,
  ping: pingProcessors,
};
