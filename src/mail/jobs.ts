// The mail area's jobs, each declared once: payload, result, options and handler, and the mail queue's hooks.
// The work is loaded on first use, so API processes, and worker processes that never run a mail job, never load
// imapflow, mailparser and nodemailer (~27 MB).
import type { JobsOptions } from 'bullmq';
import type { Config } from '../config.js';
import { defineJob, defineQueueHooks } from '../jobs/define.js';
import { codePayload, fetchPayload, purgePayload, sendPayload, type CodeResult, type FetchResult, type PurgeResult, type SendResult } from './schema.js';

/** Mail jobs talk to someone else's server while a caller waits: retry once, soon. */
const MAIL_OPTIONS: JobsOptions = { attempts: 2, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 } };
/** One user's jobs aimed at slow or silent servers must not fill the mail workers: MAIL_USER_CONCURRENCY each. */
const perUser = (c: Config) => c.MAIL_USER_CONCURRENCY;

const ops = () => import('./operations.js');

// Results (messages with their bodies, verification codes, recipients) never sit in Redis, where
// Bull Board shows admins every job: they are kept in Postgres and the job carries their id.
export const mailFetch = defineJob<FetchResult>()({
  name: 'mail.fetch',
  queue: 'mail',
  payload: fetchPayload,
  resultIn: 'postgres',
  options: MAIL_OPTIONS,
  ownerConcurrency: perUser,
  run: async (payload, { platform, owner, signal }) => (await ops()).fetchOp(platform, owner, payload, signal),
});
export const mailPurge = defineJob<PurgeResult>()({
  name: 'mail.purge',
  queue: 'mail',
  payload: purgePayload,
  resultIn: 'postgres',
  options: MAIL_OPTIONS,
  ownerConcurrency: perUser,
  run: async (payload, { platform, owner }) => (await ops()).purgeOp(platform, owner, payload),
});
export const mailCode = defineJob<CodeResult>()({
  name: 'mail.code',
  queue: 'mail',
  payload: codePayload,
  resultIn: 'postgres',
  options: MAIL_OPTIONS,
  ownerConcurrency: perUser,
  run: async (payload, { platform, owner, signal }) => (await ops()).codeOp(platform, owner, payload, signal),
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
  run: async (payload, { platform, owner, job, signal }) => (await ops()).sendOp(platform, owner, job.id!, payload, signal),
});

/** Every job of the area: the composition root (src/job-kinds.ts) lists them. */
export const mailJobs = [mailFetch, mailPurge, mailCode, mailSend] as const;

/**
 * Loads the mail code and runs the code extractor once on a small message, at worker start: its
 * first run compiles large regular expressions (~100 ms), which would otherwise stall the first
 * job's process. Only processes that consume the mail queue run it.
 */
export const mailQueueHooks = defineQueueHooks({ queue: 'mail', warmUp: async () => (await ops()).warmUp() });
