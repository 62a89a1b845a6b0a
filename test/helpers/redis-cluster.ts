// A private Redis Cluster on loopback (3 masters, 3 replicas, a password), for tests that need a real cluster and its failover.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { stopWatched } from './spawn.js';

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  /** redis-server's pid, read from INFO once the node answered. */
  pid: number;
}

export interface NodeView {
  id: string;
  port: number;
  role: 'master' | 'replica';
  failed: boolean;
  /** The master's id, for a replica. */
  masterId?: string;
  /** Slot ranges, for a master. */
  slots: [number, number][];
}

export interface RedisCluster {
  nodes: ClusterNode[];
  password: string;
  /** `REDIS_CLUSTER_NODES`: every node as host:port. */
  seeds: string;
  /** `REDIS_URL` carrying the password (its host is a node, but with a cluster only the password is read). */
  url: string;
  /** The cluster as a live node sees it. */
  view(): Promise<NodeView[]>;
  /** The port of the master that serves a key now. */
  masterOf(key: string): Promise<number>;
  /** Kills a node with SIGKILL, as a crash would. */
  kill(port: number): Promise<void>;
  /** Starts a killed node again, with its cluster config: it rejoins (a former master, as a replica of its successor). */
  restart(port: number): Promise<void>;
  /**
   * Resolves when every live node says cluster_state:ok, every slot is served by a live master, every master serves
   * slots, and every live replica has finished its sync with its master.
   */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** A plain (non-cluster) client of one node. */
  client(port: number): Redis;
  stop(): Promise<void>;
}

/** Ports for a node and its cluster bus: both must be free (the bus is not port + 10000 here, it is chosen). */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// One shell holds every redis-server: it starts a node for each `start <port> <busport>` line on its stdin, and when
// the stdin closes (stop(), or the test process dying, even by SIGKILL) it kills them all and removes the temp dir.
// $1 = temp dir.
const WATCHDOG = `
dir="$1"
pids=""
while read cmd port bus; do
  [ "$cmd" = start ] || continue
  mkdir -p "$dir/$port"
  redis-server "$dir/redis.conf" --port "$port" --cluster-port "$bus" --dir "$dir/$port" \\
    --cluster-config-file "$dir/$port/nodes.conf" --logfile "$dir/$port/redis.log" </dev/null &
  pids="$pids $!"
done
kill -KILL $pids 2>/dev/null
wait
rm -rf "$dir"
`;

