// What a webhooks.deliver job runs (worker code): one attempt to POST an event to an endpoint, signed as Standard
// Webhooks 1.0 says, through the outbound policy, within WEBHOOK_TIMEOUT_MS, at most WEBHOOK_ENDPOINT_CONCURRENCY at once
// per endpoint; logged, and failed so that BullMQ retries it (5xx, 408, 429, timeouts, connection errors) or not (4xx).
import crypto from 'node:crypto';
import type { ClientRequest } from 'node:http';
import { DelayedError } from 'bullmq';
import { AppError } from '../errors.js';
import type { JobContext } from '../jobs/define.js';
import { OwnerSlots } from '../jobs/fairness.js';
import { OutboundRefusedError, type OutboundPolicy, outboundPolicy, policyRequest } from '../outbound.js';
import { RESPONSE_EXCERPT_BYTES, type EndpointRow } from './schema.js';
import * as store from './store.js';
import { inSpan } from '../telemetry.js';

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` keyed with the base64-decoded part of the secret after whsec_. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface Answer {
  status: number;
  retryAfter?: string;
  excerpt: string;
}

/**
 * POSTs `body` to `url` through the outbound policy: the host is checked before the request and the socket connects
 * only to an address the policy's lookup vetted after DNS. Redirects are not followed (3xx is an answer like any other).
 * Keeps the first RESPONSE_EXCERPT_BYTES of the answer. Rejects with OutboundRefusedError, a network error, or a
 * TimeoutError after `timeoutMs` for the whole exchange.
 */
export function post(policy: OutboundPolicy, url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return reject(new OutboundRefusedError(target.hostname, 'not an http(s) URL'));
    let request: ClientRequest;
    try {
      request = policyRequest(policy, target, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } });
    } catch (err) {
      return reject(err);
    }
    const timer = setTimeout(() => request.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })), timeoutMs);
    request.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      res.on('data', (c: Buffer) => {
        if (kept < RESPONSE_EXCERPT_BYTES) chunks.push(c.subarray(0, RESPONSE_EXCERPT_BYTES - kept));
        kept += c.length;
      });
      res.on('error', () => {});
      res.on('close', () => {
        clearTimeout(timer);
        if (!res.complete) reject(Object.assign(new Error('the connection closed mid-answer'), { code: 'ECONNRESET' }));
      });
      res.on('end', () => {
        clearTimeout(timer);
        const retryAfter = res.headers['retry-after'];
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
          excerpt: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    request.end(body);
  });
}

/** Seconds a Retry-After header asks for (delta-seconds or an HTTP date), if it is one. */
export function retryAfterSeconds(value: string | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Why an attempt failed, in words the owner reads in the delivery log (never an address the DNS answered). */
function describe(err: unknown): string {
  if (err instanceof OutboundRefusedError) return `refused by the outbound policy: ${err.reason}`;
  const e = err as NodeJS.ErrnoException;
  if (e.message?.startsWith('no answer within')) return e.message;
  // The code only: a system error's message names the address connected to.
  return `connection failed (${e.code ?? 'no code'})`;
}

/** How long a worker waits before it asks for one of an endpoint's slots again (jittered). */
const SLOT_RETRY_MS = 200;

export interface DeliveryResult {
  ok: boolean;
  status?: number;
  skipped?: string;
}

/** One attempt of a delivery job. */
export async function runDelivery(payload: { eventId: string; endpointId: number; again?: boolean }, ctx: JobContext): Promise<DeliveryResult> {
  const { platform: p, job, token } = ctx;
  const endpoint = await store.endpointById(p.db, payload.endpointId);
  if (!endpoint?.enabled) return { ok: false, skipped: 'the endpoint was deleted or disabled' };
  // A job end announced again after its delivery job was trimmed: delivered already is delivered.
  if (!payload.again && (await store.delivered(p.db, payload.eventId, payload.endpointId))) return { ok: true, skipped: 'delivered already' };
  const event = await store.getEvent(p.db, payload.eventId);
  if (!event) return { ok: false, skipped: 'the event is past its retention' };
  const slots = new OwnerSlots(p.redis, p.keys, p.config.WEBHOOK_TIMEOUT_MS + 15_000);
  if (token && !(await slots.acquire('webhook-endpoint', endpoint.id, job.id!, p.config.WEBHOOK_ENDPOINT_CONCURRENCY))) {
    await job.moveToDelayed(Date.now() + SLOT_RETRY_MS * (0.5 + Math.random()), token);
    throw new DelayedError();
  }
  // Traces on: the attempt is a span (endpoint id, event type, attempt; the body and the secrets are not recorded),
  // holding the POST's client span (src/outbound.ts).
  const attributes = {
    'switchyard.webhook.endpoint_id': endpoint.id,
    'switchyard.webhook.event_type': event.type,
    'switchyard.webhook.attempt': job.attemptsMade + 1,
  };
  try {
    return await inSpan('webhook.deliver', attributes, () => attempt(ctx, endpoint, event));
  } finally {
    if (token) await slots.release('webhook-endpoint', endpoint.id, job.id!).catch(() => {});
  }
}

async function attempt(ctx: JobContext, endpoint: EndpointRow, event: { id: string; type: string; body: string }): Promise<DeliveryResult> {
  const { platform: p, job } = ctx;
  const timestamp = Math.floor(Date.now() / 1000);
  const signatures = store.signingSecrets(p.secrets, endpoint).map((secret) => signature(secret, event.id, timestamp, event.body));
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Switchyard-Webhooks/1.0',
    'webhook-id': event.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures.join(' '),
  };
  const started = performance.now();
  let answer: Answer | undefined;
  let failure: unknown;
  try {
    answer = await post(outboundPolicy(p.config.OUTBOUND_ALLOWLIST), endpoint.url, headers, event.body, p.config.WEBHOOK_TIMEOUT_MS);
  } catch (err) {
    failure = err;
  }
  const ok = answer !== undefined && answer.status >= 200 && answer.status < 300;
  const error = failure !== undefined ? describe(failure) : ok ? null : `HTTP ${answer!.status}`;
  const gone = answer?.status === 410;
  const { disabled } = await store.recordAttempt(
    p.db,
    {
      endpoint_id: endpoint.id,
      event_id: event.id,
      event_type: event.type,
      attempt: job.attemptsMade + 1,
      status_code: answer?.status ?? null,
      ok,
      duration_ms: Math.round(performance.now() - started),
      response_excerpt: answer ? answer.excerpt : null,
      error,
    },
    { disableAfterSeconds: p.config.WEBHOOK_DISABLE_AFTER_SECONDS, disable: gone ? 'The endpoint answered 410 Gone' : undefined },
  );
  if (ok) return { ok: true, status: answer!.status };
  const status = answer?.status;
  // Retried: no answer (timeout, connection), 3xx, 408, 429 and 5xx. Not: other 4xx, the outbound policy, a disabled endpoint.
  const retriable =
    !disabled && !(failure instanceof OutboundRefusedError) && (status === undefined || status < 400 || status === 408 || status === 429 || status >= 500);
  const wait = retryAfterSeconds(answer?.retryAfter);
  throw new AppError(502, `Webhook delivery failed: ${error}`, {
    code: 'webhook_delivery_failed',
    retriable,
    headers: wait !== undefined ? { 'Retry-After': String(wait) } : undefined,
  });
}
