// Runs the mail area's jobs (declared in ./jobs.ts). The work is loaded on first use, so worker processes
// that never run a mail job never load imapflow, mailparser and nodemailer (~27 MB).
import type { ProcessorMap } from '../jobs/processor.js';

const ops = () => import('./operations.js');

/**
 * Loads the mail code and runs the code extractor once on a small message, at worker start: its
 * first run compiles large regular expressions (~100 ms), which would otherwise stall the first
 * job's process. Only processes that consume the mail queue call it.
 */
export async function warmUpMail(): Promise<void> {
  (await ops()).warmUp();
}

export const mailProcessors: ProcessorMap = {
  'mail.fetch': async (payload, { platform }) => (await ops()).fetchOp(platform, payload),
  'mail.purge': async (payload, { platform }) => (await ops()).purgeOp(platform, payload),
  'mail.code': async (payload, { platform }) => (await ops()).codeOp(platform, payload),
  'mail.send': async (payload, { platform, job }) => (await ops()).sendOp(platform, job.id!, payload),
};
