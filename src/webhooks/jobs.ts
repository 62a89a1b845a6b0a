// The webhooks area's job kind (a delivery: one event to one endpoint), the job-end listener that makes events, and
// the webhooks queue's hooks (the log's retention). Delivery code is loaded on first use.
import { DECLARED_BACKOFF } from '../jobs/registry.js';
import { defineJob, defineJobEndListener, defineQueueHooks } from '../jobs/define.js';
import type { Platform } from '../platform.js';
import { deliverPayload } from './schema.js';
import { jobEnded, pruneEvents, retryDelay } from './service.js';
import type { DeliveryResult } from './deliver.js';

export const webhooksDeliver = defineJob<DeliveryResult>()({
  name: 'webhooks.deliver',
  queue: 'webhooks',
  payload: deliverPayload,
  // Attempts and retention come with each enqueue (deliveryOptions: settings); the delays are declared here.
  options: { backoff: { type: DECLARED_BACKOFF } },
  retryDelay,
  run: async (payload, ctx) => (await import('./deliver.js')).runDelivery(payload, ctx),
});

export const webhooksJobs = [webhooksDeliver] as const;

/** Every job of a user that ends (completed, failed for good, cancelled) is an event for their endpoints. */
export const webhooksJobEnd = defineJobEndListener({ name: 'webhooks', ended: (end, { platform }) => jobEnded(platform, end) });

/** Each worker process consuming the webhooks queue deletes events past their retention, hourly (± 50 %). */
const pruning = new WeakMap<Platform, NodeJS.Timeout>();
export const webhooksQueueHooks = defineQueueHooks({
  queue: 'webhooks',
  warmUp: async (p) => {
    const run = () => {
      pruneEvents(p).catch((err) => p.log.warn({ err }, 'could not prune webhook events'));
      pruning.set(p, setTimeout(run, 3_600_000 * (0.5 + Math.random())).unref());
    };
    pruning.set(p, setTimeout(run, 60_000 * Math.random()).unref());
  },
  stop: async (p) => clearTimeout(pruning.get(p)),
});
