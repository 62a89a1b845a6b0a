// The real entry points as a user starts them: embedded PGlite, Postgres, Redis autostart, bad settings.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { freePort } from '../helpers/redis-server.js';
import { createTestDatabase, clearRedisPrefix, tempDir, REDIS_URL } from '../helpers/services.js';
import { transpileServer } from '../../scripts/build-if-stale.mjs';
import { ROOT_DIR, spawnEntry, spawnServer } from '../helpers/spawn.js';

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function freshEnv(extra: Record<string, string> = {}) {
  const dataDir = tempDir('sy-proc');
  const prefix = `{sytest-proc-${path.basename(dataDir)}}`;
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  cleanups.push(() => clearRedisPrefix(prefix));
  return { DATA_DIR: dataDir, QUEUE_PREFIX: prefix, REDIS_URL, DATABASE_URL: undefined, SECRET_KEY: undefined, ROOT_PASSWORD: undefined, ...extra };
}

describe('npm start on the embedded database', () => {
  it('serves /readyz, prints a generated root password once, keeps data and SECRET_KEY across restarts, exits 0 on SIGTERM', async () => {
    const env = freshEnv();
    const first = await spawnServer([], env);
    cleanups.push(() => first.stop('SIGKILL'));
    const ready = await fetch(`${first.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
    const line = await first.waitFor(/initialPassword/);
    const password = JSON.parse(line).initialPassword as string;
    expect(password).toMatch(/^[A-Za-z0-9]{20}$/);
    const client = new HttpClient(first.url);
    await client.login('root', password);
    const token = (await client.post('/api/token/', { name: 'survives', unlimited_quota: true })).body.data.key;
    expect(fs.existsSync(path.join(env.DATA_DIR, 'secret.key'))).toBe(true);
    expect(await first.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    const second = await spawnServer([], env);
    cleanups.push(() => second.stop('SIGKILL'));
    expect(second.output()).not.toMatch(/initialPassword/);
    // The session cookie from the first run is still valid: same key, same database.
    const again = new HttpClient(second.url);
    for (const [k, v] of client.cookies) again.cookies.set(k, v);
    expect((await again.get('/api/user/self')).body.data.username).toBe('root');
    expect((await again.get('/api/user/self', { authorization: `Bearer ${token}`, cookie: '' })).status).toBe(200);
    expect(await second.stop('SIGINT')).toEqual({ code: 0, signal: null });
    // Two starts of the whole platform on PGlite (migrations, the use-lite model): 15-20 s alone, up to ~30 s
    // while the other test files share the two cores.
  }, 90_000);
});

describe('the build npm start runs', () => {
  it('transpiled file by file (esbuild), starts on the embedded database and answers a use-lite call from its model thread', async () => {
    // Into a folder of its own inside the project, so its imports resolve from the project's node_modules as dist's do.
    const out = `dist-test-${path.basename(tempDir('sy-build'))}`;
    cleanups.push(() => fs.rmSync(path.join(ROOT_DIR, out), { recursive: true, force: true }));
    await transpileServer(ROOT_DIR, out);
    const s = await spawnServer([], freshEnv({ ROOT_PASSWORD: 'a-root-password' }), out);
    cleanups.push(() => s.stop('SIGKILL'));
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    const root = new HttpClient(s.url);
    await root.login('root', 'a-root-password');
    const key = (await root.post('/api/token/', { name: 'built', unlimited_quota: true })).body.data.key as string;
    const res = await root.withAuth(`Bearer ${key}`).post('/v1/embeddings', { model: 'use-lite', input: ['the build runs'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data[0].embedding).toHaveLength(512);
    expect((await s.stop()).code).toBe(0);
  }, 90_000);
});

describe('npm start on Postgres', () => {
  it('serves /readyz and logs in root with ROOT_PASSWORD', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const s = await spawnServer([], freshEnv({ DATABASE_URL: db.url, ROOT_PASSWORD: 'a-root-password' }));
    cleanups.push(() => s.stop('SIGKILL'));
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    await new HttpClient(s.url).login('root', 'a-root-password');
    expect(s.output()).not.toContain('a-root-password');
    expect((await s.stop()).code).toBe(0);
  });

  it('two processes starting at once on an empty database both migrate safely', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const env = freshEnv({ DATABASE_URL: db.url, ROOT_PASSWORD: 'a-root-password' });
    const [a, b] = await Promise.all([spawnServer(['api'], env), spawnServer(['api'], env)]);
    cleanups.push(
      () => a.stop('SIGKILL'),
      () => b.stop('SIGKILL'),
    );
    for (const s of [a, b]) expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    await new HttpClient(b.url).login('root', 'a-root-password');
    await Promise.all([a.stop(), b.stop()]);
  });
});

describe('start-up problems get one clear line', () => {
  it('a bad setting names the variable', async () => {
    const s = spawnEntry('server', [], freshEnv({ PORT: 'not-a-port', SYNC_WAIT_MS: '-3' }));
    const { code } = await s.exited;
    expect(code).toBe(1);
    expect(s.output()).toMatch(/PORT/);
    expect(s.output()).toMatch(/SYNC_WAIT_MS/);
  });

  it('npm run api without DATABASE_URL explains that PGlite cannot be shared', async () => {
    const s = spawnEntry('server', ['api'], freshEnv());
    expect((await s.exited).code).toBe(1);
    expect(s.output()).toMatch(/needs a Postgres server \(set DATABASE_URL\)/);
  });

  it('npm run worker without DATABASE_URL says the same', async () => {
    const s = spawnEntry('worker', [], freshEnv());
    expect((await s.exited).code).toBe(1);
    expect(s.output()).toMatch(/DATABASE_URL/);
  });

  it('no Redis and no autostart: exits with how to get Redis', async () => {
    const port = await freePort();
    const s = spawnEntry('server', [], freshEnv({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_AUTOSTART: 'false' }));
    expect((await s.exited).code).toBe(1);
    const lines = s.output().trim().split('\n');
    expect(lines.at(-1)).toMatch(/Redis is not reachable at redis:\/\/127\.0\.0\.1:\d+: start one/);
  });
});

describe('Redis autostart', () => {
  it('starts redis-server as a child when nothing answers, and stops it on SIGTERM', async () => {
    const port = await freePort();
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const env = freshEnv({ REDIS_URL: `redis://127.0.0.1:${port}`, DATABASE_URL: db.url, ROOT_PASSWORD: 'a-root-password' });
    const s = await spawnServer([], env);
    cleanups.push(() => s.stop('SIGKILL'));
    expect(s.output()).toMatch(/started redis-server as a child process/);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    expect(fs.existsSync(path.join(env.DATA_DIR, 'redis'))).toBe(true);
    expect((await s.stop()).code).toBe(0);
    // The child is gone with its parent.
    const open = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), resolve(true)));
      c.once('error', () => resolve(false));
    });
    expect(open).toBe(false);
  });
});
