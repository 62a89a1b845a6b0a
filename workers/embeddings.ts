// Processors of the embeddings queue: thin, the work is in src/embeddings/.
import { generate } from '../src/embeddings/generate.js';
import type { ProcessorMap } from './index.js';

export const embeddingsProcessors: ProcessorMap = {
  'embeddings.create': ({ requests }, { platform }) => generate(platform, requests),
};
