// A batch's end as a webhook event, shaped as OpenAI's own (batch.completed, batch.failed, batch.expired,
// batch.cancelled: the batch's id only), sent as every event is (src/webhooks: Standard Webhooks signatures).
import crypto from 'node:crypto';
import type { Platform } from '../platform.js';
import { announceEvent } from '../webhooks/service.js';
import type { BatchRow } from './schema.js';

const ENDS = ['completed', 'failed', 'expired', 'cancelled'] as const;

export async function batchEvent(p: Platform, b: BatchRow): Promise<void> {
  const end = ENDS.find((s) => s === b.status);
  if (!end) return;
  // One event per batch end, whoever announces it (a finalizing run again adds nothing).
  // The delivery's webhook-id is msg_…, as every event's; the event's own id (OpenAI's) is evt_ with the same digest.
  const digest = crypto.createHash('sha256').update(`${b.id}\n${end}`).digest('hex').slice(0, 32);
  const at = b[`${end}_at`] ?? new Date();
  const body = JSON.stringify({ id: `evt_${digest}`, object: 'event', type: `batch.${end}`, created_at: Math.floor(at.getTime() / 1000), data: { id: b.id } });
  try {
    await announceEvent(p, { id: `msg_${digest}`, ownerId: b.owner_id, type: `batch.${end}`, body });
  } catch (err) {
    p.log.warn({ err, batch: b.id }, 'could not announce the end of a batch');
  }
}
