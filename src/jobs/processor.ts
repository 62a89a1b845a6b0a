// What a processor is: a function from a job's checked payload (and its context) to the job's result.
import type { Job } from 'bullmq';
import type { Logger } from '../log.js';
import type { Platform } from '../platform.js';
import type { JobName, ParsedPayloadOf, ResultOf } from './registry.js';
import type { JobEnvelope } from './wire.js';

export interface ProcessorContext {
  job: Job<JobEnvelope>;
  platform: Platform;
  log: Logger;
  /** Who submitted the job (user id), or null for system jobs. */
  owner: number | null;
  /** Fires when the worker is closing or the job is cancelled. */
  signal?: AbortSignal;
}

export type Processor<N extends JobName = JobName> = (payload: ParsedPayloadOf<N>, ctx: ProcessorContext) => Promise<ResultOf<N>>;
/** One area's processors, by job name. */
export type ProcessorMap = { [N in JobName]?: Processor<N> };
