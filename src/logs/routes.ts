// HTTP routes of the logs: one-api's /api/log/* (list, search, stat, delete), /api/user/dashboard and the public /api/status.
import fs from 'node:fs';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Platform } from '../platform.js';
import type { Principal } from '../accounts/auth.js';
import { ROLE } from '../accounts/schema.js';
import { findUserByUsername } from '../accounts/store.js';
import { authorize } from '../http/auth.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { ApiRouter, envelopeOf, ok } from '../http/route.js';
import { badRequest, forbidden } from '../errors.js';
import { parse } from '../validate.js';
import { startLogMaintenance } from './maintenance.js';
import { DAY_SECONDS, dayStart } from './partitions.js';
import * as schema from './schema.js';
import * as store from './store.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const STARTED = Math.floor(Date.now() / 1000 - process.uptime());

/** package.json's version, from src/logs or dist/src/logs alike. */
function packageVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(fs.readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'switchyard' && pkg.version) return pkg.version;
    } catch {
      // not here
    }
  }
  return 'unknown';
}

export function logsRouter(p: Platform): ApiRouter {
  // Partitions ahead, retention and outage rows run in every process that serves the API.
  startLogMaintenance(p);
  const router = new ApiRouter('Logs');
  const admin = (ctx: Context) => authorize(ctx, p, ROLE.admin);
  const user = (ctx: Context) => authorize(ctx, p, ROLE.common);
  const rows = ok(
    `envelope with rows, newest first; X-Total-Count (counted up to ${schema.LIST_WINDOW}, then X-Total-Count-Capped: true)`,
    envelopeOf(z.array(schema.logView)),
  );
  const stat = ok('envelope with {quota, rpm, tpm}', envelopeOf(schema.statView));
  const found = ok(`envelope with at most ${schema.SEARCH_LIMIT} rows, newest first`, envelopeOf(z.array(schema.logView)));

  /**
   * Whose rows an admin's filters reach: root sees everyone; an admin sees users below their role,
   * themselves, the system's rows and deleted users'. Naming a user they may not see is a 403.
   */
  async function adminScope(principal: Principal, username: string | undefined): Promise<store.LogFilter> {
    const isRoot = principal.user.role >= ROLE.root;
    const hideRoleFrom = isRoot ? undefined : { role: principal.user.role, self: principal.user.id };
    if (username === undefined) return { hideRoleFrom };
    const target = await findUserByUsername(p.db, username);
    if (!target) return { username, hideRoleFrom };
    if (!isRoot && target.id !== principal.user.id && target.role >= principal.user.role) {
      throw forbidden('Cannot view the logs of a user whose role is equal to or above your own', { code: 'role_too_high' });
    }
    return { userId: target.id };
  }

  const filterOf = (q: z.output<typeof schema.selfFilterQuery>): store.LogFilter => ({
    type: q.type,
    tokenName: q.token_name,
    modelName: q.model_name,
    start: q.start_timestamp,
    end: q.end_timestamp,
  });

  async function answerList(ctx: Context, f: store.LogFilter, q: { p: number; page_size: number }) {
    const { rows: list, total, capped } = await store.listLogs(p.db, f, { offset: q.p * q.page_size, limit: q.page_size });
    envelopeList(ctx, list, total);
    if (capped) ctx.set('X-Total-Count-Capped', 'true');
  }

  // ---- listings ----------------------------------------------------------------------------

  router.endpoint(
    {
      method: 'get',
      path: '/api/log/',
      summary: "Everyone's log rows (admins: users below your role, yourself and the system's)",
      auth: 'admin',
      query: schema.adminListQuery,
      responses: { 200: rows, 400: 'invalid filter', 403: 'that user is not below your role' },
    },
    async (ctx) => {
      const principal = await admin(ctx);
      const q = parse(schema.adminListQuery, ctx.query);
      const scope = await adminScope(principal, q.username);
      await answerList(ctx, { ...scope, ...filterOf(q), channelId: q.channel }, q);
    },
  );

  router.endpoint(
    {
      method: 'get',
      path: '/api/log/self',
      summary: 'Your log rows',
      auth: 'user',
      query: schema.selfListQuery,
      responses: { 200: rows, 400: 'invalid filter' },
    },
    async (ctx) => {
      const { user: me } = await user(ctx);
      const q = parse(schema.selfListQuery, ctx.query);
      await answerList(ctx, { ...filterOf(q), userId: me.id }, q);
    },
  );

  // ---- search ------------------------------------------------------------------------------

  const searchSpec = (path: string, auth: 'admin' | 'user', summary: string) =>
    ({ method: 'get', path, summary, auth, query: schema.searchQuery, responses: { 200: found, 400: 'keyword too long, or the search too broad' } }) as const;
  router.endpoint(
    searchSpec('/api/log/search', 'admin', 'Search log rows: a type (1-5), a request id, a model, key or user name, or words of the content'),
    async (ctx) => {
      const principal = await admin(ctx);
      const q = parse(schema.searchQuery, ctx.query);
      const { hideRoleFrom } = await adminScope(principal, undefined);
      envelope(ctx, await store.searchLogs(p.db, { hideRoleFrom, start: q.start_timestamp, end: q.end_timestamp }, q.keyword, true));
    },
  );
  router.endpoint(searchSpec('/api/log/self/search', 'user', 'Search your log rows'), async (ctx) => {
    const { user: me } = await user(ctx);
    const q = parse(schema.searchQuery, ctx.query);
    envelope(ctx, await store.searchLogs(p.db, { userId: me.id, start: q.start_timestamp, end: q.end_timestamp }, q.keyword, false));
  });

  // ---- sums --------------------------------------------------------------------------------

  router.endpoint(
    {
      method: 'get',
      path: '/api/log/stat',
      summary: 'Quota used under the filters, and requests and tokens in the last minute (rpm, tpm)',
      auth: 'admin',
      query: schema.adminFilterQuery,
      responses: { 200: stat, 403: 'that user is not below your role' },
    },
    async (ctx) => {
      const principal = await admin(ctx);
      const q = parse(schema.adminFilterQuery, ctx.query);
      const scope = await adminScope(principal, q.username);
      envelope(ctx, await store.statLogs(p.db, { ...scope, ...filterOf(q), channelId: q.channel }));
    },
  );
  router.endpoint(
    {
      method: 'get',
      path: '/api/log/self/stat',
      summary: 'Your quota used under the filters, and your rpm and tpm',
      auth: 'user',
      query: schema.selfFilterQuery,
      responses: { 200: stat },
    },
    async (ctx) => {
      const { user: me } = await user(ctx);
      const q = parse(schema.selfFilterQuery, ctx.query);
      envelope(ctx, await store.statLogs(p.db, { ...filterOf(q), userId: me.id }));
    },
  );

  router.endpoint(
    {
      method: 'delete',
      path: '/api/log/',
      summary: 'Root only: delete every log row created before target_timestamp; answers how many went',
      auth: 'admin',
      query: schema.deleteQuery,
      responses: { 200: ok('envelope with the number of rows deleted', envelopeOf(z.number())), 400: 'no or a future target_timestamp', 403: 'not root' },
    },
    async (ctx) => {
      await authorize(ctx, p, ROLE.root);
      const { target_timestamp: target } = parse(schema.deleteQuery, ctx.query);
      if (target > nowSeconds()) throw badRequest('target_timestamp: must not be in the future', { param: 'target_timestamp' });
      envelope(ctx, await store.deleteLogsBefore(p.db, target));
    },
  );

  // ---- dashboard and status ----------------------------------------------------------------

  router.endpoint(
    {
      method: 'get',
      path: '/api/user/dashboard',
      summary: 'Your usage per day and model over the last 7 days (UTC days, today included)',
      auth: 'user',
      responses: { 200: ok('envelope with one-api dashboard rows', envelopeOf(z.array(schema.dashboardRow))) },
    },
    async (ctx) => {
      const { user: me } = await user(ctx);
      const today = dayStart(nowSeconds());
      envelope(ctx, await store.dashboard(p.db, me.id, today - 6 * DAY_SECONDS, today + DAY_SECONDS - 1));
    },
  );

  const version = packageVersion();
  router.endpoint(
    {
      method: 'get',
      path: '/api/status',
      tag: 'Status',
      summary: 'What one-api frontends read first: version, start time, features, the quota unit',
      auth: 'none',
      responses: { 200: ok('envelope with the status', envelopeOf(schema.statusView)) },
    },
    (ctx) => {
      envelope(ctx, {
        version,
        start_time: STARTED,
        system_name: 'Switchyard',
        register_enabled: false,
        email_verification: false,
        github_oauth: false,
        wechat_login: false,
        turnstile_check: false,
        quota_per_unit: 1,
        display_in_currency: false,
        quota_unit: 'quota',
        log_retention_days: p.config.LOG_RETENTION_DAYS,
        logo: '',
        footer_html: '',
        server_address: '',
        top_up_link: '',
        chat_link: '',
      } satisfies z.infer<typeof schema.statusView>);
    },
  );

  return router;
}
