// The content area's jobs, declared (payload, result, options); src/content/processors.ts runs them.
import { defineJob } from '../jobs/define.js';
import { batchPayload, type BatchResult } from './schema.js';

/** Up to 100 items in one multi-row upsert; a batch over JOB_INLINE_PAYLOAD_BYTES travels through Postgres, not Redis. */
export const contentBatch = defineJob<BatchResult>()({ name: 'content.batch', queue: 'content', payload: batchPayload });
