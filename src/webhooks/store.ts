// Knex queries of webhooks: endpoints (secrets sealed with SECRET_KEY), events and the delivery log.
import type { Db } from '../db.js';
import { AppError } from '../errors.js';
import type { Secrets } from '../secrets.js';
import type { CreateInput, DeliveryRow, EndpointRow, UpdateInput } from './schema.js';

/** The advisory lock class of "one user's webhook endpoints" (the second key is the user's id): "SwWH". */
const ENDPOINTS_LOCK_CLASS = 0x5377_5748;

/** Adds an endpoint for its owner, unless they keep `max` already (429): one writer of a user's endpoints at a time. */
export async function createEndpoint(db: Db, secrets: Secrets, ownerId: number, input: CreateInput, secret: string, max: number): Promise<EndpointRow> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?, ?)', [ENDPOINTS_LOCK_CLASS, ownerId]);
    const [{ n } = { n: 0 }] = await trx('webhook_endpoints').where({ owner_id: ownerId }).count<{ n: string | number }[]>({ n: '*' });
    if (Number(n) >= max) {
      throw new AppError(429, `Webhook endpoint limit reached: you have ${n}, the most one user may keep (WEBHOOK_ENDPOINTS_PER_USER). Delete one first`, {
        code: 'webhook_endpoints_limit',
      });
    }
    const [row] = await trx('webhook_endpoints')
      .insert({
        owner_id: ownerId,
        url: input.url,
        event_types: JSON.stringify(input.event_types),
        enabled: input.enabled,
        description: input.description,
        secret_enc: secrets.encrypt(secret),
      })
      .returning('*');
    return row as EndpointRow;
  });
}

export async function listEndpoints(db: Db, ownerId: number): Promise<EndpointRow[]> {
  return db('webhook_endpoints').where({ owner_id: ownerId }).orderBy('id');
}

export async function getEndpoint(db: Db, ownerId: number, id: number): Promise<EndpointRow | undefined> {
  return db('webhook_endpoints').where({ owner_id: ownerId, id }).first();
}

export async function endpointById(db: Db, id: number): Promise<EndpointRow | undefined> {
  return db('webhook_endpoints').where({ id }).first();
}

/** Changes an endpoint; enabling it again clears why it was disabled and its failing streak. */
export async function updateEndpoint(db: Db, ownerId: number, id: number, input: UpdateInput): Promise<EndpointRow | undefined> {
  const change: Record<string, unknown> = { updated_at: db.fn.now() };
  if (input.url !== undefined) change.url = input.url;
  if (input.event_types !== undefined) change.event_types = JSON.stringify(input.event_types);
  if (input.description !== undefined) change.description = input.description;
  if (input.enabled !== undefined) change.enabled = input.enabled;
  if (input.enabled === true) Object.assign(change, { disabled_reason: null, failing_since: null });
  const [row] = await db('webhook_endpoints').where({ owner_id: ownerId, id }).update(change).returning('*');
  return row as EndpointRow | undefined;
}

export async function deleteEndpoint(db: Db, ownerId: number, id: number): Promise<boolean> {
  return (await db('webhook_endpoints').where({ owner_id: ownerId, id }).delete()) > 0;
}

/** A new secret; the one it replaces keeps signing until `previousUntil`. */
export async function rotateSecret(
  db: Db,
  secrets: Secrets,
  ownerId: number,
  id: number,
  secret: string,
  previousUntil: Date,
): Promise<EndpointRow | undefined> {
  const [row] = await db('webhook_endpoints')
    .where({ owner_id: ownerId, id })
    .update({
      previous_secret_enc: db.ref('secret_enc'),
      previous_secret_expires_at: previousUntil,
      secret_enc: secrets.encrypt(secret),
      updated_at: db.fn.now(),
    })
    .returning('*');
  return row as EndpointRow | undefined;
}

