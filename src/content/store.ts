// Knex queries of content: upserts by url, keyset-paginated listing, trigram search, counters.
import { v7 as uuidv7 } from 'uuid';
import type { Knex } from 'knex';
import { escapeLike, isEmbedded, type Db } from '../db.js';
import { AppError, forbidden } from '../errors.js';
import { ROLE, USER_STATUS } from '../accounts/schema.js';
import { ownOrBelow } from '../accounts/store.js';
import type { ContentRow, ListQuery, NewItem, OrderBy } from './schema.js';

const SORT_COLUMN: Record<OrderBy, 'score' | 'created_at' | 'analyzed_at'> = {
  score: 'score',
  createdAt: 'created_at',
  analyzedAt: 'analyzed_at',
};

/** The expression the trigram index is built on (migration 002). */
const SEARCH_EXPR = `(coalesce(title, '') || E'\\x1f' || summary || E'\\x1f' || content)`;

// created_by is not among them: an item keeps the user who first stored it.
const UPDATED_ON_CONFLICT = ['source', 'title', 'summary', 'content', 'score', 'analyzed_by', 'analyzed_at', 'updated_at'];

/**
 * Who is writing: new items are recorded as theirs. An existing item is replaced or deleted by its owner; by an admin
 * when its owner is below the admin's role (SPEC §10's role rule) or it has none (a legacy item); by root always.
 * id null (a system job) owns nothing.
 */
export interface Caller {
  id: number | null;
  role: number;
}

export const callerOf = (user: { id: number; role: number }): Caller => ({ id: user.id, role: user.role });

/**
 * Which existing items the caller may replace or delete, as a where-callback on `content_items.created_by` (root:
 * every item, so no condition at all). `=` is false for null: legacy items match only the admins' `is null`.
 */
function mayChange(db: Db, caller: Caller): ((w: Knex.QueryBuilder) => Knex.QueryBuilder) | undefined {
  const column = 'content_items.created_by';
  if (caller.role >= ROLE.root) return undefined;
  // whereRaw, not where(col, value): knex turns `= null` into `is null`, which would match legacy items.
  if (caller.role < ROLE.admin || caller.id === null) return (w) => w.whereRaw('?? = ?', [column, caller.id]);
  const viewer = { id: caller.id, role: caller.role };
  return (w) => w.where(ownOrBelow(db, column, viewer)).orWhereNull(column);
}

/**
 * The caller of a job, from Postgres as it is now (not from the job's data): a job of a user who
 * was since deleted or disabled is refused for good.
 */
export async function loadCaller(db: Db, owner: number | null): Promise<Caller> {
  if (owner === null) return { id: null, role: 0 };
  const user = await db('users').where({ id: owner }).first<{ id: number; role: number; status: number } | undefined>('id', 'role', 'status');
  if (!user || user.status !== USER_STATUS.enabled)
    throw forbidden('The user who submitted this job is disabled or gone', { code: 'user_disabled', retriable: false });
  return callerOf(user);
}

function toRow(item: NewItem, now: Date, caller: Caller) {
  return {
    id: uuidv7(),
    source: item.source,
    url: item.url,
    url_key: item.urlKey,
    title: item.title,
    summary: item.summary,
    content: item.content,
    score: item.score,
    analyzed_by: item.analyzedBy,
    analyzed_at: item.analyzedAt ?? now,
    created_at: now,
    updated_at: now,
    created_by: caller.id,
  };
}

/**
 * Inserts or updates (by url, as urlKey compares them) in one statement. An existing item keeps its id, url as first
 * sent, created_at and created_by. Callers must not pass the same url twice (Postgres refuses to update a row twice in
 * one statement).
 * Undefined when the url is another user's item and the caller is not an admin (nothing written).
 */
export async function upsertItem(db: Db, item: NewItem, caller: Caller): Promise<(ContentRow & { inserted: boolean }) | undefined> {
  const [row] = await refusingBadValues(upsert(db, [item], caller).returning(['*', db.raw('(xmax = 0) as inserted')]));
  return row as (ContentRow & { inserted: boolean }) | undefined;
}

/**
 * The batch form: only ids and url keys come back (not a hundred contents the caller already has).
 * An item whose url is another user's (caller not an admin) is neither written nor returned.
 */
export async function upsertItems(db: Db, items: NewItem[], caller: Caller): Promise<{ id: string; url_key: string }[]> {
  if (items.length === 0) return [];
  return refusingBadValues(upsert(db, items, caller).returning(['id', 'url_key']));
}

function upsert(db: Db, items: NewItem[], caller: Caller) {
  const now = new Date();
  const q = db('content_items')
    .insert(items.map((i) => toRow(i, now, caller)))
    .onConflict('url_key')
    .merge(UPDATED_ON_CONFLICT);
  // The ownership check is part of the one statement: a conflicting row is updated only if the caller may change it.
  const allowed = mayChange(db, caller);
  return allowed ? q.where(allowed) : q;
}

/**
 * A value Postgres refuses (data exception, class 22; constraint violation, class 23) is the
 * input's fault: a 400 that is never retried, not a 500 that a job would retry five times.
 */
async function refusingBadValues<T>(query: PromiseLike<T>): Promise<T> {
  try {
    return await query;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^2[23]/.test(code)) {
      throw new AppError(400, `Invalid item: the database refused a value (SQLSTATE ${code})`, { code: 'invalid_value', retriable: false, cause: err });
    }
    throw err;
  }
}

export const getItem = (db: Db, id: string) => db<ContentRow>('content_items').where({ id }).first();

/** Whether the caller may replace or delete the item `id` (see mayChange): what the item's page offers them. */
export async function mayDelete(db: Db, id: string, caller: Caller): Promise<boolean> {
  const allowed = mayChange(db, caller);
  if (!allowed) return true;
  return !!(await db('content_items').where({ id }).where(allowed).first('id'));
}

