// HTTP routes of schedules: a job kind and its parameters run on a cron expression or every interval, as their owner.
// Each endpoint is declared (src/http/route.ts): auth and parsing are enforced before its handler runs. Errors are {error}.
import { z } from 'zod';
import { idParam } from '../accounts/schema.js';
import type { Platform } from '../platform.js';
import { ApiRouter, endpoint, ok, plainError } from '../http/route.js';
import * as s from './schema.js';
import * as service from './service.js';

const one = ok('the schedule', s.scheduleView);
const unknown = ok('no such schedule of yours', plainError);

const create = endpoint(
  {
    method: 'post',
    path: '/api/schedules',
    summary: `Schedule a job (kind: ${s.USER_KINDS.join(', ')}) on a cron expression in a time zone, or every interval_ms`,
    auth: 'user',
    idempotent: true,
    body: s.createBody,
    responses: {
      201: one,
      400: ok('invalid kind, params, cron, time zone, or an interval under SCHEDULE_MIN_INTERVAL_MS', plainError),
      404: ok('the mail account named is not yours', plainError),
      429: ok('SCHEDULES_PER_USER reached', plainError),
    },
  },
  async (ctx, { p, principal, body }) => {
    const created = await service.createSchedule(p, service.viewerOfUser(principal.user), body);
    ctx.status = 201;
    return created;
  },
);

const list = endpoint(
  {
    method: 'get',
    path: '/api/schedules',
    summary: 'Your schedules, by id (admins: the system schedules too), with their next run times; page with after=<last id>',
    auth: 'user',
    query: s.listQuery,
    responses: { 200: ok('schedules', z.array(s.scheduleView)), 400: ok('invalid page', plainError) },
  },
  (_ctx, { p, principal, query }) => service.listSchedules(p, service.viewerOfUser(principal.user), query),
);

const get = endpoint(
  { method: 'get', path: '/api/schedules/:id', summary: 'One schedule', auth: 'user', pathParams: { id: idParam }, responses: { 200: one, 404: unknown } },
  (_ctx, { p, principal, path }) => service.getSchedule(p, service.viewerOfUser(principal.user), path.id),
);

const runs = endpoint(
  {
    method: 'get',
    path: '/api/schedules/:id/runs',
    summary: "A schedule's last 100 ticks (a week at most): what each did, and how many times it ran",
    auth: 'user',
    pathParams: { id: idParam },
    responses: { 200: ok('runs, newest first', z.array(s.runView)), 404: unknown },
  },
  (_ctx, { p, principal, path }) => service.listRuns(p, service.viewerOfUser(principal.user), path.id),
);

const update = endpoint(
  {
    method: 'patch',
    path: '/api/schedules/:id',
    summary: 'Change, pause (enabled: false) or resume a schedule',
    auth: 'user',
    pathParams: { id: idParam },
    body: s.updateBody,
    responses: { 200: one, 400: ok('invalid', plainError), 404: unknown, 409: ok('a system schedule has no params', plainError) },
  },
  (_ctx, { p, principal, path, body }) => service.updateSchedule(p, service.viewerOfUser(principal.user), path.id, body),
);

const remove = endpoint(
  {
    method: 'delete',
    path: '/api/schedules/:id',
    summary: 'Delete a schedule (its next tick does not run)',
    auth: 'user',
    pathParams: { id: idParam },
    responses: { 200: '{success:true}', 404: unknown, 409: ok('system schedules are paused, not deleted', plainError) },
  },
  async (_ctx, { p, principal, path }) => {
    await service.deleteSchedule(p, service.viewerOfUser(principal.user), path.id);
    return { success: true };
  },
);

export const schedulesRouter = (p: Platform): ApiRouter => new ApiRouter('Schedules', p).add(create, list, get, runs, update, remove);
