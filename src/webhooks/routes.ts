// HTTP routes of webhooks: a user's endpoints (their own only), the secret shown once, rotation, the delivery log and
// redelivery. Errors are {error}. Each endpoint is declared (src/http/route.ts): auth and parsing are enforced first.
import { z } from 'zod';
import type { Platform } from '../platform.js';
import { ApiRouter, endpoint, ok, plainError } from '../http/route.js';
import { idParam } from '../accounts/schema.js';
import * as s from './schema.js';
import * as service from './service.js';

const notFound = ok(s.NOT_FOUND, plainError);
const ids = { id: idParam };

const create = endpoint(
  {
    method: 'post',
    path: '/api/webhooks',
    summary: "Register an endpoint for your jobs' events (job.completed, job.failed, job.cancelled); its whsec_ secret is shown only here",
    auth: 'user',
    idempotent: true,
    body: s.createBody,
    responses: {
      201: ok('the endpoint, with its signing secret (shown once)', s.endpointWithSecret),
      400: ok('invalid url (not http(s), too long, refused by the outbound policy), event type or description', plainError),
      429: ok('you keep WEBHOOK_ENDPOINTS_PER_USER endpoints already', plainError),
    },
  },
  async (ctx, { p, principal, body }) => {
    const created = await service.createEndpoint(p, principal.user, body);
    ctx.status = 201;
    return created;
  },
);

const list = endpoint(
  { method: 'get', path: '/api/webhooks', summary: 'Your endpoints', auth: 'user', responses: { 200: ok('endpoints', z.array(s.endpointView)) } },
  (_ctx, { p, principal }) => service.listEndpoints(p, principal.user),
);

const one = endpoint(
  {
    method: 'get',
    path: '/api/webhooks/:id',
    summary: 'One of your endpoints (disabled_reason says why the platform disabled it)',
    auth: 'user',
    pathParams: ids,
    responses: { 200: ok('the endpoint', s.endpointView), 404: notFound },
  },
  (_ctx, { p, principal, path }) => service.getEndpoint(p, principal.user, path.id),
);

const update = endpoint(
  {
    method: 'patch',
    path: '/api/webhooks/:id',
    summary: 'Change an endpoint: url, event_types, enabled (enabling clears disabled_reason), description',
    auth: 'user',
    pathParams: ids,
    body: s.updateBody,
    responses: { 200: ok('the endpoint', s.endpointView), 400: ok('invalid field', plainError), 404: notFound },
  },
  (_ctx, { p, principal, path, body }) => service.updateEndpoint(p, principal.user, path.id, body),
);

const remove = endpoint(
  {
    method: 'delete',
    path: '/api/webhooks/:id',
    summary: 'Delete an endpoint (and its delivery log); deliveries not yet made are dropped',
    auth: 'user',
    pathParams: ids,
    responses: { 200: ok('{success:true}', z.object({ success: z.literal(true) })), 404: notFound },
  },
  (_ctx, { p, principal, path }) => service.deleteEndpoint(p, principal.user, path.id),
);

const rotate = endpoint(
  {
    method: 'post',
    path: '/api/webhooks/:id/rotate-secret',
    summary: 'A new signing secret, shown only here; the previous one also signs for 24 h (two v1 signatures)',
    auth: 'user',
    idempotent: true,
    pathParams: ids,
    responses: { 200: ok('the endpoint, with its new secret (shown once)', s.endpointWithSecret), 404: notFound },
  },
  (_ctx, { p, principal, path }) => service.rotateSecret(p, principal.user, path.id),
);

const deliveries = endpoint(
  {
    method: 'get',
    path: '/api/webhooks/:id/deliveries',
    summary: "The delivery log of an endpoint, newest first: each attempt's status, duration and the start of the answer (pass the last id as before)",
    auth: 'user',
    pathParams: ids,
    query: s.deliveriesQuery,
    responses: { 200: ok('attempts', z.array(s.deliveryView)), 400: ok('invalid parameter', plainError), 404: notFound },
  },
  (_ctx, { p, principal, path, query }) => service.listDeliveries(p, principal.user, path.id, query),
);

const redeliver = endpoint(
  {
    method: 'post',
    path: '/api/webhooks/:id/deliveries/:deliveryId/redeliver',
    summary: "Send a logged delivery's event to the endpoint again, with the same webhook-id",
    auth: 'user',
    idempotent: true,
    pathParams: { ...ids, deliveryId: idParam },
    responses: {
      202: ok('the delivery job', z.object({ jobId: z.string(), event_id: z.string(), statusUrl: z.string() })),
      404: ok('no such endpoint or delivery, or the event is past its retention', plainError),
    },
  },
  async (ctx, { p, principal, path }) => {
    const queued = await service.redeliver(p, principal.user, path.id, path.deliveryId);
    ctx.status = 202;
    return queued;
  },
);

export const webhooksRouter = (p: Platform): ApiRouter => new ApiRouter('Webhooks', p).add(create, list, one, update, remove, rotate, deliveries, redeliver);
