// What the logs API does, apart from HTTP: whose rows a caller's filters reach, listings, searches and sums, deleting old
// rows, the dashboard, and the status one-api frontends read first.
import fs from 'node:fs';
import type { z } from 'zod';
import type { Principal } from '../accounts/auth.js';
import { ownQuotaMinRole, ROLE } from '../accounts/schema.js';
import { findUserByUsername } from '../accounts/store.js';
import type { Config } from '../config.js';
import type { Db } from '../db.js';
import { badRequest, forbidden } from '../errors.js';
import { DAY_SECONDS, dayStart } from './partitions.js';
import type * as schema from './schema.js';
import * as store from './store.js';

/** Who is asking: their id and role. */
export type Viewer = Pick<Principal['user'], 'id' | 'role'>;
type SelfFilter = z.output<typeof schema.selfFilterQuery>;
type AdminFilter = z.output<typeof schema.adminFilterQuery>;
type Paging = { p: number; page_size: number };
type SearchQuery = z.output<typeof schema.searchQuery>;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Whose rows an admin's filters reach: root sees everyone; an admin sees users below their role,
 * themselves, the system's rows and deleted users'. Naming a user they may not see is a 403.
 */
async function adminScope(db: Db, me: Viewer, username: string | undefined): Promise<store.LogFilter> {
  const isRoot = me.role >= ROLE.root;
  const hideRoleFrom = isRoot ? undefined : { role: me.role, self: me.id };
  if (username === undefined) return { hideRoleFrom };
  const target = await findUserByUsername(db, username);
  if (!target) return { username, hideRoleFrom };
  if (!isRoot && target.id !== me.id && target.role >= me.role) {
    throw forbidden('Cannot view the logs of a user whose role is equal to or above your own', { code: 'role_too_high' });
  }
  return { userId: target.id };
}

const filterOf = (q: SelfFilter): store.LogFilter => ({
  type: q.type,
  tokenName: q.token_name,
  modelName: q.model_name,
  start: q.start_timestamp,
  end: q.end_timestamp,
});

/** An admin's filters: whose rows (adminScope), what, when, and which channel. */
const adminFilter = async (db: Db, me: Viewer, q: AdminFilter): Promise<store.LogFilter> => ({
  ...(await adminScope(db, me, q.username)),
  ...filterOf(q),
  channelId: q.channel,
});
const ownFilter = (me: Viewer, q: SelfFilter): store.LogFilter => ({ ...filterOf(q), userId: me.id });

const page = (db: Db, f: store.LogFilter, q: Paging) => store.listLogs(db, f, { offset: q.p * q.page_size, limit: q.page_size });

/** A page of everyone's rows the viewer may see, newest first. */
export const listAll = async (db: Db, me: Viewer, q: AdminFilter & Paging) => page(db, await adminFilter(db, me, q), q);
/** A page of the viewer's own rows. */
export const listOwn = (db: Db, me: Viewer, q: SelfFilter & Paging) => page(db, ownFilter(me, q), q);

/** Rows the viewer may see that match the keyword (admins: names and request ids too). */
export async function searchAll(db: Db, me: Viewer, q: SearchQuery) {
  const { hideRoleFrom } = await adminScope(db, me, undefined);
  return store.searchLogs(db, { hideRoleFrom, start: q.start_timestamp, end: q.end_timestamp }, q.keyword, true);
}
export const searchOwn = (db: Db, me: Viewer, q: SearchQuery) =>
  store.searchLogs(db, { userId: me.id, start: q.start_timestamp, end: q.end_timestamp }, q.keyword, false);

/** Quota used under the filters, and the last minute's requests and tokens. */
export const statAll = async (db: Db, me: Viewer, q: AdminFilter) => store.statLogs(db, await adminFilter(db, me, q));
export const statOwn = (db: Db, me: Viewer, q: SelfFilter) => store.statLogs(db, ownFilter(me, q));

/** Deletes every row created before `target` (not a future time); answers how many went. */
export async function deleteBefore(db: Db, target: number): Promise<number> {
  if (target > nowSeconds()) throw badRequest('target_timestamp: must not be in the future', { param: 'target_timestamp' });
  return store.deleteLogsBefore(db, target);
}

/** The user's usage per day and model over the last 7 UTC days, today included. */
export function weekDashboard(db: Db, userId: number) {
  const today = dayStart(nowSeconds());
  return store.dashboard(db, userId, today - 6 * DAY_SECONDS, today + DAY_SECONDS - 1);
}

const STARTED = Math.floor(Date.now() / 1000 - process.uptime());
let version: string | undefined;

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

/** What one-api frontends read first: version, start time, features, the quota unit. */
export function status(config: Pick<Config, 'LOG_RETENTION_DAYS' | 'ADMIN_SELF_QUOTA'>): z.infer<typeof schema.statusView> {
  version ??= packageVersion();
  return {
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
    log_retention_days: config.LOG_RETENTION_DAYS,
    own_quota_min_role: ownQuotaMinRole(config),
    logo: '',
    footer_html: '',
    server_address: '',
    top_up_link: '',
    chat_link: '',
  };
}
