// Knex queries of the log table: writing rows, listing, counting, sums, the dashboard, search, and its day partitions.
import type { Db } from '../db.js';
import { AppError, serviceUnavailable } from '../errors.js';
import { createPartitionSql, DAY_SECONDS, DAYS_AHEAD, dayStart, daysBetween, partitionDay, partitionName } from './partitions.js';
import { LIST_WINDOW, LOG_TYPE, type LogEntry, type LogView, SEARCH_LIMIT } from './schema.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const INT_MAX = 2_147_483_647;
/** Postgres refuses NUL in text: a row must never fail (and take its charge down with it) for one. */
const clean = (s: string | undefined | null, max: number) => (s ?? '').replaceAll('\0', '').slice(0, max);
const clampInt = (n: number | undefined) => Math.max(0, Math.min(INT_MAX, Math.round(n ?? 0)));

/** A row's columns as plain values; `username` is null when the entry leaves it to the user's current name. */
export function logRecord(e: LogEntry) {
  return {
    created_at: e.createdAt ?? nowSeconds(),
    type: e.type,
    user_id: e.userId,
    username: e.username !== undefined ? clean(e.username, 64) : null,
    token_id: e.tokenId ?? null,
    token_name: clean(e.tokenName, 100),
    model_name: clean(e.modelName, 200),
    channel_id: e.channelId ?? null,
    quota: Math.round(e.quota ?? 0),
    prompt_tokens: clampInt(e.promptTokens),
    completion_tokens: clampInt(e.completionTokens),
    elapsed_time: clampInt(e.elapsedMs),
    request_count: Math.max(1, clampInt(e.requestCount ?? 1)),
    cache_hit: e.cacheHit ?? false,
    status_code: e.statusCode ?? null,
    request_id: e.requestId ? clean(e.requestId, 128) : null,
    content: clean(e.content, 2_000),
  };
}

function toRow(db: Db, e: LogEntry) {
  const row = logRecord(e);
  // The user's current name unless the caller knows it (it is kept on the row, as one-api does, so renames don't rewrite history).
  return { ...row, username: row.username ?? db.raw(`coalesce((select username from users where id = ?), '')`, [e.userId]) };
}

/** Writes rows; pass a transaction to make them part of it (a charge and its consume row commit together or not at all). */
export async function insertLogs(db: Db, entries: LogEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db('logs').insert(entries.map((e) => toRow(db, e)));
}

// ---------------------------------------------------------------------------------------------
// reading

export interface LogFilter {
  /** Only this user's rows. */
  userId?: number;
  /** Rows carrying this username (used when no current user has it: a deleted user's rows). */
  username?: string;
  type?: number;
  tokenName?: string;
  modelName?: string;
  channelId?: number;
  /** created_at >= start and <= end (Unix seconds, one-api's inclusive range); 0 or undefined: open. */
  start?: number;
  end?: number;
  /** Admins below root: rows of users of this role or higher (but `self`) are not theirs to see. */
  hideRoleFrom?: { role: number; self: number };
}

type Query = ReturnType<Db>;

function applyFilter(db: Db, q: Query, f: LogFilter): Query {
  if (f.userId !== undefined) q.where('user_id', f.userId);
  if (f.username !== undefined) q.where('username', f.username);
  if (f.type) q.where('type', f.type);
  if (f.tokenName !== undefined) q.where('token_name', f.tokenName);
  if (f.modelName !== undefined) q.where('model_name', f.modelName);
  if (f.channelId) q.where('channel_id', f.channelId);
  if (f.start) q.where('created_at', '>=', f.start);
  if (f.end) q.where('created_at', '<=', f.end);
  if (f.hideRoleFrom) {
    const { role, self } = f.hideRoleFrom;
    q.whereNotIn('user_id', db('users').select('id').where('role', '>=', role).whereNot('id', self));
  }
  return q;
}

const VIEW_COLUMNS = [
  'id',
  'created_at',
  'type',
  'content',
  'username',
  'token_name',
  'model_name',
  'quota',
  'prompt_tokens',
  'completion_tokens',
  'channel_id',
  'elapsed_time',
  'request_id',
  'request_count',
  'cache_hit',
  'status_code',
];

type StoredRow = Omit<LogView, 'channel' | 'request_id'> & { channel_id: number | null; request_id: string | null };

const toView = (r: StoredRow): LogView => ({
  id: r.id,
  created_at: r.created_at,
  type: r.type,
  content: r.content,
  username: r.username,
  token_name: r.token_name,
  model_name: r.model_name,
  quota: r.quota,
  prompt_tokens: r.prompt_tokens,
  completion_tokens: r.completion_tokens,
  channel: r.channel_id ?? 0,
  elapsed_time: r.elapsed_time,
  request_id: r.request_id ?? '',
  request_count: r.request_count,
  cache_hit: r.cache_hit,
  status_code: r.status_code,
});

