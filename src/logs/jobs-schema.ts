// The jobs API's parameters and views (GET /api/jobs, POST /api/jobs/ping): a listing's filters and a job in it.
import { z } from 'zod';
import { queueNames, type QueueName } from '../config.js';
import { badRequest } from '../errors.js';
import { jobStates, jobView } from '../jobs/client.js';

/** A job in a listing: its status without the result (GET /api/jobs/{id} has that). */
export const jobSummary = jobView.omit({ result: true }).extend({ statusUrl: z.string() });
export type JobSummary = z.infer<typeof jobSummary>;

export const jobListQuery = z.object({
  limit: z.coerce.number({ error: 'must be 1-100' }).int('must be 1-100').min(1, 'must be 1-100').max(100, 'must be 1-100').default(20),
  cursor: z
    .string()
    .regex(/^\d{1,18}$/, 'must be the nextCursor of a previous page')
    .optional(),
  queue: z.enum(queueNames as readonly QueueName[] as [QueueName, ...QueueName[]], { error: `must be one of ${queueNames.join(', ')}` }).optional(),
  state: z.enum(jobStates, { error: `must be one of ${jobStates.join(', ')}` }).optional(),
  name: z.string().max(100, 'must be at most 100 characters').optional(),
  user: z.coerce.number({ error: 'must be a user id' }).int('must be a user id').positive('must be a user id').max(2_147_483_647).optional(),
});
export type JobListQuery = z.output<typeof jobListQuery>;

/** ?queue= of POST /api/jobs/ping: content when not given; anything but a queue's name is a 400 naming it. */
export function parsePingQuery(raw: Record<string, unknown>): { queue: QueueName } {
  const queue = String(raw.queue ?? 'content');
  if (!(queueNames as readonly string[]).includes(queue)) throw badRequest(`queue: must be one of ${queueNames.join(', ')}`, { param: 'queue' });
  return { queue: queue as QueueName };
}