export async function startRedisCluster(opts: { nodeTimeoutMs?: number } = {}): Promise<RedisCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-redis-cluster-'));
  const password = randomBytes(12).toString('hex');
  const nodeTimeout = opts.nodeTimeoutMs ?? 1_000;
  fs.writeFileSync(
    path.join(dir, 'redis.conf'),
    [
      'bind 127.0.0.1',
      'protected-mode no',
      'cluster-enabled yes',
      `cluster-node-timeout ${nodeTimeout}`,
      // A replica takes over however long it was cut off from its master (the test kills masters on purpose).
      'cluster-replica-validity-factor 0',
      'save ""',
      'appendonly no',
      'maxmemory-policy noeviction',
      `requirepass ${password}`,
      `masterauth ${password}`,
      'daemonize no',
      '',
    ].join('\n'),
  );
  const ports = await freePorts(12);
  const pairs = Array.from({ length: 6 }, (_, i) => [ports[2 * i]!, ports[2 * i + 1]!] as const);
  const watchdog: ChildProcess = spawn('sh', ['-c', WATCHDOG, 'sh', dir], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  const clients = new Map<number, Redis>();
  const client = (port: number) => {
    let c = clients.get(port);
    if (!c) {
      c = new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
      c.on('error', () => {});
      clients.set(port, c);
    }
    return c;
  };
  // A fresh connection each time: a node killed and its client's socket gone must not poison later calls.
  const ask = async <T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> => {
    const r = new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
    r.on('error', () => {});
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  };
  const killed = new Set<number>();
  const stop = async () => {
    for (const c of clients.values()) c.disconnect();
    await stopWatched(watchdog, 10_000);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  /** Starts the node of a port pair and resolves with its pid once it answers. */
  const startNode = async (port: number, bus: number): Promise<number> => {
    watchdog.stdin!.write(`start ${port} ${bus}\n`);
    for (let i = 0; i < 200; i++) {
      const pid = await ask(port, async (r) => Number(/process_id:(\d+)/.exec(await r.info('server'))?.[1] ?? 0)).catch(() => 0);
      if (pid) return pid;
      await sleep(50);
    }
    throw new Error(`redis-server on ${port} did not start: ${readLog(dir, port)}`);
  };

  try {
    const nodes: ClusterNode[] = [];
    for (const [port, bus] of pairs) nodes.push({ port, pid: await startNode(port, bus) });
    const args = [
      '-a',
      password,
      '--no-auth-warning',
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ];
    await run('redis-cli', args, { timeout: 60_000 }).catch((err: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(`redis-cli --cluster create failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    });

    const view = async (): Promise<NodeView[]> => {
      let lastErr: unknown;
      for (const n of nodes) {
        if (killed.has(n.port)) continue;
        try {
          const text = await ask(n.port, (r) => r.call('CLUSTER', 'NODES') as Promise<string>);
          return parseNodes(text);
        } catch (err) {
          lastErr = err;
        }
      }
      throw lastErr ?? new Error('no live node');
    };

    const waitHealthy = async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      let why = '';
      while (Date.now() < deadline) {
        try {
          why = (await unhealthy()) ?? '';
          if (!why) return;
        } catch (err) {
          why = (err as Error).message;
        }
        await sleep(100);
      }
      throw new Error(`the cluster did not become healthy in ${timeoutMs} ms: ${why}`);
    };
    /** Why the cluster is not settled yet, or undefined when it is. */
    const unhealthy = async (): Promise<string | undefined> => {
      const live = nodes.filter((n) => !killed.has(n.port));
      // Every live node must see the same cluster: the same live masters with the same slots, the same replicas of them.
      const seen = await Promise.all(
        live.map((n) =>
          ask(n.port, async (r) => {
            const info = (await r.call('CLUSTER', 'INFO')) as string;
            const v = parseNodes((await r.call('CLUSTER', 'NODES')) as string).filter((x) => !x.failed && !killed.has(x.port));
            const shape = v
              .map((x) => `${x.port}:${x.role}:${x.masterId ?? ''}:${JSON.stringify(x.slots)}`)
              .sort()
              .join(' ');
            return { ok: /cluster_state:ok/.test(info), v, shape, replication: await r.info('replication') };
          }),
        ),
      );
      if (!seen.every((x) => x.ok)) return 'a node does not say cluster_state:ok';
      if (new Set(seen.map((x) => x.shape)).size !== 1) return 'the nodes do not agree on the cluster yet';
      const v = seen[0]!.v;
      if (v.length !== live.length) return 'a live node is missing from the view';
      const masters = v.filter((n) => n.role === 'master');
      // A master without slots is a node in between: a former master that has not yet become its successor's replica.
      if (masters.some((m) => m.slots.length === 0)) return 'a master serves no slots';
      if (masters.flatMap((m) => m.slots).reduce((sum, [a, b]) => sum + (b - a + 1), 0) !== 16_384) return 'not every slot is served';
      // Each node knows its own role, and every replica has finished its sync with its master.
      for (const [i, n] of live.entries()) {
        const role = v.find((x) => x.port === n.port)!.role;
        const rep = seen[i]!.replication;
        if (role === 'master' && !/role:master/.test(rep)) return `${n.port} is not a master yet`;
        if (role === 'replica' && !(/role:slave/.test(rep) && /master_link_status:up/.test(rep))) return `${n.port} has not synced with its master yet`;
      }
      return undefined;
    };
    await waitHealthy(60_000);

    return {
      nodes,
      password,
      seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
      url: `redis://:${password}@127.0.0.1:${nodes[0]!.port}`,
      view,
      async masterOf(key) {
        const slot = Number(await ask(nodes.find((n) => !killed.has(n.port))!.port, (r) => r.call('CLUSTER', 'KEYSLOT', key)));
        const owner = (await view()).find((n) => n.role === 'master' && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b));
        if (!owner) throw new Error(`no live master serves slot ${slot}`);
        return owner.port;
      },
      async kill(port) {
        const node = nodes.find((n) => n.port === port);
        if (!node) throw new Error(`no node on ${port}`);
        killed.add(port);
        clients.get(port)?.disconnect();
        clients.delete(port);
        process.kill(node.pid, 'SIGKILL');
        for (let i = 0; i < 100; i++) {
          try {
            process.kill(node.pid, 0);
          } catch {
            return;
          }
          await sleep(20);
        }
      },
      async restart(port) {
        const node = nodes.find((n) => n.port === port);
        const pair = pairs.find(([p]) => p === port);
        if (!node || !pair || !killed.has(port)) throw new Error(`node ${port} is not a killed node`);
        node.pid = await startNode(pair[0], pair[1]);
        killed.delete(port);
      },
      waitHealthy,
      client,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function readLog(dir: string, port: number): string {
  try {
    return fs.readFileSync(path.join(dir, String(port), 'redis.log'), 'utf8').slice(-2_000);
  } catch {
    return '(no log)';
  }
}

/** CLUSTER NODES: `id host:port@bus flags master-id ping pong epoch link slot…`. */
export function parseNodes(text: string): NodeView[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, addr, flags, master, , , , , ...slots] = line.trim().split(' ');
      const f = flags!.split(',');
      return {
        id: id!,
        port: Number(/:(\d+)@/.exec(addr!)?.[1]),
        role: f.includes('master') ? 'master' : 'replica',
        failed: f.includes('fail') || f.includes('fail?') || f.includes('noaddr'),
        masterId: master === '-' ? undefined : master,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [a, b] = s.split('-');
            return [Number(a), Number(b ?? a)] as [number, number];
          }),
      } satisfies NodeView;
    });
}
