// The use-lite model in a thread of its own (worker_threads): a model call takes tens of milliseconds of
// CPU, and run on the worker process's main thread it would stop that thread from taking more jobs
// meanwhile, so the next call could only batch what had been fetched before (src/embeddings/use-lite-worker.ts).
import { parentPort } from 'node:worker_threads';
import { USE_LITE_DIMENSIONS } from './use-lite-text.js';
import { openUseLite } from './use-lite.js';

export interface EmbedRequest {
  id: number;
  texts: string[];
}

export type ThreadMessage = { ready: true } | { loadError: string } | { id: number; vectors: Float32Array } | { id: number; error: string };

if (parentPort) {
  const port = parentPort;
  openUseLite().then(
    (encoder) => {
      port.on('message', (req: EmbedRequest) => {
        encoder.embed(req.texts).then(
          (vectors) => {
            // One buffer for the whole call, handed over rather than copied.
            const flat = new Float32Array(vectors.length * USE_LITE_DIMENSIONS);
            vectors.forEach((v, i) => flat.set(v, i * USE_LITE_DIMENSIONS));
            port.postMessage({ id: req.id, vectors: flat } satisfies ThreadMessage, [flat.buffer]);
          },
          (err: Error) => port.postMessage({ id: req.id, error: err.message } satisfies ThreadMessage),
        );
      });
      port.postMessage({ ready: true } satisfies ThreadMessage);
    },
    (err: Error) => port.postMessage({ loadError: err.message } satisfies ThreadMessage),
  );
}
