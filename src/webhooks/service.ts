// What webhooks do, apart from HTTP: a user's endpoints (their own only), secrets shown once, the delivery log and
// redelivery; and the events a job's end makes, each enqueued once per endpoint (the job id derived from both).
import crypto from 'node:crypto';
import type { JobsOptions } from 'bullmq';
import type { Principal } from '../accounts/auth.js';
import type { Config } from '../config.js';
import { badRequest, notFound } from '../errors.js';
import { DECLARED_BACKOFF, type JobEnd } from '../jobs/registry.js';
import { refusedHostField } from '../outbound.js';
import type { Platform } from '../platform.js';
import * as s from './schema.js';
import * as store from './store.js';

type Viewer = Pick<Principal['user'], 'id'>;

/** whsec_ and the base64 of 32 random bytes (Standard Webhooks: 24-64 bytes). */
export const newSecret = () => `whsec_${crypto.randomBytes(32).toString('base64')}`;

/** The URL's host, checked against the outbound policy now (and again at every delivery, when connecting). */
async function vetUrl(p: Platform, url: string): Promise<void> {
  const refused = await refusedHostField(p.config.OUTBOUND_ALLOWLIST, { url: new URL(url).hostname });
  if (refused) throw badRequest(refused.message, { param: 'url' });
}

async function own(p: Platform, viewer: Viewer, id: number): Promise<s.EndpointRow> {
  const row = await store.getEndpoint(p.db, viewer.id, id);
  if (!row) throw notFound(s.NOT_FOUND);
  return row;
}

export async function createEndpoint(p: Platform, viewer: Viewer, input: s.CreateInput) {
  await vetUrl(p, input.url);
  const secret = newSecret();
  const row = await store.createEndpoint(p.db, p.secrets, viewer.id, input, secret, p.config.WEBHOOK_ENDPOINTS_PER_USER);
  return { ...s.publicEndpoint(row), secret };
}

export async function listEndpoints(p: Platform, viewer: Viewer) {
  return (await store.listEndpoints(p.db, viewer.id)).map(s.publicEndpoint);
}

export async function getEndpoint(p: Platform, viewer: Viewer, id: number) {
  return s.publicEndpoint(await own(p, viewer, id));
}

export async function updateEndpoint(p: Platform, viewer: Viewer, id: number, input: s.UpdateInput) {
  if (input.url !== undefined) await vetUrl(p, input.url);
  const row = await store.updateEndpoint(p.db, viewer.id, id, input);
  if (!row) throw notFound(s.NOT_FOUND);
  return s.publicEndpoint(row);
}

export async function deleteEndpoint(p: Platform, viewer: Viewer, id: number) {
  if (!(await store.deleteEndpoint(p.db, viewer.id, id))) throw notFound(s.NOT_FOUND);
  return { success: true as const };
}

/** A new secret, shown this once; the previous one signs too for the next 24 hours. */
export async function rotateSecret(p: Platform, viewer: Viewer, id: number) {
  const secret = newSecret();
  const row = await store.rotateSecret(p.db, p.secrets, viewer.id, id, secret, new Date(Date.now() + s.SECRET_OVERLAP_MS));
  if (!row) throw notFound(s.NOT_FOUND);
  return { ...s.publicEndpoint(row), secret };
}

export async function listDeliveries(p: Platform, viewer: Viewer, id: number, page: { limit: number; before?: number }) {
  await own(p, viewer, id);
  return (await store.listDeliveries(p.db, id, page)).map(s.publicDelivery);
}

/** Sends a logged delivery's event to its endpoint again, with the same webhook-id (a new job: its own attempts). */
export async function redeliver(p: Platform, viewer: Viewer, id: number, deliveryId: number) {
  const endpoint = await own(p, viewer, id);
  const delivery = await store.getDelivery(p.db, id, deliveryId);
  if (!delivery) throw notFound('Delivery not found');
  if (!(await store.getEvent(p.db, delivery.event_id))) throw notFound('The event is past its retention (WEBHOOK_LOG_RETENTION_DAYS)');
  const jobId = await p.jobs.enqueue(
    'webhooks.deliver',
    { eventId: delivery.event_id, endpointId: endpoint.id, again: true },
    { owner: viewer.id, jobId: `${deliveryJobId(delivery.event_id, endpoint.id)}-${crypto.randomUUID()}`, options: deliveryOptions(p.config) },
  );
  return { jobId, event_id: delivery.event_id, statusUrl: `/api/jobs/${jobId}` };
}

// ---- events ---------------------------------------------------------------------------------------------------------

