// Promises of README.md that no feature test proved (issue 28): where the embedded database lives, root's first
// password, HOST, the Redis autostart's limits, WORKER_QUEUES and TRUST_PROXY. The table of every README promise and
// its test is in docs/testing.md ("README promises and their tests").
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { jobEndListeners, jobKinds } from '../../src/job-kinds.js';
import { createPlatform } from '../../src/platform.js';
import { HttpClient } from '../helpers/http.js';
import { freePort } from '../helpers/redis-server.js';
import { clearRedisPrefix, createTestDatabase, createTestEnv, REDIS_URL, startTestApp, tempDir, type TestApp, type TestEnv } from '../helpers/services.js';
import { spawnEntry, spawnServer } from '../helpers/spawn.js';

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The API of a platform on `env` (root made on first start, as npm start does), with its log lines kept. */
async function serve(env: Record<string, string>) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  const config = parseConfig(env);
  const platform = await createPlatform(config, pino({ level: 'info' }, sink), { bootstrapRoot: true, jobs: jobKinds, jobEnds: jobEndListeners });
  const server: Server = await new Promise((resolve) => {
    const s = createApp(platform).listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** The generated password root got in this start's log, if it got one. */
    initialPassword: () => lines.find((l) => 'initialPassword' in l)?.initialPassword as string | undefined,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await platform.close();
    },
  };
}

async function testEnv(opts: Parameters<typeof createTestEnv>[0]): Promise<TestEnv> {
  const env = await createTestEnv(opts);
  cleanups.push(() => env.cleanup());
  return env;
}

const loginStatus = async (url: string, password: string) => (await new HttpClient(url).post('/api/user/login', { username: 'root', password })).status;

describe('the embedded database', () => {
  it('lives under DATA_DIR/pgdata, and a second start on that DATA_DIR finds what the first stored', async () => {
    const env = await testEnv({ embedded: true });
    const first = await serve(env.env);
    const root = new HttpClient(first.url);
    await root.login('root', env.env.ROOT_PASSWORD!);
    expect((await root.post('/api/user/', { username: 'kept', password: 'kept-password' })).status).toBe(201);
    await first.close();
    expect(fs.existsSync(path.join(env.dataDir, 'pgdata', 'PG_VERSION'))).toBe(true);
    const second = await serve(env.env);
    cleanups.push(() => second.close());
    await new HttpClient(second.url).login('kept', 'kept-password');
  });
});

describe("root's password", () => {
  it('without ROOT_PASSWORD: a random one per new database, logged once; a ROOT_PASSWORD set later does not change it', async () => {
    const [a, b] = await Promise.all([testEnv({ env: { ROOT_PASSWORD: '' } }), testEnv({ env: { ROOT_PASSWORD: '' } })]);
    const [first, other] = await Promise.all([serve(a.env), serve(b.env)]);
    const password = first.initialPassword();
    expect(password).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(other.initialPassword()).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(other.initialPassword()).not.toBe(password);
    await Promise.all([first.close(), other.close()]);

    // Restarted with a ROOT_PASSWORD: root already exists, so nothing is logged and the password stays the first one.
    const again = await serve({ ...a.env, ROOT_PASSWORD: 'a-later-root-password' });
    cleanups.push(() => again.close());
    expect(again.initialPassword()).toBeUndefined();
    expect(await loginStatus(again.url, password!)).toBe(200);
    expect(await loginStatus(again.url, 'a-later-root-password')).toBe(401);
  });
});

