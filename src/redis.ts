// Redis connections in two profiles (producer fails fast, worker waits), and finding or starting Redis.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { withTimeout } from './timeout.js';

export type { Redis };

export type RedisProfile = 'producer' | 'worker';

const reconnect = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2_000);

/**
 * producer: used on the request path. No offline queue, one retry, short timeouts: when Redis is
 * down a command fails at once and the API answers 503 instead of hanging.
 * worker: used by BullMQ workers and QueueEvents. Commands wait for the connection to come back
 * (BullMQ requires maxRetriesPerRequest: null for its blocking commands).
 */
export function createRedis(url: string, profile: RedisProfile, name: string): Redis {
  const common: RedisOptions = { connectionName: `switchyard:${name}`, retryStrategy: reconnect, lazyConnect: true };
  const options: RedisOptions =
    profile === 'producer'
      ? { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2_000, connectTimeout: 2_000 }
      : { ...common, maxRetriesPerRequest: null, enableReadyCheck: true, connectTimeout: 5_000 };
  const client = new Redis(url, options);
  // An unhandled 'error' event would crash the process; reconnection is automatic.
  client.on('error', () => {});
  return client;
}

/** True when the client is connected and answers now. */
export async function redisReady(client: Redis, timeoutMs = 1_500): Promise<boolean> {
  if (client.status !== 'ready') return false;
  try {
    await withTimeout(client.ping(), timeoutMs);
    return true;
  } catch {
    return false;
  }
}

function pingRaw(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    // Any reply (even -NOAUTH) means a Redis server is listening.
    socket.once('data', (buf) => done(/^[+-]/.test(buf.toString())));
  });
}

export interface RedisHandle {
  /** The redis-server this process started, if it started one. */
  child?: ChildProcess;
  stop(): Promise<void>;
}

export class RedisUnavailableError extends Error {}

/**
 * Makes sure something answers at REDIS_URL. When nothing does, the URL points at this machine and
 * `redis-server` is on PATH, starts one as a child with its files under DATA_DIR; otherwise throws
 * an error whose message is the one line to show the user.
 */
export async function ensureRedis(config: Config, log: Logger): Promise<RedisHandle> {
  const url = new URL(config.REDIS_URL);
  const host = url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const port = Number(url.port || 6379);
  const none: RedisHandle = { stop: async () => {} };
  if (await pingRaw(host, port, 1_500)) return none;

  const local = ['127.0.0.1', 'localhost', '::1'].includes(host);
  const hasServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!config.REDIS_AUTOSTART || !local || !hasServer) {
    throw new RedisUnavailableError(
      `Redis is not reachable at ${config.REDIS_URL}: start one (e.g. "apt-get install redis-server" or ` +
        `"docker run -p 6379:6379 redis:7"), or set REDIS_URL to a running Redis.`,
    );
  }
  const dir = path.join(config.DATA_DIR, 'redis');
  fs.mkdirSync(dir, { recursive: true });
  const args = [
    '--port',
    String(port),
    '--bind',
    host === 'localhost' ? '127.0.0.1' : host,
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
    '--daemonize',
    'no',
    '--logfile',
    path.join(dir, 'redis.log'),
  ];
  if (url.password) args.push('--requirepass', decodeURIComponent(url.password));
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  log.info({ port, dir }, 'no Redis answered; started redis-server as a child process');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    if (await pingRaw(host, port, 500)) {
      return {
        child,
        stop: () =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new RedisUnavailableError(`Redis is not reachable at ${config.REDIS_URL}, and the redis-server started for it did not come up (see ${dir}/redis.log).`);
}

/** BullMQ loses jobs when Redis evicts keys: say so loudly at start. */
export async function checkEvictionPolicy(client: Redis, log: Logger): Promise<void> {
  try {
    const reply = (await client.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy && policy !== 'noeviction') {
      log.warn({ policy }, 'Redis maxmemory-policy is not "noeviction": Redis may evict queue keys and lose jobs. Set maxmemory-policy noeviction.');
    }
  } catch {
    // Managed Redis often forbids CONFIG; nothing to check then.
  }
}
