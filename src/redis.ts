// Redis connections in two profiles (producer fails fast, worker waits), single node or Redis Cluster; where keys go; finding or starting Redis.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis as SingleRedis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { withTimeout } from './timeout.js';

/**
 * On a Redis Cluster, waits (at most `timeoutMs`) until a replica of the master that holds `key` has every write made
 * so far on this client's connection to that master (Redis's WAIT). Redis replicates asynchronously: a write the
 * master acknowledged and then died with, before passing it on, is gone after the failover. Answers the replicas
 * that have it: 0 on a single Redis and for a master without replicas (nothing to wait for), and when the wait ran
 * out (the write stands, unreplicated so far).
 *
 * WAIT blocks the connection it is sent on, which the process's other commands to that master share: waits that
 * arrive while one is out share the next one (sent when it returns, it covers all their writes), and after a wait
 * ran out that master is not waited on for REPLICA_PAUSE_MS (a replica frozen or cut off, but still counted).
 */
export async function waitForReplica(client: Redis, key: string, timeoutMs: number): Promise<number> {
  if (!(client instanceof Cluster)) return 0;
  const master = client.slots[calculateSlot(key)]?.[0];
  // The pool's connection to that master: the one the write went through (nodes() hands out the pooled clients).
  const node = master ? client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master) : undefined;
  if (!node || (await replicasOf(node)) === 0) return 0;
  return replicated(node, timeoutMs);
}

const REPLICA_PAUSE_MS = 5_000;

interface NodeWaits {
  /** The WAIT sent and not yet answered. */
  sent?: Promise<number>;
  /** The one that follows it, shared by every caller that came meanwhile. */
  next?: Promise<number>;
  pausedUntil: number;
}
const nodeWaits = new WeakMap<SingleRedis, NodeWaits>();

function replicated(node: SingleRedis, timeoutMs: number): Promise<number> {
  let w = nodeWaits.get(node);
  if (!w) nodeWaits.set(node, (w = { pausedUntil: 0 }));
  const waits = w;
  const send = (): Promise<number> => {
    if (Date.now() < waits.pausedUntil) return Promise.resolve(0);
    const sent: Promise<number> = node
      .call('WAIT', '1', String(timeoutMs))
      .then(Number, () => 0)
      .then((n) => {
        if (waits.sent === sent) waits.sent = undefined;
        if (n === 0) waits.pausedUntil = Date.now() + REPLICA_PAUSE_MS;
        return n;
      });
    waits.sent = sent;
    return sent;
  };
  if (!waits.sent) return send();
  waits.next ??= waits.sent.then(() => {
    waits.next = undefined;
    return send();
  });
  return waits.next;
}

/** A master's connected replicas, from INFO at most every 5 s (WAIT for one when there is none would always run out). */
const replicaCounts = new WeakMap<SingleRedis, { at: number; count: Promise<number> }>();
function replicasOf(node: SingleRedis): Promise<number> {
  const known = replicaCounts.get(node);
  if (known && Date.now() - known.at < 5_000) return known.count;
  const count = node
    .info('replication')
    .then((info) => Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0))
    .catch(() => 0);
  replicaCounts.set(node, { at: Date.now(), count });
  return count;
}

/** A connection to one Redis server or to a Redis Cluster (REDIS_CLUSTER_NODES). */
export type Redis = SingleRedis | Cluster;

export type RedisProfile = 'producer' | 'worker';

/** What createRedis needs to know: one server (REDIS_URL), or a cluster's seed nodes (with REDIS_URL's credentials). */
export type RedisTarget = Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>;

const reconnect = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2_000);

/**
 * producer: used on the request path. No offline queue, one retry, short timeouts: when Redis is
 * down a command fails at once and the API answers 503 instead of hanging.
 * worker: used by BullMQ workers and QueueEvents. Commands wait for the connection to come back
 * (BullMQ requires maxRetriesPerRequest: null for its blocking commands; on a cluster, in
 * redisOptions, which is where BullMQ reads it).
 */
export function createRedis(target: RedisTarget, profile: RedisProfile, name: string, opts: { subscriber?: boolean } = {}): Redis {
  const common: RedisOptions = { connectionName: `switchyard:${name}`, lazyConnect: true };
  const options: RedisOptions =
    profile === 'producer'
      ? { ...common, maxRetriesPerRequest: 1, commandTimeout: 2_000, connectTimeout: 2_000 }
      : { ...common, maxRetriesPerRequest: null, enableReadyCheck: true, connectTimeout: 5_000 };
  const client = target.REDIS_CLUSTER_NODES
    ? createCluster(target.REDIS_URL, target.REDIS_CLUSTER_NODES, profile, options, opts.subscriber === true)
    : createSingle(target.REDIS_URL, profile, options);
  // An unhandled 'error' event would crash the process; reconnection is automatic.
  client.on('error', () => {});
  return client;
}

function createSingle(url: string, profile: RedisProfile, options: RedisOptions): SingleRedis {
  return new SingleRedis(url, { ...options, retryStrategy: reconnect, enableOfflineQueue: profile !== 'producer' });
}

/**
 * A cluster client: it follows MOVED/ASK, and when a master dies it retries the commands that were
 * bound for it (every `retryDelayOnFailover`, re-reading the slot map) until its replica has taken
 * over. Every node is reached with REDIS_URL's user, password and TLS (rediss:).
 */