describe('the server entry (src/server.ts) as started', () => {
  /** A fresh DATA_DIR and Redis prefix of its own (the database is given by each test). */
  function freshEnv(extra: Record<string, string>) {
    const dataDir = tempDir('sy-readme');
    const prefix = `{sytest-readme-${path.basename(dataDir)}}`;
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    cleanups.push(() => clearRedisPrefix(prefix));
    return { DATA_DIR: dataDir, QUEUE_PREFIX: prefix, REDIS_URL, DATABASE_URL: undefined, SECRET_KEY: undefined, ...extra };
  }

  it('listens on HOST only: 127.0.0.2 answers, 127.0.0.1 is refused', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const s = await spawnServer(['api'], freshEnv({ HOST: '127.0.0.2', DATABASE_URL: db.url, ROOT_PASSWORD: 'a-root-password' }));
    cleanups.push(() => s.stop('SIGKILL'));
    const port = new URL(s.url).port;
    expect((await fetch(`http://127.0.0.2:${port}/healthz`)).status).toBe(200);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    expect((await s.stop()).code).toBe(0);
  });

  /** Starts the server with nothing answering at `redisUrl`; its exit code and last line, or what it started instead. */
  async function startWithoutRedis(redisUrl: string, extra: Record<string, string> = {}) {
    const s = spawnEntry('server', [], freshEnv({ REDIS_URL: redisUrl, REDIS_AUTOSTART: 'true', ...extra }));
    cleanups.push(() => s.stop('SIGKILL'));
    const outcome = await Promise.race([s.exited, s.waitFor(/started redis-server|Switchyard listening/).then((line) => ({ started: line }))]);
    return { outcome, lastLine: s.output().trim().split('\n').at(-1) };
  }

  it('REDIS_AUTOSTART starts no redis-server for a URL that is not this machine (127.0.0.2): it exits with how to get Redis', async () => {
    const url = `redis://127.0.0.2:${await freePort()}`;
    const { outcome, lastLine } = await startWithoutRedis(url);
    expect(outcome).toEqual({ code: 1, signal: null });
    expect(lastLine).toContain(`Redis is not reachable at ${url}: start one`);
  });

  it('with no redis-server on PATH, it exits with how to get Redis', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const { outcome, lastLine } = await startWithoutRedis(url, { PATH: tempDir('sy-empty-path') });
    expect(outcome).toEqual({ code: 1, signal: null });
    expect(lastLine).toContain(`Redis is not reachable at ${url}: start one`);
  });
});

describe('WORKER_QUEUES=content', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { WORKER_QUEUES: 'content', SYNC_WAIT_MS: '1000' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('this process runs the content queue and no other (a mail ping finds no worker)', async () => {
    expect((await t.root.post('/api/jobs/ping?queue=content')).status).toBe(200);
    const mail = await t.root.post('/api/jobs/ping?queue=mail');
    expect(mail.status).toBe(504);
    expect(mail.body.error).toMatch(/No mail worker answered/);
  });
});

describe('TRUST_PROXY', () => {
  let plain: TestApp;
  let trusting: TestApp;
  beforeAll(async () => {
    [plain, trusting] = await Promise.all([startTestApp({ workers: false }), startTestApp({ workers: false, env: { TRUST_PROXY: 'true' } })]);
  });
  afterAll(async () => {
    await Promise.all([plain?.close(), trusting?.close()]);
  });

  /** A key of root's usable only from `subnet`. */
  const keyFor = async (t: TestApp, subnet: string) =>
    (await t.root.post('/api/token/', { name: `from ${subnet}`, unlimited_quota: true, subnet })).body.data.key as string;
  const models = (t: TestApp, key: string, forwardedFor: string) =>
    t.anon.get('/v1/models', { authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor });
  /** A cookie-authenticated write, as a browser sends it through a TLS proxy: Origin https://<this host>. */
  const renameOverTls = (t: TestApp, headers: Record<string, string>) =>
    t.root.put('/api/user/self', { display_name: 'through a proxy' }, { origin: t.url.replace('http:', 'https:'), ...headers });

  it('unset (false): X-Forwarded-For and X-Forwarded-Proto change nothing; the address is the connection’s', async () => {
    expect((await models(plain, await keyFor(plain, '10.0.0.0/8'), '10.1.2.3')).status).toBe(403);
    expect((await models(plain, await keyFor(plain, '127.0.0.1/32'), '10.1.2.3')).status).toBe(200);
    expect((await renameOverTls(plain, { 'x-forwarded-proto': 'https' })).status).toBe(403);
  });

  it('true: the address is the last X-Forwarded-For entry, and X-Forwarded-Proto is the scheme', async () => {
    const key = await keyFor(trusting, '10.0.0.0/8');
    expect((await models(trusting, key, '127.0.0.1, 10.1.2.3')).status).toBe(200);
    expect((await models(trusting, key, '10.1.2.3, 127.0.0.1')).status).toBe(403);
    expect((await renameOverTls(trusting, { 'x-forwarded-proto': 'https' })).status).toBe(200);
    expect((await renameOverTls(trusting, {})).status).toBe(403);
  });
});
