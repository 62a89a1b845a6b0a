// Calls whose client stopped waiting (went away, or its wait ran out): the API says so on a Redis channel, and the
// workers drop those calls' texts not yet embedded, so nobody's model time goes to answers nobody will read.
import type { Platform } from '../platform.js';
import { createRedis, publishTo, type Redis, subscribeTo } from '../redis.js';
import { CallerGoneError } from './model-batcher.js';
import type { GenerationRequest } from './schema.js';
import { AppError } from '../errors.js';

const channel = (p: Platform) => p.keys.of('embeddings-gone', 'calls');
/** How long a worker remembers a gone call: its job may still be on its way (a call waits at most SYNC_WAIT_MS). */
const rememberMs = (p: Platform) => p.config.SYNC_WAIT_MS + 5_000;

/** The API: the client of call `id` has gone; workers drop what is left of it. */
export function sayGone(p: Platform, id: string): void {
  publishTo(p.redis, channel(p), id).catch((err) => p.log.warn({ err }, 'could not say that an embeddings call was abandoned'));
}

interface Listener {
  subscriber: Redis;
  /** Gone call ids, with when they may be forgotten. */
  ids: Map<string, number>;
  ready: Promise<void>;
}
const listeners = new WeakMap<Platform, Listener>();

/** A worker: starts hearing which calls are gone (once per platform). */
export function listenForGone(p: Platform): Promise<void> {
  let l = listeners.get(p);
  if (!l) {
    const subscriber = createRedis(p.config, 'worker', 'embeddings-gone', { subscriber: true });
    const ids = new Map<string, number>();
    const ready = subscribeTo(subscriber, channel(p), (id) => {
      const now = Date.now();
      ids.set(id, now + rememberMs(p));
      // Forget the old ones now and then (the map holds only calls abandoned in the last SYNC_WAIT_MS or so).
      if (ids.size % 256 === 0) for (const [k, until] of ids) if (until < now) ids.delete(k);
    }).catch((err) => p.log.warn({ err }, 'not hearing which embeddings calls are abandoned'));
    l = { subscriber, ids, ready };
    listeners.set(p, l);
  }
  return l.ready;
}

/** A worker stops: no more listening. */
export async function stopListeningForGone(p: Platform): Promise<void> {
  const l = listeners.get(p);
  if (!l) return;
  listeners.delete(p);
  await l.subscriber.quit().catch(() => l.subscriber.disconnect());
}

/** Whether nobody waits for this call any more: its client went away (the API said so), or its deadline passed. */
export function isGone(p: Platform, req: Pick<GenerationRequest, 'call' | 'deadline'>): boolean {
  if (req.deadline !== undefined && Date.now() > req.deadline) return true;
  return req.call !== undefined && (listeners.get(p)?.ids.has(req.call) ?? false);
}

/** What a dropped call's outcome says (nobody reads it; not retried). */
export const goneError = (err: unknown) =>
  err instanceof CallerGoneError
    ? new AppError(504, 'The caller stopped waiting; its texts were dropped.', { code: 'timeout', type: 'server_error', retriable: false })
    : err;