/** The webhook-id of a job's end: derived from the job and its final state, so the same end is the same event. */
export const eventIdOf = (jobId: string, state: string) => `msg_${crypto.createHash('sha256').update(`${jobId}\n${state}`).digest('hex').slice(0, 32)}`;

/** The delivery job of an event to an endpoint: enqueued twice, it is one job. */
export const deliveryJobId = (eventId: string, endpointId: number) => `webhooks-${eventId}-${endpointId}`;

/** Delivery jobs: their own attempts and declared backoff; kept a day once done, so that an end announced again within it adds nothing. */
export function deliveryOptions(config: Config): JobsOptions {
  return {
    attempts: config.WEBHOOK_ATTEMPTS,
    backoff: { type: DECLARED_BACKOFF },
    removeOnComplete: { age: 86_400, count: 100_000 },
    removeOnFail: { age: Math.max(config.JOB_KEEP_FAILED_SECONDS, 86_400), count: 100_000 },
  };
}

/**
 * The delay before a delivery's next attempt: WEBHOOK_BACKOFF_MS × 4^(attempts made − 1), at most WEBHOOK_BACKOFF_MAX_MS,
 * ± 25 % (15 s, 1 min, 4 min, 16 min, 64 min, 4.3 h, then 6 h: nine attempts over about 24 h by default); or the
 * Retry-After the receiver sent (429, 503) when it asks for longer, up to a day.
 */
const MAX_RETRY_AFTER_MS = 86_400_000;

export function retryDelay(attemptsMade: number, failure: { headers?: Record<string, string> }, config: Config): number {
  const base = Math.min(config.WEBHOOK_BACKOFF_MS * 4 ** Math.max(0, attemptsMade - 1), config.WEBHOOK_BACKOFF_MAX_MS);
  const jittered = base * (0.75 + Math.random() * 0.5);
  const asked = Number(failure.headers?.['Retry-After']);
  return Number.isFinite(asked) && asked > 0 ? Math.max(Math.min(asked * 1000, MAX_RETRY_AFTER_MS), jittered) : jittered;
}

/** The event body of a job's end: as GET /api/jobs/{id} shows the job (result, error, or both for a cancelled one), the result left out past WEBHOOK_INLINE_RESULT_BYTES. */
export function eventBody(end: JobEnd, config: Config): string {
  const url = `/api/jobs/${end.id}`;
  const data: Record<string, unknown> = { id: end.id, kind: end.name, state: end.state, url };
  // A cancelled job shows what it had done (its result) with its error, as GET does.
  if (end.state !== 'failed') {
    const json = JSON.stringify(end.result ?? null);
    if (Buffer.byteLength(json) <= config.WEBHOOK_INLINE_RESULT_BYTES) data.result = end.result ?? null;
  }
  if (end.state !== 'completed') data.error = end.error;
  return JSON.stringify({ type: `job.${end.state}`, timestamp: end.finishedAt, data });
}

/**
 * A job ended: its owner's endpoints that take the event each get a delivery job. Recorded first (once: the id is the
 * job's and its state's), then enqueued under an id derived from the event and the endpoint, so an end announced again
 * (a worker killed before BullMQ recorded it) adds no delivery. The webhooks queue's own jobs and jobs answered in the
 * call (embeddings, pings) announce nothing.
 */
export async function jobEnded(p: Platform, end: JobEnd): Promise<void> {
  if (end.owner === null || end.queue === 'webhooks' || p.jobs.kind(end.name).reply === 'direct') return;
  await announceEvent(p, { id: eventIdOf(end.id, end.state), ownerId: end.owner, type: `job.${end.state}`, body: eventBody(end, p.config) });
}

/**
 * An event of another area (a batch's end): recorded once under its id, and a delivery job for each of the owner's
 * endpoints that take its type, as for a job's end. `body` is the event as sent.
 */
export async function announceEvent(p: Platform, event: { id: string; ownerId: number; type: s.EventType; body: string }): Promise<void> {
  const endpoints = await store.subscribedEndpoints(p.db, event.ownerId, event.type);
  if (endpoints.length === 0) return;
  await store.saveEvent(p.db, { id: event.id, owner_id: event.ownerId, type: event.type, body: event.body });
  const options = deliveryOptions(p.config);
  await Promise.all(
    endpoints.map((endpointId) =>
      p.jobs.enqueue('webhooks.deliver', { eventId: event.id, endpointId }, { owner: event.ownerId, jobId: deliveryJobId(event.id, endpointId), options }),
    ),
  );
}

/** Events and their delivery log past WEBHOOK_LOG_RETENTION_DAYS. */
export const pruneEvents = (p: Platform) => store.pruneEvents(p.db, p.config.WEBHOOK_LOG_RETENTION_DAYS);
