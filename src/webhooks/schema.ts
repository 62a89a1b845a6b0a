// Webhooks' request bodies, rows and the views the API shows (Standard Webhooks 1.0: whsec_ secrets, v1 signatures).
import { z } from 'zod';
import { httpUrl } from '../validate.js';

/** The events an endpoint may ask for: a job of its owner ended; a batch of its owner (the Batch API) ended. */
export const EVENT_TYPES = ['job.completed', 'job.failed', 'job.cancelled', 'batch.completed', 'batch.failed', 'batch.expired', 'batch.cancelled'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const MAX_URL_LENGTH = 2_000;
export const MAX_DESCRIPTION_LENGTH = 200;
/** How much of a receiver's answer the delivery log keeps. */
export const RESPONSE_EXCERPT_BYTES = 1_024;
/** A rotated-out secret still signs for this long. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;

const eventTypes = z
  .array(z.enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` }), { error: 'must be an array of event types' })
  .min(1, 'must name at least one event type')
  .max(EVENT_TYPES.length * 4, 'too many event types')
  .transform((list) => [...new Set(list)]);

const description = z.string({ error: 'must be a string' }).max(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`);

export const createBody = z.strictObject({
  url: httpUrl(MAX_URL_LENGTH),
  event_types: eventTypes.default([...EVENT_TYPES]),
  enabled: z.boolean({ error: 'must be true or false' }).default(true),
  description: description.default(''),
});
export type CreateInput = z.output<typeof createBody>;

export const updateBody = z.strictObject({
  url: httpUrl(MAX_URL_LENGTH).optional(),
  event_types: eventTypes.optional(),
  enabled: z.boolean({ error: 'must be true or false' }).optional(),
  description: description.optional(),
});
export type UpdateInput = z.output<typeof updateBody>;

export const deliveriesQuery = z.object({
  limit: z.coerce.number({ error: 'must be 1-100' }).int('must be 1-100').min(1, 'must be 1-100').max(100, 'must be 1-100').default(20),
  before: z.coerce.number({ error: 'must be a delivery id' }).int('must be a delivery id').positive('must be a delivery id').optional(),
});

export interface EndpointRow {
  id: number;
  owner_id: number;
  url: string;
  event_types: string;
  enabled: boolean;
  description: string;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string | number;
  endpoint_id: number;
  event_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  ok: boolean;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
  created_at: Date;
}

export const endpointView = z.object({
  id: z.number(),
  url: z.string(),
  event_types: z.array(z.string()),
  enabled: z.boolean(),
  description: z.string(),
  disabled_reason: z.string().nullable().describe('why the endpoint was disabled by the platform (failing for days, 410 Gone); null otherwise'),
  failing_since: z.string().nullable().describe('since when no delivery succeeded; null when the last one did'),
  secret_rotating_until: z.string().nullable().describe('the previous secret still signs until then'),
  created_at: z.string(),
  updated_at: z.string(),
});
export type EndpointView = z.infer<typeof endpointView>;

/** An endpoint as created (or its secret rotated): with the signing secret, shown this once. */
export const endpointWithSecret = endpointView.extend({ secret: z.string().describe('whsec_ + base64: shown once') });

export const deliveryView = z.object({
  id: z.number(),
  event_id: z.string().describe('the webhook-id header'),
  event_type: z.string(),
  attempt: z.number(),
  status_code: z.number().nullable(),
  ok: z.boolean(),
  duration_ms: z.number(),
  response_excerpt: z.string().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
});
export type DeliveryView = z.infer<typeof deliveryView>;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function publicEndpoint(row: EndpointRow): EndpointView {
  const rotating = row.previous_secret_expires_at && new Date(row.previous_secret_expires_at).getTime() > Date.now();
  return {
    id: row.id,
    url: row.url,
    event_types: JSON.parse(row.event_types) as string[],
    enabled: row.enabled,
    description: row.description,
    disabled_reason: row.disabled_reason,
    failing_since: iso(row.failing_since),
    secret_rotating_until: rotating ? iso(row.previous_secret_expires_at) : null,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function publicDelivery(row: DeliveryRow): DeliveryView {
  return {
    id: Number(row.id),
    event_id: row.event_id,
    event_type: row.event_type,
    attempt: row.attempt,
    status_code: row.status_code,
    ok: row.ok,
    duration_ms: row.duration_ms,
    response_excerpt: row.response_excerpt,
    error: row.error,
    created_at: iso(row.created_at)!,
  };
}

export const NOT_FOUND = 'Webhook endpoint not found';

/** A delivery job's payload: which event to which endpoint (the body is read from Postgres, never carried in Redis). */
export const deliverPayload = z.object({
  eventId: z.string().regex(/^msg_[0-9a-f]{32}$/),
  endpointId: z.number().int().positive(),
  /** A redelivery asked for by the owner: sent even if an earlier attempt succeeded. */
  again: z.boolean().optional(),
});
