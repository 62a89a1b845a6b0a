// The common first-start failures, on the real entry point against real services: each ends the process with one line
// that says what is wrong and what to set, and no stack.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startPgBouncer } from '../helpers/pgbouncer.js';
import { freePort } from '../helpers/redis-server.js';
import { ADMIN_URL, createTestDatabase, createTestEnv, startTestApp, tempDir } from '../helpers/services.js';
import { spawnEntry } from '../helpers/spawn.js';

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Starts the server (or `npm run migrate`), which must exit 1; returns what it printed, as lines. */
async function failedStart(env: Record<string, string | undefined>, entry: 'server' | 'migrate' = 'server'): Promise<string[]> {
  const s = spawnEntry(entry, [], { LOG_LEVEL: 'info', ...env });
  cleanups.push(() => s.stop('SIGKILL'));
  // A server that starts after all fails at once, instead of at the test's time-out.
  const started = s.waitFor(/Switchyard listening/, 120_000).then(
    () => 'listening',
    () => 'exited',
  );
  expect(await Promise.race([s.exited.then(() => 'exited'), started]), s.output()).toBe('exited');
  const { code } = await s.exited;
  expect(code, s.output()).toBe(1);
  return s.output().split('\n').filter(Boolean);
}

/** The one line: on stderr as `switchyard: …`, and nothing else that looks like a stack or an error log. */
function oneLine(lines: string[]): string {
  const said = lines.filter((l) => l.startsWith('switchyard: '));
  expect(said, lines.join('\n')).toHaveLength(1);
  expect(lines.join('\n')).not.toMatch(/^\s+at /m);
  expect(lines.join('\n')).not.toMatch(/start-up failed/);
  return said[0]!;
}

const asRole = (dbUrl: string, role: string) => {
  const u = new URL(dbUrl);
  u.username = role;
  return u.toString();
};

async function admin<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

