// Every job type of every area, one line each: what producers may enqueue and workers must run.
import { contentBatch } from '../content/jobs.js';
import { embeddingsCreate } from '../embeddings/jobs.js';
import { mailCode, mailFetch, mailPurge, mailSend } from '../mail/jobs.js';
import type { z } from 'zod';
import { byName } from './define.js';
import { contentPing, embeddingsPing, mailPing } from './ping.js';

export const jobDefinitions = byName([
  // the platform's own: a no-op per queue (POST /api/jobs/ping)
  contentPing,
  embeddingsPing,
  mailPing,
  // content
  contentBatch,
  // embeddings
  embeddingsCreate,
  // mail
  mailFetch,
  mailPurge,
  mailCode,
  mailSend,
]);

export type JobRegistry = typeof jobDefinitions;
export type JobName = keyof JobRegistry & string;
export type PayloadOf<N extends JobName> = z.input<JobRegistry[N]['payload']>;
export type ParsedPayloadOf<N extends JobName> = z.output<JobRegistry[N]['payload']>;
export type ResultOf<N extends JobName> = NonNullable<JobRegistry[N]['__result']>;