/** The secrets that sign a delivery now: the current one, and the previous one while it overlaps. */
export function signingSecrets(secrets: Secrets, row: EndpointRow, now = Date.now()): string[] {
  const out = [secrets.decrypt(row.secret_enc)];
  if (row.previous_secret_enc && row.previous_secret_expires_at && new Date(row.previous_secret_expires_at).getTime() > now)
    out.push(secrets.decrypt(row.previous_secret_enc));
  return out;
}

/** The owner's enabled endpoints that take this event type. */
export async function subscribedEndpoints(db: Db, ownerId: number, type: string): Promise<number[]> {
  const rows: { id: number; event_types: string }[] = await db('webhook_endpoints').where({ owner_id: ownerId, enabled: true }).select('id', 'event_types');
  return rows.filter((r) => (JSON.parse(r.event_types) as string[]).includes(type)).map((r) => r.id);
}

/** Records an event once (a job end announced again finds it there). */
export async function saveEvent(db: Db, event: { id: string; owner_id: number; type: string; body: string }): Promise<void> {
  await db('webhook_events').insert(event).onConflict('id').ignore();
}

export async function getEvent(db: Db, id: string): Promise<{ id: string; owner_id: number; type: string; body: string } | undefined> {
  return db('webhook_events').where({ id }).first();
}

/** Whether an attempt to send this event to this endpoint succeeded already. */
export async function delivered(db: Db, eventId: string, endpointId: number): Promise<boolean> {
  return (await db('webhook_deliveries').where({ event_id: eventId, endpoint_id: endpointId, ok: true }).first('id')) !== undefined;
}

/**
 * Logs an attempt and keeps the endpoint's failing streak in the same statement: a success ends it; a failure starts it
 * (or, past `disableAfterSeconds` of failures, or when `disable` says so, disables the endpoint with `reason`).
 */
export async function recordAttempt(
  db: Db,
  attempt: Omit<DeliveryRow, 'id' | 'created_at'>,
  opts: { disableAfterSeconds: number; disable?: string },
): Promise<{ disabled: boolean }> {
  return db.transaction(async (trx) => {
    await trx('webhook_deliveries').insert(attempt);
    if (attempt.ok) {
      await trx('webhook_endpoints').where({ id: attempt.endpoint_id }).whereNotNull('failing_since').update({ failing_since: null });
      return { disabled: false };
    }
    const [row] = await trx('webhook_endpoints')
      .where({ id: attempt.endpoint_id })
      .update({ failing_since: trx.raw('coalesce(failing_since, now())') })
      .returning(['failing_since', 'enabled']);
    if (!row?.enabled) return { disabled: false };
    const since = new Date(row.failing_since as Date);
    const reason =
      opts.disable ??
      (Date.now() - since.getTime() >= opts.disableAfterSeconds * 1000
        ? `No delivery succeeded since ${since.toISOString()} (WEBHOOK_DISABLE_AFTER_SECONDS); the last: ${attempt.error ?? `HTTP ${attempt.status_code}`}`
        : undefined);
    if (!reason) return { disabled: false };
    await trx('webhook_endpoints')
      .where({ id: attempt.endpoint_id })
      .update({ enabled: false, disabled_reason: reason.slice(0, 500), updated_at: trx.fn.now() });
    return { disabled: true };
  });
}

/** The endpoint's delivery log, newest first, by keyset (`before` a delivery id). */
export async function listDeliveries(db: Db, endpointId: number, page: { limit: number; before?: number }): Promise<DeliveryRow[]> {
  const q = db('webhook_deliveries').where({ endpoint_id: endpointId }).orderBy('id', 'desc').limit(page.limit);
  if (page.before !== undefined) q.where('id', '<', page.before);
  return q;
}

export async function getDelivery(db: Db, endpointId: number, id: number): Promise<DeliveryRow | undefined> {
  return db('webhook_deliveries').where({ endpoint_id: endpointId, id }).first();
}

/** Events (and with them their delivery log) older than `days`. */
export async function pruneEvents(db: Db, days: number): Promise<number> {
  return db('webhook_events')
    .where('created_at', '<', db.raw(`now() - make_interval(days => ?)`, [days]))
    .delete();
}