const newestFirst = [
  { column: 'created_at', order: 'desc' as const },
  { column: 'id', order: 'desc' as const },
];

/**
 * A page of rows, newest first, and how many match: exact up to LIST_WINDOW, where counting
 * stops (`capped`), so a user with millions of rows costs what one with ten thousand does.
 */
export async function listLogs(db: Db, f: LogFilter, page: { offset: number; limit: number }): Promise<{ rows: LogView[]; total: number; capped: boolean }> {
  const rows = applyFilter(db, db('logs').select(VIEW_COLUMNS), f).orderBy(newestFirst).offset(page.offset).limit(page.limit);
  const window = applyFilter(db, db('logs').select(db.raw('1')), f).limit(LIST_WINDOW + 1);
  const [found, counted] = await Promise.all([rows, db.from(window.as('w')).count<{ n: number | string }[]>({ n: '*' })]);
  const n = Number(counted[0]?.n ?? 0);
  return { rows: (found as StoredRow[]).map(toView), total: Math.min(n, LIST_WINDOW), capped: n > LIST_WINDOW };
}

/** one-api's stat: quota summed over the filter (consume rows unless a type is given), and rpm/tpm over the last 60 s. */
export async function statLogs(db: Db, f: LogFilter, now = nowSeconds()): Promise<{ quota: number; rpm: number; tpm: number }> {
  const total = applyFilter(db, db('logs'), { ...f, type: f.type || LOG_TYPE.consume }).select(db.raw('coalesce(sum(quota), 0)::bigint as quota'));
  const recent = applyFilter(db, db('logs'), { ...f, type: LOG_TYPE.consume, start: now - 60, end: undefined }).select(
    db.raw('coalesce(sum(request_count), 0)::bigint as rpm, coalesce(sum(prompt_tokens + completion_tokens), 0)::bigint as tpm'),
  );
  const [[a], [b]] = (await Promise.all([total, recent])) as [{ quota: number }[], { rpm: number; tpm: number }[]];
  return { quota: Number(a?.quota ?? 0), rpm: Number(b?.rpm ?? 0), tpm: Number(b?.tpm ?? 0) };
}

/** A user's consume rows per UTC day and model between two times (one-api's dashboard). */
export async function dashboard(db: Db, userId: number, from: number, to: number) {
  const rows = (await db('logs')
    .where({ user_id: userId, type: LOG_TYPE.consume })
    .whereBetween('created_at', [from, to])
    .select(
      db.raw('created_at / ? as day', [DAY_SECONDS]),
      'model_name',
      db.raw('sum(request_count)::bigint as requests'),
      db.raw('sum(quota)::bigint as quota'),
      db.raw('sum(prompt_tokens)::bigint as prompt_tokens'),
      db.raw('sum(completion_tokens)::bigint as completion_tokens'),
    )
    .groupByRaw('1, 2')
    .orderByRaw('1, 2')) as { day: number; model_name: string; requests: number; quota: number; prompt_tokens: number; completion_tokens: number }[];
  return rows.map((r) => ({
    Day: new Date(Number(r.day) * DAY_SECONDS * 1000).toISOString().slice(0, 10),
    ModelName: r.model_name,
    RequestCount: Number(r.requests),
    Quota: Number(r.quota),
    PromptTokens: Number(r.prompt_tokens),
    CompletionTokens: Number(r.completion_tokens),
  }));
}

/** How long one search may run before it is refused as too broad. */
const SEARCH_TIMEOUT_MS = 5_000;

/**
 * The newest rows (at most SEARCH_LIMIT) matching a keyword: a type number (1-5), a request id, a
 * model, key name or (admins) username exactly, or a piece of the content. Scans the rows in the
 * scope, newest first, so it has a time budget: past it the caller is asked to narrow the range.
 */
