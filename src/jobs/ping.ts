// The ping job of every queue: a no-op that says which worker ran it (is a queue consumed, and how fast).
import os from 'node:os';
import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { QueueName } from '../config.js';
import { defineJob } from './define.js';

export const pingPayload = z.object({});
export interface PingResult {
  worker: string;
}

const PING_OPTIONS: JobsOptions = { attempts: 1, removeOnComplete: { age: 60, count: 100 }, removeOnFail: { age: 3600, count: 100 } };

const definePing = <Q extends QueueName>(queue: Q) =>
  defineJob<PingResult>()({
    name: `${queue}.ping` as `${Q}.ping`,
    queue,
    payload: pingPayload,
    options: PING_OPTIONS,
    reply: 'direct',
    run: async () => ({ worker: `${os.hostname()}:${process.pid}` }),
  });

/** The platform's own jobs, one per queue (POST /api/jobs/ping): the composition root lists them with the areas'. */
export const pingJobs = [
  definePing('content'),
  definePing('embeddings'),
  definePing('mail'),
  definePing('webhooks'),
  definePing('schedules'),
  definePing('batches'),
] as const;
