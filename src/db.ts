// Knex factory: pg when DATABASE_URL is set, embedded PGlite under DATA_DIR otherwise; migrations for both.
import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { migrationSource } from '../migrations/index.js';

export type Db = Knex;

// Return BIGINT (int8) columns as JS numbers: quotas and counters stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// NUMERIC as numbers too (scores are small decimals).
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

/** Knex's own warnings (lost connections, failed acquires) go to the JSON log, not the console. */
function knexLog(log?: Logger) {
  const to = (level: 'warn' | 'error' | 'debug') => (message: unknown) => log?.[level]({ knex: String(message) }, 'knex');
  return { warn: to('warn'), error: to('error'), deprecate: to('warn'), debug: to('debug') };
}

export async function createDb(config: Config, log?: Logger): Promise<Db> {
  if (config.DATABASE_URL) {
    return knexFactory({
      log: knexLog(log),
      client: 'pg',
      connection: {
        connectionString: config.DATABASE_URL,
        // Under 2 s, so that a server that takes connections but never answers is a 503 within the 2 s SPEC §2 asks.
        connectionTimeoutMillis: 1_500,
        // A startup parameter: PgBouncer in transaction mode refuses it, so 0 sends none (set it there instead).
        ...(config.DATABASE_STATEMENT_TIMEOUT_MS > 0 ? { statement_timeout: config.DATABASE_STATEMENT_TIMEOUT_MS } : {}),
        application_name: 'switchyard',
      },
      pool: { min: 0, max: config.DATABASE_POOL_MAX, idleTimeoutMillis: 30_000 },
      acquireConnectionTimeout: 5_000,
    });
  }
  // PGlite runs inside this process; its module (and WASM) is loaded only when used.
  const [{ PGlite }, { pg_trgm }, { default: ClientPGLite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('knex-pglite'),
  ]);
  const dir = path.join(config.DATA_DIR, 'pgdata');
  fs.mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir, {
    extensions: { pg_trgm },
    // Same value types as node-postgres above: int8 and numeric as numbers.
    parsers: { 20: (v: string) => Number(v), 1700: (v: string) => Number(v) },
  });
  return knexFactory({ client: ClientPGLite as unknown as typeof knexFactory.Client, connection: { pglite } as never, log: knexLog(log) });
}

/** Resolves when the database answers a trivial query (readiness probes). */
export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}

export function isEmbedded(db: Db): boolean {
  return (db.client.config as { client?: unknown }).client !== 'pg';
}

const MIGRATION_LOCK_KEY = 0x5377_5944; // "SwYD": one advisory lock for every Switchyard migrator

/**
 * Runs pending migrations. Concurrent starts against one Postgres serialise on an advisory lock
 * (knex's own lock table fails the loser instead of waiting, and races on first creation).
 *
 * The lock is transaction-level, so it works behind PgBouncer in transaction mode as well as
 * directly: a session lock taken through PgBouncer would stay on whichever server connection ran
 * it, and its unlock could land on another. The winner holds its lock in an open transaction
 * while the migrations run on other connections, and commits to release it. The others try, and
 * while they wait hold no connection (a waiter blocked inside a transaction would pin a server
 * connection, and enough of them could leave the winner none to migrate with).
 */
export async function migrateLatest(db: Db): Promise<string[]> {
  const run = async () => {
    const [, done] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
    return done;
  };
  if (isEmbedded(db)) return run();
  for (;;) {
    const outcome = await db.transaction(async (trx) => {
      const { rows } = await trx.raw('select pg_try_advisory_xact_lock(?) as locked', [MIGRATION_LOCK_KEY]);
      return rows[0].locked ? { done: await run() } : undefined;
    });
    if (outcome) return outcome.done;
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 150));
  }
}

export async function migrateRollbackAll(db: Db): Promise<void> {
  await db.migrate.rollback({ migrationSource }, true);
}

/** Postgres and PGlite errors that mean "the database is not reachable right now". */
export function isDbUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string; name?: string } | null;
  if (!e) return false;
  const code = e.code ?? '';
  if (
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'ENOTFOUND',
      'EAI_AGAIN',
      '57P01',
      '57P02',
      '57P03',
      '08000',
      '08003',
      '08006',
      '08001',
      '08004',
      '53300',
    ].includes(code)
  ) {
    return true;
  }
  const msg = e.message ?? '';
  return (
    e.name === 'KnexTimeoutError' ||
    /Connection terminated|connection timeout|timeout expired|Client has encountered a connection error|terminating connection|the database system is (starting up|shutting down)|Timeout acquiring a connection/i.test(
      msg,
    )
  );
}

/**
 * Whether a failed statement was rolled back by Postgres for something one of its rows may have caused, so
 * that running its parts one at a time is safe and may let the others through (src/batcher.ts retryAlone):
 * data exceptions (class 22), constraint violations (23), refused SQL (42), an exception raised by a
 * function or trigger (P0), a deadlock or serialization failure (40). Anything else — a lost connection,
 * a timeout, an error in this process after the statement answered — may have committed or may fail
 * again for all of them alike: never retried.
 */
export function rolledBackByItsData(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|42|P0|40)/.test(code);
}

/** A user's text as a literal inside a LIKE pattern: %, _ and backslash lose their meaning. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * A SQL expression that makes the statement's transaction commit without waiting for its WAL flush
 * (synchronous_commit off, for that transaction only, so it also holds behind a transaction-pooling
 * PgBouncer). Put it in a CTE or WHERE of a single statement. What the statement wrote still commits
 * all together or not at all, and a crash of a Switchyard process loses nothing committed; only a crash
 * of Postgres itself can lose its last fraction of a second of such commits. Used where that is harmless
 * (quota charges, lost in the users' favour; cache rows) and waiting is not: a charge waiting for its
 * flush kept a busy key's user row locked through one disk write per call, ~70 priced calls/s for one
 * key (npm run bench).
 */
export const NO_FLUSH = "set_config('synchronous_commit', 'off', true)";

const positional = new Map<string, string>();

/**
 * A statement run on a pooled connection without Knex's query builder and runner — about 120 µs of CPU
 * less a statement (measured: 209 against 91 µs for a one-parameter query), which mattered for the few
 * statements every priced call makes (src/accounts/ledger.ts, src/embeddings/calls.ts). `sql` takes `?`
 * placeholders, as db.raw does, and must have no other `?`. Embedded PGlite goes through db.raw.
 */
export async function rawFast<R>(db: Db, sql: string, bindings: unknown[]): Promise<{ rows: R[] }> {
  if (isEmbedded(db)) return db.raw<{ rows: R[] }>(sql, bindings as Knex.RawBinding[]);
  let text = positional.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    positional.set(sql, text);
  }
  const conn = (await db.client.acquireConnection()) as pg.PoolClient;
  try {
    return await conn.query<R & pg.QueryResultRow>(text, bindings);
  } finally {
    await db.client.releaseConnection(conn);
  }
}
