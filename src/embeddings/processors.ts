// Runs the embeddings area's jobs (declared in ./jobs.ts); loaded by worker processes only.
import type { ProcessorMap } from '../jobs/processor.js';
import { generate } from './generate.js';
export { stopEmbeddings, warmUpEmbeddings } from './generate.js';

export const embeddingsProcessors: ProcessorMap = {
  'embeddings.create': ({ requests }, { platform }) => generate(platform, requests),
};
