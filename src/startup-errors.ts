// The common ways a first start fails, each said in one line: what is wrong and what to set (src/process.ts prints it).
import type { Config } from './config.js';

/** A problem found while starting whose message is already the one line to show. */
export class StartupError extends Error {}

/** DATABASE_URL's host, port, database and user (never its password). */
function describeDatabase(url: string): { where: string; db: string; user: string } {
  try {
    const u = new URL(url);
    return {
      where: `${u.hostname}:${u.port || 5432}`,
      db: decodeURIComponent(u.pathname.slice(1)) || 'postgres',
      user: decodeURIComponent(u.username) || 'postgres',
    };
  } catch {
    return { where: 'DATABASE_URL', db: 'its database', user: 'its user' };
  }
}

/** Errors, the one given and those it wraps (Knex and Node wrap the driver's). */
function chain(err: unknown): { code?: string; message: string }[] {
  const out: { code?: string; message: string }[] = [];
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown } | undefined, n = 0; e && n < 5; n++) {
    out.push({ code: typeof e.code === 'string' ? e.code : undefined, message: String(e.message ?? e) });
    if (Array.isArray(e.errors)) for (const inner of e.errors) out.push(...chain(inner));
    e = e.cause as typeof e;
  }
  return out;
}

/** The one line for a start-up failure that has a known fix; undefined for anything else (then the error is logged whole). */
export function explainStartupError(err: unknown, config: Pick<Config, 'DATABASE_URL' | 'DATABASE_STATEMENT_TIMEOUT_MS'>): string | undefined {
  if (err instanceof StartupError) return err.message;
  const errors = chain(err);
  const has = (re: RegExp, code?: string) => errors.some((e) => re.test(e.message) && (code === undefined || e.code === code));
  const url = config.DATABASE_URL;
  if (!url) return undefined;
  const { where, db, user } = describeDatabase(url);
  const param = errors.map((e) => /unsupported startup parameter: (\w+)/.exec(e.message)?.[1]).find(Boolean);
  if (param === 'statement_timeout') {
    return (
      `the Postgres server at ${where} (PgBouncer, or another pooler) refused the statement_timeout Switchyard sends when it connects: ` +
      'set DATABASE_STATEMENT_TIMEOUT_MS=0, and set the timeout on the pooler instead (PgBouncer: connect_query; see docs/deployment-and-scale-out.md#pgbouncer)'
    );
  }
  if (param)
    return `the Postgres server at ${where} (a pooler) refused the startup parameter ${param}: let it pass (PgBouncer: ignore_startup_parameters = ${param})`;
  if (has(/permission denied for schema/, '42501')) {
    return (
      `the Postgres role "${user}" may not create tables in database "${db}" (permission denied for schema public); Switchyard makes its tables, and every day its log partitions: ` +
      `make the role the database's owner (ALTER DATABASE "${db}" OWNER TO "${user}") or GRANT CREATE ON SCHEMA public TO "${user}"`
    );
  }
  const extension = errors.map((e) => /permission denied to create extension "([^"]+)"/.exec(e.message)?.[1]).find(Boolean);
  if (extension) {
    return (
      `the Postgres role "${user}" may not create the extension ${extension} in database "${db}": ` +
      `create it once as a superuser (CREATE EXTENSION ${extension}; in "${db}"), or GRANT CREATE ON DATABASE "${db}" TO "${user}"`
    );
  }
  if (errors.some((e) => e.code === '3D000'))
    return `database "${db}" does not exist on the Postgres server at ${where}: create it (createdb "${db}") or fix DATABASE_URL`;
  if (errors.some((e) => e.code === 'ECONNREFUSED'))
    return `nothing answers at ${where}, the Postgres server of DATABASE_URL (connection refused): start Postgres, or set DATABASE_URL to one that runs`;
  return undefined;
}