/** 'forbidden': the item exists but is not the caller's to delete (see mayChange). */
export async function deleteItem(db: Db, id: string, caller: Caller): Promise<'deleted' | 'missing' | 'forbidden'> {
  const allowed = mayChange(db, caller);
  const q = db('content_items').where({ id });
  if (allowed) q.where(allowed);
  // RETURNING, not the affected-row count: PGlite's driver reports counts differently from pg.
  if ((await q.delete().returning('id')).length > 0) return 'deleted';
  if (!allowed) return 'missing';
  return (await db('content_items').where({ id }).first('id')) ? 'forbidden' : 'missing';
}

interface Cursor {
  orderBy: OrderBy;
  order: 'asc' | 'desc';
  value: number | string;
  id: string;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.orderBy, c.order, c.value, c.id])).toString('base64url');
}

export function decodeCursor(s: string, q: Pick<ListQuery, 'orderBy' | 'order'>): Cursor | undefined {
  try {
    const [orderBy, order, value, id] = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as unknown[];
    if (orderBy !== q.orderBy || order !== q.order || typeof id !== 'string' || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
    if (orderBy === 'score' ? typeof value !== 'number' : typeof value !== 'string' || Number.isNaN(Date.parse(value))) return undefined;
    return { orderBy, order, value: value as number | string, id } as Cursor;
  } catch {
    return undefined;
  }
}

export function sortValue(row: ContentRow, orderBy: OrderBy): number | string {
  const v = row[SORT_COLUMN[orderBy]];
  return v instanceof Date ? v.toISOString() : (v as number);
}

const hasFilters = (q: ListQuery) => q.minScore !== undefined || q.maxScore !== undefined || q.since || q.until || q.q;

/** One page, newest-first or as asked, plus whether another page follows; and the total. */
export async function listItems(db: Db, q: ListQuery, cursor: Cursor | undefined) {
  const col = SORT_COLUMN[q.orderBy];
  const filtered = () => {
    const b = db<ContentRow>('content_items');
    if (q.source) b.where('source', q.source);
    if (q.minScore !== undefined) b.where('score', '>=', q.minScore);
    if (q.maxScore !== undefined) b.where('score', '<=', q.maxScore);
    if (q.since) b.where('analyzed_at', '>=', q.since);
    if (q.until) b.where('analyzed_at', '<=', q.until);
    if (q.q) b.whereRaw(`${SEARCH_EXPR} ilike ?`, [`%${escapeLike(q.q)}%`]);
    return b;
  };
  const page = filtered();
  if (cursor) {
    const value = q.orderBy === 'score' ? cursor.value : new Date(cursor.value);
    page.whereRaw(`(??, id) ${q.order === 'desc' ? '<' : '>'} (?, ?)`, [col, value, cursor.id]);
  }
  page
    .orderBy([
      { column: col, order: q.order },
      { column: 'id', order: q.order },
    ])
    .limit(q.limit + 1);

  const total = hasFilters(q) ? boundedCount(db, filtered) : countFromStats(db, q.source).then((n) => ({ n, exact: true }));
  const [rows, count] = await Promise.all([page, total]);
  const more = rows.length > q.limit;
  return { rows: more ? rows.slice(0, q.limit) : rows, more, total: count.n, exact: count.exact };
}

/** Past this many (estimated) matches a count costs more than the page itself: the estimate is given. */
const EXACT_COUNT_MAX_ROWS = 20_000;
const COUNT_BUDGET_MS = 50;

/**
 * The exact number of matches for a filter that matches few enough rows to count quickly;
 * otherwise the planner's estimate (exact: false), so a broad filter never makes a page slow.
 * A count that still runs past COUNT_BUDGET_MS (a bad estimate) falls back to the estimate too.
 */
async function boundedCount(db: Db, filtered: () => Knex.QueryBuilder): Promise<{ n: number; exact: boolean }> {
  const exact = async (trx: Knex) => {
    const [r] = await filtered()
      .transacting(trx as Knex.Transaction)
      .count<{ n: number | string }[]>({ n: '*' });
    return { n: Number(r?.n ?? 0), exact: true };
  };
  if (isEmbedded(db)) return exact(db);
  const { sql, bindings } = filtered().select(db.raw('1')).toSQL();
  const plan = await db.raw(`explain (format json) ${sql}`, bindings as never[]);
  const estimate = { n: Math.round((plan.rows?.[0]?.['QUERY PLAN']?.[0]?.Plan?.['Plan Rows'] as number | undefined) ?? 0), exact: false };
  if (estimate.n > EXACT_COUNT_MAX_ROWS) return estimate;
  try {
    return await db.transaction(async (trx) => {
      await trx.raw(`set local statement_timeout = ${COUNT_BUDGET_MS}`);
      return exact(trx);
    });
  } catch (err) {
    if ((err as { code?: string }).code === '57014') return estimate; // canceled by statement_timeout
    throw err;
  }
}

async function countFromStats(db: Db, source?: string): Promise<number> {
  const b = db('content_stats');
  if (source) b.where({ source });
  const [r] = await b.sum<{ n: number | string | null }[]>({ n: 'count' });
  return Number(r?.n ?? 0);
}

export async function getStats(db: Db): Promise<{ total: number; bySource: Record<string, number> }> {
  const rows = await db('content_stats').select<{ source: string; count: number }[]>('source', 'count').orderBy('source');
  const bySource: Record<string, number> = {};
  let total = 0;
  for (const r of rows) {
    bySource[r.source] = Number(r.count);
    total += Number(r.count);
  }
  return { total, bySource };
}
