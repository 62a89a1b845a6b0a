// The composition root of the job platform: every area's job kinds and queue hooks, one line per area. A job kind
// is declared (name, queue, payload, options, handler) in its area's jobs.ts and listed there in the area's list;
// src/jobs, generic, imports none of this. Entry points give jobKinds to the platform (src/process.ts), workers
// take the hooks from here (workers/index.ts).
import { batchesJobs } from './batches/jobs.js';
import { contentJobs } from './content/jobs.js';
import { embeddingsJobs, embeddingsQueueHooks } from './embeddings/jobs.js';
import type { QueueHooks } from './jobs/define.js';
import { pingJobs } from './jobs/ping.js';
import { byName, type JobEndListener } from './jobs/registry.js';
import { logsJobs } from './logs/jobs.js';
import { mailJobs, mailQueueHooks } from './mail/jobs.js';
import { schedulesJobs } from './schedules/jobs.js';
import { webhooksJobEnd, webhooksJobs, webhooksQueueHooks } from './webhooks/jobs.js';

/** Every job kind, as a list (a test adds its own to it: `byName([...jobList, myJob])`). */
export const jobList = [
  // the platform's own: a no-op per queue (POST /api/jobs/ping)
  ...pingJobs,
  ...contentJobs,
  ...embeddingsJobs,
  ...mailJobs,
  ...logsJobs,
  ...schedulesJobs,
  ...webhooksJobs,
  ...batchesJobs,
] as const;

/** Every job kind by name: what the API enqueues (type-checked: see Registered below) and workers run. */
export const jobKinds = byName(jobList);

/** What a worker does at start and stop for a queue it consumes, per area. */
export const queueHooks: readonly QueueHooks[] = [embeddingsQueueHooks, mailQueueHooks, webhooksQueueHooks];

/** What is told when any job ends (src/jobs/define.ts announceJobEnd), per area: given to the platform like jobKinds. */
export const jobEndListeners: readonly JobEndListener[] = [webhooksJobEnd];

// Types p.jobs.enqueue('content.batch', …), run() and runJobForRequest() by these kinds' names, payloads and results.
declare module './jobs/registry.js' {
  interface Registered {
    kinds: typeof jobKinds;
  }
}
