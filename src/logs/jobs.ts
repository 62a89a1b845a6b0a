// The logs area's job: the hourly upkeep of the log table, run by the system schedule logs.maintain (src/schedules).
import { z } from 'zod';
import { defineJob } from '../jobs/define.js';

export const logsMaintain = defineJob<{ created: string[]; dropped: string[] }>()({
  name: 'logs.maintain',
  queue: 'schedules',
  payload: z.object({}),
  options: { attempts: 3, backoff: { type: 'exponential', delay: 5_000, jitter: 0.5 }, removeOnComplete: { age: 86_400, count: 100 } },
  run: async (_payload, { platform }) => (await import('./maintenance.js')).maintainLogs(platform),
});

/** Every job of the area: the composition root (src/job-kinds.ts) lists them. */
export const logsJobs = [logsMaintain] as const;
