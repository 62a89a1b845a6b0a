// Test infrastructure: a fresh Postgres database and a Redis prefix per test file, and a running app.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import pg from 'pg';
import { Redis } from 'ioredis';
import { parseConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import { answerClientErrors, createApp } from '../../src/http/app.js';
import { jobEndListeners, jobKinds } from '../../src/job-kinds.js';
import type { JobKinds } from '../../src/jobs/registry.js';
import { startWorkers, type WorkerSet } from '../../workers/index.js';
import { HttpClient } from './http.js';

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ROOT_PASSWORD = 'root-password-for-tests';

const id = () => crypto.randomBytes(5).toString('hex');

/** A new, empty database on the test Postgres server; `drop()` removes it. */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `sy_test_${id()}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** Deletes every Redis key under a prefix. */
export async function clearRedisPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await r.del(...keys);
  } while (cursor !== '0');
  await r.quit();
}

export function tempDir(label = 'sy'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `${label}-`));
}

export interface TestEnv {
  env: Record<string, string>;
  dbUrl?: string;
  prefix: string;
  dataDir: string;
  cleanup(): Promise<void>;
}

/** Environment for one test file: own database (unless embedded), own queue prefix, own DATA_DIR. */
export async function createTestEnv(opts: { embedded?: boolean; env?: Record<string, string> } = {}): Promise<TestEnv> {
  const db = opts.embedded ? undefined : await createTestDatabase();
  const prefix = `{sytest-${id()}}`;
  const dataDir = tempDir();
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    REDIS_URL,
    QUEUE_PREFIX: prefix,
    DATA_DIR: dataDir,
    ROOT_PASSWORD,
    SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789',
    HOST: '127.0.0.1',
    PORT: '0',
    REDIS_AUTOSTART: 'false',
    // Dovecot, the SMTP sink and the fake upstreams listen on loopback, which the outbound policy refuses.
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    // Test workers load use-lite on the first use-lite job, not at start: most tests never use it.
    USE_LITE_PRELOAD: 'false',
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...opts.env,
  };
  return {
    env,
    dbUrl: db?.url,
    prefix,
    dataDir,
    async cleanup() {
      await clearRedisPrefix(prefix).catch(() => {});
      await db?.drop().catch(() => {});
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TestApp {
  url: string;
  platform: Platform;
  config: Config;
  testEnv: TestEnv;
  workers?: WorkerSet;
  /** A client logged in as root (session cookie). */
  root: HttpClient;
  /** An anonymous client. */
  anon: HttpClient;
  /** Stops it; with keepData, its database, Redis keys and DATA_DIR stay (for another process to open), cleaned up by testEnv.cleanup(). */
  close(opts?: { keepData?: boolean }): Promise<void>;
}

/**
 * Starts the API in this process (and workers, unless `workers: false`) on a random port, with the application's job
 * kinds or the ones given (`{ ...jobKinds, 'content.batch': { ...contentBatch, run: flaky } }`, or a test's own added).
 */
export async function startTestApp(
  opts: { embedded?: boolean; env?: Record<string, string>; workers?: boolean; jobs?: JobKinds; testEnv?: TestEnv } = {},
): Promise<TestApp> {
  // Given a test environment (another app's, closed with keepData), on its data, with opts.env on top.
  const testEnv = opts.testEnv ?? (await createTestEnv(opts));
  const config = parseConfig(opts.testEnv ? { ...testEnv.env, ...opts.env } : testEnv.env);
  const platform = await createPlatform(config, createLogger(config.LOG_LEVEL), {
    bootstrapRoot: true,
    listenForJobs: true,
    jobs: opts.jobs ?? jobKinds,
    jobEnds: jobEndListeners,
  });
  const app = createApp(platform);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  answerClientErrors(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const workers = opts.workers === false ? undefined : await startWorkers(platform, config.WORKER_QUEUES);
  const root = new HttpClient(url);
  await root.login('root', ROOT_PASSWORD);
  return {
    url,
    platform,
    config,
    testEnv,
    workers,
    root,
    anon: new HttpClient(url),
    async close(closeOpts = {}) {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await workers?.close(5_000);
      await platform.close();
      if (!closeOpts.keepData) await testEnv.cleanup();
    },
  };
}
