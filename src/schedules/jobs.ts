// The schedules area's job: a schedule's tick (made by its BullMQ job scheduler), which enqueues the real job as the
// schedule's owner. The work is loaded on first use (tick.ts), so API processes never load it.
import { z } from 'zod';
import { defineJob } from '../jobs/define.js';
import type { TickResult } from './tick.js';
import { TICK_OPTIONS } from './service.js';

export const schedulesTick = defineJob<TickResult>()({
  name: 'schedules.tick',
  queue: 'schedules',
  payload: z.object({ scheduleId: z.number().int().positive() }),
  options: TICK_OPTIONS,
  run: async ({ scheduleId }, { platform, owner, job }) => (await import('./tick.js')).runTick(platform, scheduleId, owner, job),
});

/** Every job of the area: the composition root (src/job-kinds.ts) lists them. */
export const schedulesJobs = [schedulesTick] as const;
