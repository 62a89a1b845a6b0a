// use-lite in a worker process: the model (loaded once), the batcher its jobs share, and the readiness
// the API reports (/readyz) and the worker's own /metrics show.
import os from 'node:os';
import type { Platform } from '../platform.js';
import { modelReady } from '../metrics.js';
import { Worker } from 'node:worker_threads';
import { type BatchModel, ModelBatcher } from './model-batcher.js';
import { USE_LITE_DIMENSIONS, USE_LITE_MAX_TOKENS, USE_LITE_MODEL } from './use-lite-text.js';
import type { EmbedRequest, ThreadMessage } from './use-lite-thread.js';

let loading: Promise<BatchModel> | undefined;
let batcher: ModelBatcher | undefined;
/** Per platform (tests run several in one process): the timer saying every 10 s that this process has use-lite. */
const heartbeats = new WeakMap<Platform, NodeJS.Timeout>();
/** Platforms whose worker has stopped: a job still finishing there must not say so again. */
const withdrawn = new WeakSet<Platform>();
/** Model threads per process: USE_LITE_THREADS of the first platform that asks (one process, one pool). */
let threads = 2;

/**
 * One model in a thread of its own (use-lite-thread.ts); calls go to it as messages, and the main thread stays free
 * meanwhile (for the API in `npm start`, job locks, Redis and Postgres). A thread that fails to load or dies fails
 * its calls; the next call starts the pool again.
 */
type ModelThread = BatchModel & { stop(): void };

/** The model threads running in this process (to see that a pool that lost one leaves none behind). */
const live = new Set<Worker>();
export const liveUseLiteThreads = (): readonly Worker[] => [...live];

function startThread(onDeath: (err: Error) => void): Promise<ModelThread> {
  return new Promise((resolve, reject) => {
    const here = import.meta.url;
    // Compiled, the thread is a .js file beside this one; run from TypeScript sources (tests, tsx), its .ts
    // file needs tsx's loader, registered inside the thread.
    const file = new URL(`./use-lite-thread.${here.endsWith('.ts') ? 'ts' : 'js'}`, here);
    const thread = here.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`, { eval: true })
      : new Worker(file);
    thread.unref(); // it must not keep a stopping process alive
    live.add(thread);
    thread.once('exit', () => live.delete(thread));
    const pending = new Map<number, { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }>();
    let nextId = 0;
    let dead: Error | undefined;
    const fail = (err: Error) => {
      if (dead) return;
      dead = err;
      for (const x of pending.values()) x.reject(err);
      pending.clear();
      onDeath(err);
      reject(err);
    };
    thread.on('error', fail);
    thread.on('exit', (code) => fail(new Error(`a use-lite thread stopped (exit code ${code})`)));
    thread.on('message', (m: ThreadMessage) => {
      if ('ready' in m) {
        resolve({
          stop: () => void thread.terminate(),
          embed(texts) {
            return new Promise((res, rej) => {
              // A call to a thread that has died would wait for ever: it fails at once.
              if (dead) return rej(dead);
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
        const x = pending.get(m.id);
        pending.delete(m.id);
        if (!x) return;
        if ('error' in m) x.reject(new Error(m.error));
        else
          x.resolve(
            Array.from({ length: m.vectors.length / USE_LITE_DIMENSIONS }, (_, i) =>
              m.vectors.subarray(i * USE_LITE_DIMENSIONS, (i + 1) * USE_LITE_DIMENSIONS),
            ),
          );
      }
    });
  });
}

/**
 * The model: `threads` threads, each with its own copy, loaded together on first use. The batcher runs at most that
 * many calls at once; each goes to a thread that is free.
 */
export function useLiteModel(): Promise<BatchModel> {
  if (loading) return loading;
  const started: Promise<ModelThread>[] = [];
  let gone = false;
  // One thread gone: the whole pool goes (its other threads would live on unused, a model copy each, and the ones
  // stopped here report their own exits), and the next call starts a new pool.
  const died = () => {
    if (gone) return;
    gone = true;
    if (loading === pool) loading = undefined;
    modelReady.set({ model: USE_LITE_MODEL }, 0);
    for (const t of started)
      void t.then(
        (thread) => thread.stop(),
        () => {},
      );
  };
  const pool: Promise<BatchModel> = (async () => {
    for (let i = 0; i < threads; i++) started.push(startThread(died));
    const free = await Promise.all(started);
    modelReady.set({ model: USE_LITE_MODEL }, 1);
    return {
      async embed(texts: readonly string[]) {
        const thread = free.pop();
        if (!thread) throw new Error('every use-lite thread is busy'); // the batcher runs at most `threads` calls at once
        try {
          return await thread.embed(texts);
        } finally {
          free.push(thread);
        }
      },
    };
  })();
  pool.catch(died);
  loading = pool;
  return pool;
}

/**
 * Texts per model call: the raw model's best batch size (~190 sentences/s at 64, no better above). And
 * pieces per call, estimated from the text's length (~4 characters a piece in English, at most 128):
 * 1,024, so that a call of long texts (8 of 128 pieces, under a second; a long text costs ~100 ms
 * at any batch size) is no longer than one of 64 sentences; a bigger request takes turns with the
 * others in calls of this size.
 */
export const USE_LITE_TEXTS_PER_CALL = 64;
export const USE_LITE_PIECES_PER_CALL = 1_024;
const estimatedPieces = (text: string) => Math.min(USE_LITE_MAX_TOKENS, Math.ceil(text.length / 4) + 1);

/** The process's batcher: use-lite texts of every job running here share model calls. */
export function useLiteBatcher(p?: Platform): ModelBatcher {
  if (!batcher && p) threads = p.config.USE_LITE_THREADS;
  batcher ??= new ModelBatcher(useLiteModel, USE_LITE_TEXTS_PER_CALL, 0, { cost: estimatedPieces, max: USE_LITE_PIECES_PER_CALL }, undefined, threads);
  return batcher;
}

/** The Redis sorted set of workers that have use-lite loaded, scored by when they last said so. */
export const useLiteReadyKey = (p: Platform) => p.keys.of('model-ready', USE_LITE_MODEL);
/** How often a worker says so, and how long the API believes it. */
export const READY_EVERY_MS = 10_000;
export const READY_FOR_MS = 30_000;

/** Once the model is loaded: tells Redis every 10 s that this process has it (the API's /readyz counts them). */
export function announceUseLite(p: Platform): void {
  if (heartbeats.has(p) || withdrawn.has(p)) return;
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
  heartbeats.set(p, setInterval(beat, READY_EVERY_MS).unref());
}

/** Worker stop: this process no longer says it has use-lite (/readyz counts the others at once, not 30 s later). */
export async function withdrawUseLite(p: Platform): Promise<void> {
  withdrawn.add(p);
  const heartbeat = heartbeats.get(p);
  if (!heartbeat) return;
  clearInterval(heartbeat);
  heartbeats.delete(p);
  await p.redis.zrem(useLiteReadyKey(p), `${os.hostname()}:${process.pid}`).catch(() => {});
}

/** Worker start (USE_LITE_PRELOAD): load the model before taking jobs, so the first call does not wait ~1 s for it. */
export async function warmUpUseLite(p: Platform): Promise<void> {
  // Only processes that consume the embeddings queue get here, so an API process never reports the gauge.
  modelReady.set({ model: USE_LITE_MODEL }, 0);
  if (!p.config.USE_LITE_PRELOAD) return;
  useLiteBatcher(p);
  try {
    await useLiteModel();
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
