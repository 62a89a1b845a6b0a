// Processors of the mail queue: thin, the work is in src/mail/ — loaded on first use, so processes
// that never run a mail job never load imapflow, mailparser and nodemailer (~27 MB).
import type { ProcessorMap } from './index.js';

const ops = () => import('../src/mail/operations.js');

export const mailProcessors: ProcessorMap = {
  'mail.fetch': async (payload, { platform }) => (await ops()).fetchOp(platform, payload),
  'mail.purge': async (payload, { platform }) => (await ops()).purgeOp(platform, payload),
  'mail.code': async (payload, { platform }) => (await ops()).codeOp(platform, payload),
  'mail.send': async (payload, { platform, job }) => (await ops()).sendOp(platform, job.id!, payload),
};
