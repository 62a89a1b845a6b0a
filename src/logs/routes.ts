// HTTP routes of the logs: one-api's /api/log/* (list, search, stat, delete), /api/user/dashboard and the public /api/status.
// Each endpoint is declared (src/http/route.ts): auth and parsing are enforced before its handler runs; the work is the
// service's (service.ts). The log upkeep is started with the app (src/http/app.ts), not here.
import type { Context } from 'koa';
import { z } from 'zod';
import type { Platform } from '../platform.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { ApiRouter, endpoint, envelopeOf, ok } from '../http/route.js';
import * as schema from './schema.js';
import * as logs from './service.js';

const rows = ok(
  `envelope with rows, newest first; X-Total-Count (counted up to ${schema.LIST_WINDOW}, then X-Total-Count-Capped: true)`,
  envelopeOf(z.array(schema.logView)),
);
const stat = ok('envelope with {quota, rpm, tpm}', envelopeOf(schema.statView));
const found = ok(`envelope with at most ${schema.SEARCH_LIMIT} rows, newest first`, envelopeOf(z.array(schema.logView)));

/** A page of rows in the envelope, with its count (and whether the count stopped at LIST_WINDOW). */
function answerPage(ctx: Context, { rows: list, total, capped }: { rows: unknown[]; total: number; capped: boolean }): void {
  envelopeList(ctx, list, total);
  if (capped) ctx.set('X-Total-Count-Capped', 'true');
}

// ---- listings ----------------------------------------------------------------------------

const listAll = endpoint(
  {
    method: 'get',
    path: '/api/log/',
    summary: "Everyone's log rows (admins: users below your role, yourself and the system's)",
    auth: 'admin',
    query: schema.adminListQuery,
    responses: { 200: rows, 400: 'invalid filter', 403: 'that user is not below your role' },
  },
  async (ctx, { p, principal, query }) => answerPage(ctx, await logs.listAll(p.db, principal.user, query)),
);

const listOwn = endpoint(
  {
    method: 'get',
    path: '/api/log/self',
    summary: 'Your log rows',
    auth: 'user',
    query: schema.selfListQuery,
    responses: { 200: rows, 400: 'invalid filter' },
  },
  async (ctx, { p, principal, query }) => answerPage(ctx, await logs.listOwn(p.db, principal.user, query)),
);

// ---- search ------------------------------------------------------------------------------

const searchSpec = <A extends 'admin' | 'user'>(path: string, auth: A, summary: string) =>
  ({ method: 'get', path, summary, auth, query: schema.searchQuery, responses: { 200: found, 400: 'keyword too long, or the search too broad' } }) as const;

const searchAll = endpoint(
  searchSpec('/api/log/search', 'admin', 'Search log rows: a type (1-5), a request id, a model, key or user name, or words of the content'),
  async (ctx, { p, principal, query }) => envelope(ctx, await logs.searchAll(p.db, principal.user, query)),
);

const searchOwn = endpoint(searchSpec('/api/log/self/search', 'user', 'Search your log rows'), async (ctx, { p, principal, query }) =>
  envelope(ctx, await logs.searchOwn(p.db, principal.user, query)),
);

// ---- sums and deletion -------------------------------------------------------------------

const statAll = endpoint(
  {
    method: 'get',
    path: '/api/log/stat',
    summary: 'Quota used under the filters, and requests and tokens in the last minute (rpm, tpm)',
    auth: 'admin',
    query: schema.adminFilterQuery,
    responses: { 200: stat, 403: 'that user is not below your role' },
  },
  async (ctx, { p, principal, query }) => envelope(ctx, await logs.statAll(p.db, principal.user, query)),
);

const statOwn = endpoint(
  {
    method: 'get',
    path: '/api/log/self/stat',
    summary: 'Your quota used under the filters, and your rpm and tpm',
    auth: 'user',
    query: schema.selfFilterQuery,
    responses: { 200: stat },
  },
  async (ctx, { p, principal, query }) => envelope(ctx, await logs.statOwn(p.db, principal.user, query)),
);

const removeOld = endpoint(
  {
    method: 'delete',
    path: '/api/log/',
    summary: 'Root only: delete every log row created before target_timestamp; answers how many went',
    auth: 'root',
    query: schema.deleteQuery,
    responses: { 200: ok('envelope with the number of rows deleted', envelopeOf(z.number())), 400: 'no or a future target_timestamp', 403: 'not root' },
  },
  async (ctx, { p, query }) => envelope(ctx, await logs.deleteBefore(p.db, query.target_timestamp)),
);

// ---- dashboard and status ----------------------------------------------------------------

const dashboard = endpoint(
  {
    method: 'get',
    path: '/api/user/dashboard',
    summary: 'Your usage per day and model over the last 7 days (UTC days, today included)',
    auth: 'user',
    responses: { 200: ok('envelope with one-api dashboard rows', envelopeOf(z.array(schema.dashboardRow))) },
  },
  async (ctx, { p, principal }) => envelope(ctx, await logs.weekDashboard(p.db, principal.user.id)),
);

const status = endpoint(
  {
    method: 'get',
    path: '/api/status',
    tag: 'Status',
    summary: 'What one-api frontends read first: version, start time, features, the quota unit',
    auth: 'none',
    responses: { 200: ok('envelope with the status', envelopeOf(schema.statusView)) },
  },
  (ctx, { p }) => envelope(ctx, logs.status(p.config)),
);

export const logsRouter = (p: Platform): ApiRouter =>
  new ApiRouter('Logs', p).add(listAll, listOwn, searchAll, searchOwn, statAll, statOwn, removeOld, dashboard, status);