function createCluster(url: string, nodes: { host: string; port: number }[], profile: RedisProfile, options: RedisOptions, subscriber: boolean): Cluster {
  const u = new URL(url);
  const auth: RedisOptions = {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  const { lazyConnect, ...redisOptions } = options;
  const clusterOptions: ClusterOptions = {
    lazyConnect,
    redisOptions: { ...redisOptions, ...auth },
    enableOfflineQueue: profile !== 'producer',
    clusterRetryStrategy: reconnect,
    // A dead master's commands are retried every 250 ms (16 times at most, ioredis's maxRedirections),
    // re-reading the slot map each time, so they land on the replica once it has been promoted.
    retryDelayOnFailover: 250,
    retryDelayOnClusterDown: 250,
    retryDelayOnTryAgain: 250,
    // Just after a failover the nodes may disagree for a moment on who serves a slot and send a
    // command back and forth (MOVED): wait a little between redirections instead of using them up.
    retryDelayOnMoved: 100,
    slotsRefreshTimeout: 2_000,
    slotsRefreshInterval: 5_000,
    // A subscriber listens to sharded channels (see subscribeTo), on the master of each one's slot.
    shardedSubscribers: subscriber,
  };
  return settleConnects(new Cluster(nodes, clusterOptions));
}

/**
 * Makes a cluster client's connect() settle, and its duplicates' too (BullMQ's worker makes its blocking connection
 * with duplicate()). ioredis leaves the promise of a connect() pending for good when that connection's ready check
 * fails (CLUSTER INFO says cluster_state:fail, as it does on some nodes while a replica takes over from a dead master):
 * it reconnects on its own, and only that later connect() settles. A BullMQ worker whose BZPOPMIN was lost with the
 * dead master gives up on it (its watchdog), disconnects its blocking connection and awaits connect() to block again:
 * it waited on that promise forever and took no job from its queue after the failover (issue 24). Here connect()
 * also resolves on the client's next 'ready' and rejects when it ends.
 */
function settleConnects(cluster: Cluster): Cluster {
  const connect = cluster.connect.bind(cluster);
  cluster.connect = () =>
    new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        cluster.off('ready', onReady);
        cluster.off('end', onEnd);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => settle();
      const onEnd = () => settle(new Error('Connection is closed.'));
      cluster.on('ready', onReady);
      cluster.on('end', onEnd);
      connect().then(onReady, settle);
    });
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.duplicate = (...args: Parameters<Cluster['duplicate']>) => settleConnects(duplicate(...args));
  return cluster;
}

/**
 * Messages to one process (job replies). On a cluster they are sharded (SPUBLISH/SSUBSCRIBE, Redis 7):
 * a message goes to the master of its channel's slot and its replicas only, where plain PUBLISH
 * would copy every message to every node of the cluster. The subscribing client must be created
 * with `subscriber: true`.
 */
export function publishTo(client: Redis, channel: string, message: string): Promise<unknown> {
  return client instanceof Cluster ? client.spublish(channel, message) : client.publish(channel, message);
}

export async function subscribeTo(client: Redis, channel: string, onMessage: (message: string) => void): Promise<void> {
  if (client instanceof Cluster) {
    client.on('smessage', (from: string, message: string) => from === channel && onMessage(message));
    await client.ssubscribe(channel);
  } else {
    client.on('message', (from: string, message: string) => from === channel && onMessage(message));
    await client.subscribe(channel);
  }
}

/**
 * Where each Redis key goes. On one Redis every key starts with QUEUE_PREFIX, exactly as before
 * clusters were supported, so an upgrade finds its queued jobs. On a cluster (REDIS_CLUSTER_NODES)
 * each queue gets a hash tag of its own (`{switchyard-content}`, BullMQ's pattern for several
 * queues), and so does each user's, account's or token's key, so they spread over the masters.
 */
export interface RedisKeys {
  /** BullMQ's `prefix` for a queue: every key of one queue shares one slot. */
  queuePrefix(queue: string): string;
  /** The key of one thing (a user, an account, a token); on a cluster, in the slot of its id. */
  of(kind: string, id: string | number): string;
  /** The key of one of a set read together (MGET); on a cluster, every id of `kind` in one slot. */
  grouped(kind: string, id: string | number): string;
}

export function redisKeys(config: Pick<Config, 'QUEUE_PREFIX' | 'REDIS_CLUSTER_NODES'>): RedisKeys {
  const prefix = config.QUEUE_PREFIX;
  if (!config.REDIS_CLUSTER_NODES) {
    return {
      queuePrefix: () => prefix,
      of: (kind, id) => `${prefix}:${kind}:${id}`,
      grouped: (kind, id) => `${prefix}:${kind}:${id}`,
    };
  }
  // The prefix's own braces would make one tag of everything: on a cluster it is a plain name.
  const base = prefix.replace(/[{}]/g, '') || 'switchyard';
  return {
    queuePrefix: (queue) => `{${base}-${queue}}`,
    of: (kind, id) => `${base}:${kind}:{${id}}`,
    grouped: (kind, id) => `{${base}:${kind}}:${id}`,
  };
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
  // A cluster is never started here: its nodes are the operator's.
  if (config.REDIS_CLUSTER_NODES) return { stop: async () => {} };
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
  // On a cluster every master holds keys: ask each.
  const servers: SingleRedis[] = client instanceof Cluster ? client.nodes('master') : [client];
  for (const server of servers) {
    try {
      const reply = (await server.config('GET', 'maxmemory-policy')) as string[];
      const policy = reply[1];
      if (policy && policy !== 'noeviction') {
        const at = `${server.options.host}:${server.options.port}`;
        log.warn(
          { policy, server: at },
          `Redis at ${at} has maxmemory-policy ${policy}: when its memory is full it evicts keys, and jobs are lost. ` +
            'Set maxmemory-policy noeviction (redis-cli CONFIG SET maxmemory-policy noeviction, and in redis.conf so that it stays)',
        );
      }
    } catch {
      // Managed Redis often forbids CONFIG; nothing to check then.
    }
  }
}