describe('start-up errors that say what to do', () => {
  it('behind PgBouncer (transaction pooling) with the statement timeout still sent: names DATABASE_STATEMENT_TIMEOUT_MS=0', async () => {
    const bouncer = await startPgBouncer();
    cleanups.push(() => bouncer.stop());
    const t = await createTestEnv();
    cleanups.push(() => t.cleanup());
    const dbName = new URL(t.dbUrl!).pathname.slice(1);
    const line = oneLine(await failedStart({ ...t.env, DATABASE_URL: bouncer.url(dbName) }));
    expect(line).toBe(
      `switchyard: the Postgres server at 127.0.0.1:${bouncer.port} (PgBouncer, or another pooler) refused the statement_timeout Switchyard sends when it connects: ` +
        'set DATABASE_STATEMENT_TIMEOUT_MS=0, and set the timeout on the pooler instead (PgBouncer: connect_query; see docs/deployment-and-scale-out.md#pgbouncer)',
    );
    // And with it set as the line says, the same start succeeds.
    const ok = spawnEntry('server', [], { ...t.env, DATABASE_URL: bouncer.url(dbName), DATABASE_STATEMENT_TIMEOUT_MS: '0', LOG_LEVEL: 'info' });
    cleanups.push(() => ok.stop('SIGKILL'));
    await ok.waitFor(/Switchyard listening/);
    expect((await ok.stop()).code).toBe(0);
  }, 90_000);

  it('a Postgres role that may not create tables: names the grant (and then the extension it may not create)', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const role = `sy_nocreate_${path.basename(tempDir('r')).replace(/\W/g, '').toLowerCase()}`;
    await admin(ADMIN_URL, (c) => c.query(`create role ${role} login`));
    cleanups.push(() => admin(ADMIN_URL, (c) => c.query(`drop owned by ${role}; drop role if exists ${role}`).catch(() => {})));
    // Postgres 15: only the database's owner may create in schema public.
    await admin(db.url, (c) => c.query(`revoke create on schema public from public`));
    const t = await createTestEnv({ embedded: true });
    cleanups.push(() => t.cleanup());
    const env = { ...t.env, DATABASE_URL: asRole(db.url, role) };
    expect(oneLine(await failedStart(env))).toBe(
      `switchyard: the Postgres role "${role}" may not create tables in database "${db.name}" (permission denied for schema public); ` +
        `Switchyard makes its tables, and every day its log partitions: make the role the database's owner (ALTER DATABASE "${db.name}" OWNER TO "${role}") ` +
        `or GRANT CREATE ON SCHEMA public TO "${role}"`,
    );
    // npm run migrate says the same.
    expect(oneLine(await failedStart(env, 'migrate'))).toMatch(/may not create tables .* GRANT CREATE ON SCHEMA public TO/);

    // Given CREATE on the schema, the next thing it may not do is create pg_trgm (it needs CREATE on the database).
    await admin(db.url, (c) => c.query(`grant create on schema public to ${role}`));
    await admin(db.url, (c) => c.query(`revoke create on database ${db.name} from public`));
    expect(oneLine(await failedStart(env))).toBe(
      `switchyard: the Postgres role "${role}" may not create the extension pg_trgm in database "${db.name}": ` +
        `create it once as a superuser (CREATE EXTENSION pg_trgm; in "${db.name}"), or GRANT CREATE ON DATABASE "${db.name}" TO "${role}"`,
    );
  }, 90_000);

  it('a SECRET_KEY that does not open the stored credentials: says so, naming SECRET_KEY, before serving anything', async () => {
    const app = await startTestApp({ workers: false });
    const made = await app.root.post('/api/channel/', {
      name: 'sealed',
      type: 1,
      base_url: 'http://127.0.0.1:9',
      key: 'sk-upstream-key-sealed-under-the-first-key',
      models: 'text-embedding-3-small',
    });
    expect(made.status, made.text).toBe(201);
    const env = { ...app.testEnv.env };
    cleanups.push(() => app.close());
    const line = oneLine(await failedStart({ ...env, SECRET_KEY: 'another-secret-key-that-sealed-nothing-here-0123' }));
    expect(line).toBe(
      'switchyard: SECRET_KEY does not open the channel keys stored in the database: they were sealed with another key. ' +
        'Set SECRET_KEY to that key (to change keys, see npx switchyard rotate-secret-key)',
    );
    // The previous key given as SECRET_KEY_PREVIOUS opens them: the start goes on.
    const ok = spawnEntry('server', [], {
      ...env,
      SECRET_KEY: 'another-secret-key-that-sealed-nothing-here-0123',
      SECRET_KEY_PREVIOUS: env.SECRET_KEY,
      LOG_LEVEL: 'info',
    });
    cleanups.push(() => ok.stop('SIGKILL'));
    await ok.waitFor(/Switchyard listening/);
    expect((await ok.stop()).code).toBe(0);
  }, 90_000);

  it('the generated key replaced (DATA_DIR/secret.key deleted): names the file to put the key back in', async () => {
    const app = await startTestApp({ workers: false });
    cleanups.push(() => app.close());
    const made = await app.root.post('/api/channel/', { name: 'sealed', type: 1, base_url: 'http://127.0.0.1:9', key: 'sk-upstream-1', models: 'm' });
    expect(made.status, made.text).toBe(201);
    const dataDir = tempDir('sy-keyfile');
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const line = oneLine(await failedStart({ ...app.testEnv.env, SECRET_KEY: undefined, DATA_DIR: dataDir }));
    expect(line).toBe(
      'switchyard: SECRET_KEY does not open the channel keys stored in the database: they were sealed with another key. ' +
        `Put that key back in ${fs.realpathSync(dataDir)}/secret.key, or set SECRET_KEY to it (to change keys, see npx switchyard rotate-secret-key)`,
    );
  }, 90_000);

  it('DATABASE_URL naming a database that does not exist, or a port nothing answers on', async () => {
    const t = await createTestEnv({ embedded: true });
    cleanups.push(() => t.cleanup());
    const missing = new URL(ADMIN_URL);
    missing.pathname = '/sy_no_such_database';
    expect(oneLine(await failedStart({ ...t.env, DATABASE_URL: missing.toString() }))).toBe(
      `switchyard: database "sy_no_such_database" does not exist on the Postgres server at ${missing.hostname}:${missing.port || 5432}: create it (createdb "sy_no_such_database") or fix DATABASE_URL`,
    );
    const port = await freePort();
    expect(oneLine(await failedStart({ ...t.env, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` }))).toBe(
      `switchyard: nothing answers at 127.0.0.1:${port}, the Postgres server of DATABASE_URL (connection refused): start Postgres, or set DATABASE_URL to one that runs`,
    );
  }, 90_000);

  it('a second process on the same embedded database (DATA_DIR): refused in one line while the first runs', async () => {
    const t = await createTestEnv({ embedded: true });
    cleanups.push(() => t.cleanup());
    const first = spawnEntry('server', [], { ...t.env, LOG_LEVEL: 'info' });
    cleanups.push(() => first.stop('SIGKILL'));
    await first.waitFor(/Switchyard listening/);
    const line = oneLine(await failedStart(t.env));
    expect(line).toBe(
      `switchyard: another Switchyard process (npm start, or the CLI) is using the embedded database in ${fs.realpathSync(t.dataDir)}: ` +
        'stop it first, or set DATABASE_URL to a Postgres server that both can share',
    );
    expect(oneLine(await failedStart(t.env, 'migrate'))).toBe(line);
    // Killed outright, the first leaves nothing behind that stops the next start.
    await first.stop('SIGKILL');
    const next = spawnEntry('server', [], { ...t.env, LOG_LEVEL: 'info' });
    cleanups.push(() => next.stop('SIGKILL'));
    await next.waitFor(/Switchyard listening/);
    expect((await next.stop()).code).toBe(0);
  }, 120_000);
});
