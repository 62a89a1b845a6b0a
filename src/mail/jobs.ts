// The mail area's jobs, declared (payload, result, options); src/mail/processors.ts runs them.
import type { JobsOptions } from 'bullmq';
import type { Config } from '../config.js';
import { defineJob } from '../jobs/define.js';
import { codePayload, fetchPayload, purgePayload, sendPayload, type CodeResult, type FetchResult, type PurgeResult, type SendResult } from './schema.js';

/** Mail jobs talk to someone else's server while a caller waits: retry once, soon. */
const MAIL_OPTIONS: JobsOptions = { attempts: 2, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 } };
/** One user's jobs aimed at slow or silent servers must not fill the mail workers: MAIL_USER_CONCURRENCY each. */
const perUser = (c: Config) => c.MAIL_USER_CONCURRENCY;

// Results (messages with their bodies, verification codes, recipients) never sit in Redis, where
// Bull Board shows admins every job: they are kept in Postgres and the job carries their id.
export const mailFetch = defineJob<FetchResult>()({
  name: 'mail.fetch',
  queue: 'mail',
  payload: fetchPayload,
  resultIn: 'postgres',
  options: MAIL_OPTIONS,
  ownerConcurrency: perUser,
});
export const mailPurge = defineJob<PurgeResult>()({
  name: 'mail.purge',
  queue: 'mail',
  payload: purgePayload,
  resultIn: 'postgres',
  options: MAIL_OPTIONS,
  ownerConcurrency: perUser,
});
export const mailCode = defineJob<CodeResult>()({
  name: 'mail.code',
  queue: 'mail',
  payload: codePayload,
  resultIn: 'postgres',
  options: MAIL_OPTIONS,
  ownerConcurrency: perUser,
});
/** Sends are recorded by job id, so a retried job does not send twice. The message (its bodies) is kept in Postgres. */
export const mailSend = defineJob<SendResult>()({
  name: 'mail.send',
  queue: 'mail',
  payload: sendPayload,
  payloadIn: 'postgres',
  resultIn: 'postgres',
  ownerConcurrency: perUser,
  options: { attempts: 3, backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 } },
});
