// use-lite in a worker process: the model (loaded once, in a thread of its own), the batcher its jobs share, and the readiness
// the API reports (/readyz) and the worker's own /metrics show.
import os from 'node:os';
import type { Platform } from '../platform.js';
import { modelReady } from '../metrics.js';
import { Worker } from 'node:worker_threads';
import { type BatchModel, ModelBatcher } from './model-batcher.js';
import { USE_LITE_DIMENSIONS, USE_LITE_MODEL } from './use-lite-text.js';
import type { EmbedRequest, ThreadMessage } from './use-lite-thread.js';

let loading: Promise<BatchModel> | undefined;
let batcher: ModelBatcher | undefined;
let heartbeat: NodeJS.Timeout | undefined;

/**
 * The model in its own thread (use-lite-thread.ts), started on first use; calls go to it as messages.
 * While it computes, this thread keeps taking jobs, so the next model call batches all that arrived.
 * A thread that fails to load, or dies, is started again by the next call.
 */
function startThread(): Promise<BatchModel> {
  return new Promise((resolve, reject) => {
    const here = import.meta.url;
    // Compiled, the thread is a .js file beside this one; run from TypeScript sources (tests, tsx), its .ts
    // file needs tsx's loader, registered inside the thread.
    const file = new URL(`./use-lite-thread.${here.endsWith('.ts') ? 'ts' : 'js'}`, here);
    const thread = here.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`, { eval: true })
      : new Worker(file);
    thread.unref(); // it must not keep a stopping process alive
    const pending = new Map<number, { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }>();
    let nextId = 0;
    const fail = (err: Error) => {
      loading = undefined;
      modelReady.set({ model: USE_LITE_MODEL }, 0);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
      reject(err);
    };
    thread.on('error', fail);
    thread.on('exit', (code) => fail(new Error(`the use-lite thread stopped (exit code ${code})`)));
    thread.on('message', (m: ThreadMessage) => {
      if ('ready' in m) {
        modelReady.set({ model: USE_LITE_MODEL }, 1);
        resolve({
          embed(texts) {
            return new Promise((res, rej) => {
              const id = nextId++;
              pending.set(id, { resolve: res, reject: rej });
              thread.postMessage({ id, texts: [...texts] } satisfies EmbedRequest);
            });
          },
        });
      } else if ('loadError' in m) {
        void thread.terminate();
        fail(new Error(`use-lite could not be loaded: ${m.loadError}`));
      } else {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (!p) return;
        if ('error' in m) p.reject(new Error(m.error));
        else
          p.resolve(
            Array.from({ length: m.vectors.length / USE_LITE_DIMENSIONS }, (_, i) =>
              m.vectors.subarray(i * USE_LITE_DIMENSIONS, (i + 1) * USE_LITE_DIMENSIONS),
            ),
          );
      }
    });
  });
}

function model(): Promise<BatchModel> {
  loading ??= startThread();
  return loading;
}

/** The process's batcher: use-lite texts of every job running here share model calls. */
export function useLiteBatcher(): ModelBatcher {
  batcher ??= new ModelBatcher(model);
  return batcher;
}

/** The Redis sorted set of workers that have use-lite loaded, scored by when they last said so. */
export const useLiteReadyKey = (p: Platform) => p.keys.of('model-ready', USE_LITE_MODEL);
/** How often a worker says so, and how long the API believes it. */
export const READY_EVERY_MS = 10_000;
export const READY_FOR_MS = 30_000;

/** Once the model is loaded: tells Redis every 10 s that this process has it (the API's /readyz counts them). */
export function announceUseLite(p: Platform): void {
  if (heartbeat) return;
  const me = `${os.hostname()}:${process.pid}`;
  const beat = () => {
    const now = Date.now();
    void p.redis
      .multi()
      .zadd(useLiteReadyKey(p), now, me)
      .zremrangebyscore(useLiteReadyKey(p), 0, now - READY_FOR_MS)
      .exec()
      .catch(() => {});
  };
  beat();
  heartbeat = setInterval(beat, READY_EVERY_MS).unref();
}

/** Worker start (USE_LITE_PRELOAD): load the model before taking jobs, so the first call does not wait ~1 s for it. */
export async function warmUpUseLite(p: Platform): Promise<void> {
  // Only processes that consume the embeddings queue get here, so an API process never reports the gauge.
  modelReady.set({ model: USE_LITE_MODEL }, 0);
  if (!p.config.USE_LITE_PRELOAD) return;
  try {
    await model();
    announceUseLite(p);
  } catch (err) {
    // The worker still serves local-hash-v1; use-lite jobs try the load again (and fail with its reason).
    p.log.error({ err }, 'use-lite could not be loaded');
  }
}

/** How many worker processes said within READY_FOR_MS that they have use-lite loaded (for the API's /readyz). */
export async function useLiteWorkersReady(p: Platform): Promise<number> {
  return p.redis.zcount(useLiteReadyKey(p), Date.now() - READY_FOR_MS, '+inf');
}
