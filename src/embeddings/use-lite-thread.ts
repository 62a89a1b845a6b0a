// The use-lite model in a thread of its own (worker_threads): a model call takes from ~15 ms to a second of CPU that
// never yields, and run on the process's main thread it stalled everything else there — the API's requests in
// `npm start` (API and workers in one process), the worker's job locks, Redis and Postgres (src/embeddings/use-lite-worker.ts).
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