export async function searchLogs(
  db: Db,
  scope: Pick<LogFilter, 'userId' | 'hideRoleFrom' | 'start' | 'end'>,
  keyword: string | undefined,
  byUsername: boolean,
): Promise<LogView[]> {
  const q = applyFilter(db, db('logs').select(VIEW_COLUMNS), scope).orderBy(newestFirst).limit(SEARCH_LIMIT);
  if (keyword) {
    const like = `%${keyword.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q.where((w) => {
      if (/^[1-5]$/.test(keyword)) w.orWhere('type', Number(keyword));
      w.orWhere('model_name', keyword).orWhere('token_name', keyword).orWhere('request_id', keyword).orWhereILike('content', like);
      if (byUsername) w.orWhere('username', keyword);
    });
  }
  try {
    return await db.transaction(async (trx) => {
      await trx.raw(`set local statement_timeout = ${SEARCH_TIMEOUT_MS}`);
      return ((await q.transacting(trx)) as StoredRow[]).map(toView);
    });
  } catch (err) {
    if ((err as { code?: string }).code === '57014') {
      throw new AppError(400, `The search ran past ${SEARCH_TIMEOUT_MS / 1000} s: narrow it with start_timestamp and end_timestamp, or a longer keyword`, {
        code: 'search_too_broad',
      });
    }
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// partitions: one per UTC day, made ahead; retention drops whole days

const LOG_LOCK_KEY = 0x5377_4c47; // "SwLG": partition changes of every Switchyard process take turns

/** Runs `fn` in a transaction holding the log-maintenance lock; DDL waits at most 5 s for a lock (then fails, to be retried). */
async function withLogLock<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [LOG_LOCK_KEY]);
    // A long reader must not make every writer queue behind our DROP or CREATE.
    await trx.raw("set local lock_timeout = '5s'");
    return fn(trx);
  });
}

/** The day partitions of the log table, oldest first (the default partition is not among them). */
export async function listPartitions(db: Db): Promise<{ name: string; day: number }[]> {
  const res = await db.raw(`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'logs'::regclass`);
  const names = ((res.rows ?? res) as { name: string }[]).map((r) => r.name);
  return names
    .map((name) => ({ name, day: partitionDay(name) }))
    .filter((p): p is { name: string; day: number } => p.day !== undefined)
    .sort((a, b) => a.day - b.day);
}

const countOf = async (db: Db, sql: string, bindings: number[] = []) => {
  const res = await db.raw(sql, bindings);
  return Number(((res.rows ?? res) as { n: number | string }[])[0]?.n ?? 0);
};

/**
 * Makes the partitions of yesterday to DAYS_AHEAD days ahead that do not exist yet. Rows that
 * landed in the default partition for such a day (a process without its maintenance) move into it.
 */
export async function ensurePartitions(db: Db, now = nowSeconds()): Promise<string[]> {
  const have = new Set((await listPartitions(db)).map((p) => p.day));
  const missing = daysBetween(now - DAY_SECONDS, now + DAYS_AHEAD * DAY_SECONDS).filter((d) => !have.has(d));
  const created: string[] = [];
  for (const day of missing) {
    await withLogLock(db, async (trx) => {
      if ((await listPartitions(trx)).some((p) => p.day === day)) return;
      const range = [day, day + DAY_SECONDS];
      const strays = await countOf(trx, 'select count(*) as n from logs_default where created_at >= ? and created_at < ?', range);
      if (strays > 0) {
        await trx.raw('create temp table logs_moving on commit drop as select * from logs_default where created_at >= ? and created_at < ?', range);
        await trx.raw('delete from logs_default where created_at >= ? and created_at < ?', range);
      }
      await trx.raw(createPartitionSql(day));
      if (strays > 0) await trx.raw('insert into logs select * from logs_moving');
      created.push(partitionName(day));
    });
  }
  return created;
}

/**
 * Retention: drops every day partition wholly older than `days` days (a row is kept at least that
 * long, at most a day more), and deletes the few such rows in the default partition.
 */
export async function dropExpiredPartitions(db: Db, days: number, now = nowSeconds()): Promise<string[]> {
  const cutoff = dayStart(now - days * DAY_SECONDS);
  const expired = (await listPartitions(db)).filter((p) => p.day + DAY_SECONDS <= cutoff);
  const dropped: string[] = [];
  for (const p of expired) {
    await withLogLock(db, async (trx) => {
      if (!(await listPartitions(trx)).some((x) => x.name === p.name)) return;
      await trx.raw(`drop table ${p.name}`);
      dropped.push(p.name);
    });
  }
  await db.raw('delete from logs_default where created_at < ?', [cutoff]);
  return dropped;
}

/**
 * DELETE /api/log/: every row created before `target`. Days wholly before it are dropped as
 * partitions (counted first), the day it falls in and the default partition are deleted from.
 */
export async function deleteLogsBefore(db: Db, target: number): Promise<number> {
  try {
    return await deleteBefore(db, target);
  } catch (err) {
    // lock_not_available: a long reader held the table past lock_timeout; nothing was deleted.
    if ((err as { code?: string }).code === '55P03')
      throw serviceUnavailable('The log table is busy (a long query holds it); try again shortly', { code: 'logs_busy' });
    throw err;
  }
}

async function deleteBefore(db: Db, target: number): Promise<number> {
  return withLogLock(db, async (trx) => {
    let n = 0;
    for (const p of await listPartitions(trx)) {
      if (p.day + DAY_SECONDS <= target) {
        n += await countOf(trx, `select count(*) as n from ${p.name}`);
        await trx.raw(`drop table ${p.name}`);
      } else if (p.day < target) {
        n += await countOf(trx, `with d as (delete from ${p.name} where created_at < ? returning 1) select count(*) as n from d`, [target]);
      }
    }
    n += await countOf(trx, 'with d as (delete from logs_default where created_at < ? returning 1) select count(*) as n from d', [target]);
    return n;
  });
}
