// A private PgBouncer (Debian's 1.18) in transaction pooling mode on a free loopback port, in front of the test Postgres.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ADMIN_URL } from './services.js';
import { stopWatched } from './spawn.js';
import { freePort } from './redis-server.js';

const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

export interface PgBouncer {
  port: number;
  /** A postgres:// URL of `database` through PgBouncer (user postgres, trust). */
  url(database: string): string;
  /** One row per database of the admin console's SHOW STATS (transactions and queries it relayed). */
  stats(): Promise<{ database: string; total_xact_count: number; total_query_count: number }[]>;
  /** PgBouncer's log so far. */
  logs(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** Server connections per (database, user) pair: default_pool_size. */
  poolSize?: number;
  /**
   * Runs on every new server connection. The default sets the statement timeout there, which is where it goes
   * behind PgBouncer in transaction mode (a client may not send it at connect time).
   */
  connectQuery?: string;
}

/** PgBouncer refuses to run as root: it runs as the postgres system user (Debian's Postgres package makes it). */
function postgresUser(): { uid: number; gid: number } {
  const entry = execFileSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' }).trim().split(':');
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

// The shell holds PgBouncer: when its stdin closes (stop(), or the test process dying, even by SIGKILL) it stops it
// and removes the temp dir. $1 = pgbouncer binary, $2 = its ini, $3 = the temp dir.
const WATCHDOG = `
"$1" "$2" </dev/null &
pid=$!
read _
kill -INT "$pid" 2>/dev/null
wait "$pid"
rm -rf "$3"
`;

export async function startPgBouncer(opts: PgBouncerOptions = {}): Promise<PgBouncer> {
  const admin = new URL(ADMIN_URL);
  const user = postgresUser();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-pgbouncer-'));
  fs.chownSync(dir, user.uid, user.gid);
  const port = await freePort();
  const connectQuery = opts.connectQuery ?? 'SET statement_timeout = 30000';
  const write = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text);
    fs.chownSync(path.join(dir, name), user.uid, user.gid);
  };
  write('userlist.txt', '"postgres" ""\n');
  write(
    'pgbouncer.ini',
    `[databases]
; Any database name goes to the database of that name on the test Postgres.
* = host=${admin.hostname} port=${admin.port || 5432} connect_query='${connectQuery.replace(/'/g, "''")}'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = ${opts.poolSize ?? 10}
max_client_conn = 1000
logfile = ${dir}/pgbouncer.log
pidfile = ${dir}/pgbouncer.pid
`,
  );
  const child: ChildProcess = spawn('sh', ['-c', WATCHDOG, 'sh', PGBOUNCER_BIN, path.join(dir, 'pgbouncer.ini'), dir], {
    stdio: ['pipe', 'ignore', 'ignore'],
    uid: user.uid,
    gid: user.gid,
    detached: true,
  });
  const logs = () => {
    try {
      return fs.readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  };
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    await stopWatched(child, 10_000);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const adminQuery = async <T>(sql: string): Promise<T[]> => {
    const c = new pg.Client({ connectionString: url('pgbouncer') });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  };

  const deadline = Date.now() + 15_000;
  for (;;) {
    const c = new pg.Client({ connectionString: url(admin.pathname.slice(1) || 'postgres'), connectionTimeoutMillis: 1_000 });
    try {
      await c.connect();
      await c.query('select 1');
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => {});
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`pgbouncer did not start: ${(err as Error).message}\n${logs()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    port,
    url,
    async stats() {
      const rows = await adminQuery<Record<string, string>>('SHOW STATS');
      return rows.map((r) => ({ database: r.database!, total_xact_count: Number(r.total_xact_count), total_query_count: Number(r.total_query_count) }));
    },
    logs,
    stop,
  };
}
