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
  'mail.fetch': async (payload, { platform, owner }) => (await ops()).fetchOp(platform, owner, payload),
  'mail.purge': async (payload, { platform, owner }) => (await ops()).purgeOp(platform, owner, payload),
  'mail.code': async (payload, { platform, owner }) => (await ops()).codeOp(platform, owner, payload),
  'mail.send': async (payload, { platform, owner, job }) => (await ops()).sendOp(platform, owner, job.id!, payload),
};
