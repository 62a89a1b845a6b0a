// Processors of the mail queue: thin, the work is in src/mail/.
import { codeOp, fetchOp, purgeOp, sendOp } from '../src/mail/operations.js';
import type { ProcessorMap } from './index.js';

export const mailProcessors: ProcessorMap = {
  'mail.fetch': (payload, { platform }) => fetchOp(platform, payload),
  'mail.purge': (payload, { platform }) => purgeOp(platform, payload),
  'mail.code': (payload, { platform }) => codeOp(platform, payload),
  'mail.send': (payload, { platform, job }) => sendOp(platform, job.id!, payload),
};
