// docs/deployment-and-scale-out.md (Redis Cluster): the API and a worker process on a real 3-master cluster with replicas. Every
// area's jobs run on it, the queues and per-user keys spread over the masters, and when a master is killed (SIGKILL)
// its replica takes over and the same processes carry on: every job completes and the content rows are exact.
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient, type Res } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { createTestDatabase, ROOT_PASSWORD, tempDir } from '../helpers/services.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';

let cluster: RedisCluster;
let dovecot: DovecotServer;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let dataDir: string;
let api: Spawned & { url: string };
let worker: Spawned;
let root: HttpClient;
let apiKey: string;
let db: pg.Client;
const email = `cluster-${Date.now()}@example.test`;
const QUEUES = ['content', 'embeddings', 'mail'] as const;

beforeAll(async () => {
  [cluster, dovecot, database] = await Promise.all([startRedisCluster(), startDovecot(), createTestDatabase()]);
  dataDir = tempDir('sy-cluster');
  // The cluster is this file's own, so the default QUEUE_PREFIX is used: what a deployment gets.
  const env = {
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    REDIS_URL: cluster.url,
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: undefined,
    DATA_DIR: dataDir,
    ROOT_PASSWORD,
    SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789',
    REDIS_AUTOSTART: 'false',
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    // A job whose worker lost its lock in the failover is run again soon.
    JOB_LOCK_MS: '5000',
    JOB_STALLED_INTERVAL_MS: '2000',
    CONTENT_CONCURRENCY: '1',
    // The spread check fails a dozen logins from this one address.
    LOGIN_MAX_FAILURES_PER_IP: '1000',
    SYNC_WAIT_MS: '10000',
  };
  [api, worker] = await Promise.all([spawnServer(['api'], env), spawnEntry('worker', [], { ...env, LOG_LEVEL: 'info' })]);
  await worker.waitFor(/workers started/);
  root = new HttpClient(api.url);
  await root.login('root', ROOT_PASSWORD);
  apiKey = (await root.post('/api/token/', { name: 'cluster', unlimited_quota: true })).body.data.key;
  await addPasswordAccount(root, dovecot, email);
  for (let i = 0; i < 3; i++)
    await dovecot.deliver(email, 'INBOX', buildMessage({ from: 'a@service.example', to: email, subject: `message ${i}`, text: 'hi' }));
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await Promise.all([api?.stop('SIGKILL'), worker?.stop('SIGKILL')]);
  await db?.end().catch(() => {});
  await Promise.all([cluster?.stop(), dovecot?.stop(), database?.drop()]);
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

let seq = 0;
const item = (source: string) => {
  seq++;
  return { source, url: `https://cluster.example/${source}/${seq}`, summary: `summary ${seq}`, content: `content of item ${seq}`, score: 5 };
};

/** Each area's job path through the API: a content batch, embeddings on local-hash-v1, a mail fetch on Dovecot. */
async function everyArea(label: string) {
  const batch = await root.post(
    '/api/content/batch',
    Array.from({ length: 25 }, () => item(`areas-${label}`)),
  );
  expect(batch.status, `${label} content: ${batch.text}`).toBe(200);
  expect(batch.body).toMatchObject({ success: 25, failed: 0 });
  const embeddings = await root.post('/v1/embeddings', { model: 'local-hash-v1', input: ['a queue on a cluster'] }, { authorization: `Bearer ${apiKey}` });
  expect(embeddings.status, `${label} embeddings: ${embeddings.text}`).toBe(200);
  expect(embeddings.body.data[0].embedding).toHaveLength(384);
  const mail = await root.post('/api/mail-all', { email });
  expect(mail.status, `${label} mail: ${mail.text}`).toBe(200);
  expect(mail.body.messages.map((m: { subject: string }) => m.subject).sort()).toEqual(['message 0', 'message 1', 'message 2']);
}

/** Every key on every live master, by master port. */
async function keysByMaster(): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  for (const node of (await cluster.view()).filter((n) => n.role === 'master' && !n.failed)) {
    const r = cluster.client(node.port);
    if (r.status === 'wait') await r.connect();
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await r.scan(cursor, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    out.set(node.port, keys);
  }
  return out;
}

/** Retries while the API answers 503 (a queue's master is failing over); anything else is returned. */
async function through503<T>(call: () => Promise<Res<T>>, timeoutMs = 60_000): Promise<Res<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call();
    if (res.status !== 503 || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('REDIS_CLUSTER_NODES', () => {
  it('is a comma list of host:port ([v6]:port too); anything else stops the start with a message naming it', () => {
    expect(parseConfig({ REDIS_CLUSTER_NODES: ' redis-1:7000, 10.0.0.2:7001,[::1]:7002 ' }).REDIS_CLUSTER_NODES).toEqual([
      { host: 'redis-1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(parseConfig({}).REDIS_CLUSTER_NODES).toBeUndefined();
    for (const bad of ['redis-1', 'redis-1:0', 'redis-1:70000', 'redis://redis-1:7000', 'a:1,b']) {
      expect(() => parseConfig({ REDIS_CLUSTER_NODES: bad }), bad).toThrow(/REDIS_CLUSTER_NODES/);
    }
  });
});

describe('on a Redis Cluster (3 masters, 3 replicas)', () => {
  it('/readyz says ready, and every area runs its jobs: a content batch, embeddings with local-hash-v1, a mail fetch on Dovecot', async () => {
    const ready = await root.get('/readyz');
    expect([ready.status, ready.body.checks]).toEqual([200, { postgres: 'ok', redis: 'ok' }]);
    await everyArea('first');
    for (const queue of QUEUES) expect((await root.post(`/api/jobs/ping?queue=${queue}`)).status, queue).toBe(200);
  });

  it("each queue's keys are in one slot of their own, and the three queues live on at least two masters; per-user login counters spread too", async () => {
    for (const queue of QUEUES) expect((await root.post(`/api/jobs/ping?queue=${queue}`)).status, queue).toBe(200);
    // Failed logins of a dozen users: each username's counter is a key of its own.
    const users = Array.from({ length: 12 }, (_, i) => `spread-user-${i}`);
    for (const username of users) expect((await new HttpClient(api.url).post('/api/user/login', { username, password: 'wrong-password' })).status).toBe(401);

    const byMaster = await keysByMaster();
    const mastersOf = (match: (k: string) => boolean) => [...byMaster].filter(([, keys]) => keys.some(match)).map(([port]) => port);
    const queueMasters = new Set<number>();
    for (const queue of QUEUES) {
      const owners = mastersOf((k) => k.startsWith(`{switchyard-${queue}}:${queue}:`));
      expect(owners, `${queue} keys live on exactly one master`).toHaveLength(1);
      queueMasters.add(owners[0]!);
    }
    expect(queueMasters.size).toBeGreaterThanOrEqual(2);
    // Nothing is left under the single-Redis prefix, which would put everything in one slot.
    expect([...byMaster.values()].flat().filter((k) => k.startsWith('{switchyard}'))).toEqual([]);

    const counterMasters = new Set<number>();
    for (const username of users) {
      const owners = mastersOf((k) => k.includes(':login-failures:') && k.endsWith(`:${username}}`));
      expect(owners, username).toHaveLength(1);
      counterMasters.add(owners[0]!);
    }
    expect(counterMasters.size).toBeGreaterThanOrEqual(2);
  });

  it("an upstream channel's Retry-After cooldown is kept on the cluster (read back with one MGET) and honoured", async () => {
    const [limited, spare] = await Promise.all([new FakeOpenAI().start(), new FakeOpenAI().start()]);
    try {
      for (const [name, up, priority] of [
        ['limited', limited, 10],
        ['spare', spare, 1],
      ] as const) {
        const res = await root.post('/api/channel/', {
          type: 'openai',
          key: `sk-upstream-${name}`,
          name,
          base_url: up.url,
          models: 'cluster-model',
          priority,
          weight: 1,
          price: 0,
        });
        expect(res.status, res.text).toBe(201);
      }
      limited.behaviour = { kind: 'status', status: 429, retryAfter: '60' };
      const call = (input: string) => root.post('/v1/embeddings', { model: 'cluster-model', input }, { authorization: `Bearer ${apiKey}` });
      // The worker reads the channel list every 2 s.
      let first = await call('first');
      for (let i = 0; i < 50 && first.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 200));
        first = await call('first');
      }
      expect(first.status, first.text).toBe(200);
      expect([limited.calls.length, spare.calls.length]).toEqual([1, 1]);
      limited.behaviour = { kind: 'ok' };
      expect((await call('second')).status).toBe(200);
      expect([limited.calls.length, spare.calls.length]).toEqual([1, 2]);
    } finally {
      await Promise.all([limited.stop(), spare.stop()]);
    }
  });

  it("the master of the API's reply channel killed (SIGKILL): the API listens on its successor and direct replies arrive at once again; the old master rejoins as a replica", async () => {
    // Where the API process listens for its jobs' direct replies (a sharded channel, on the master of its slot).
    const listening = async () => {
      const found: [number, string][] = [];
      for (const node of (await cluster.view()).filter((n) => n.role === 'master' && !n.failed)) {
        const r = cluster.client(node.port);
        if (r.status === 'wait') await r.connect();
        for (const channel of (await r.call('PUBSUB', 'SHARDCHANNELS', 'switchyard:replies:*')) as string[]) found.push([node.port, channel]);
      }
      return found;
    };
    const before = await listening();
    expect(before).toHaveLength(1);
    const [[victim, channel]] = before as [[number, string]];
    await cluster.kill(victim);
    await cluster.waitHealthy();
    // embeddings.create and the pings answer over that channel; each waits SYNC_WAIT_MS (10 s) at most for its
    // reply before it looks the job up, so an answer well within that came over the channel.
    for (const queue of QUEUES) {
      const started = Date.now();
      const res = await through503(() => root.post(`/api/jobs/ping?queue=${queue}`));
      expect(res.status, res.text).toBe(200);
      expect(Date.now() - started, queue).toBeLessThan(5_000);
    }
    const started = Date.now();
    const res = await through503(() =>
      root.post('/v1/embeddings', { model: 'local-hash-v1', input: ['after the failover'] }, { authorization: `Bearer ${apiKey}` }),
    );
    expect(res.status, res.text).toBe(200);
    expect(Date.now() - started).toBeLessThan(5_000);
    const after = await listening();
    expect(after.map(([, c]) => c)).toEqual([channel]);
    expect(after[0]![0]).not.toBe(victim);
    await cluster.restart(victim);
    await cluster.waitHealthy();
    expect((await cluster.view()).find((n) => n.port === victim)?.role).toBe('replica');
  }, 90_000);

  it("a queued job's answer (202) waits for its master's replica to have it; with the replica frozen, concurrent enqueues share that wait, and none is stuck behind the others", async () => {
    const masterPort = await cluster.masterOf('{switchyard-content}');
    const view = await cluster.view();
    const masterId = view.find((n) => n.port === masterPort)!.id;
    // Every replica of that master: after the failovers above, the cluster may have moved a second one to it, and one
    // replica left running would answer the WAIT.
    const replicaPorts = view.filter((n) => n.role === 'replica' && n.masterId === masterId && !n.failed).map((n) => n.port);
    const replicas = cluster.nodes.filter((n) => replicaPorts.includes(n.port));
    const replicaPort = replicaPorts[0]!;
    const queue = async () => {
      const started = Date.now();
      const res = await root.post('/api/content/batch', [item('replicated')], { prefer: 'respond-async' });
      expect(res.status, res.text).toBe(202);
      return { ms: Date.now() - started, jobId: res.body.jobId as string };
    };
    await queue(); // warm
    // The replica frozen (not long enough for the cluster to give up on it): the WAIT runs out before the 202s. Eight
    // enqueues at once share the waits (one WAIT each, in turn, would take eight times 250 ms on the connection).
    for (const replica of replicas) process.kill(replica.pid, 'SIGSTOP');
    let frozen: { ms: number }[];
    const started = Date.now();
    try {
      frozen = await Promise.all(Array.from({ length: 8 }, () => queue()));
    } finally {
      for (const replica of replicas) process.kill(replica.pid, 'SIGCONT');
    }
    const took = Date.now() - started;
    expect(Math.max(...frozen.map((f) => f.ms)), 'the 202s waited for the replica').toBeGreaterThanOrEqual(200);
    expect(took, 'eight enqueues shared the wait').toBeLessThan(8 * 250);
    // Back (and past the pause a run-out wait starts): right after a 202, the replica has the job.
    await cluster.waitHealthy();
    await new Promise((r) => setTimeout(r, 5_500));
    const { jobId } = await queue();
    const r = cluster.client(replicaPort);
    if (r.status === 'wait') await r.connect();
    await r.call('READONLY');
    expect(await r.exists(`{switchyard-content}:content:${jobId}`)).toBe(1);
  }, 60_000);

  it('a master killed (SIGKILL) mid-work: its replica takes over, the same API and worker processes carry on, every job completes, content rows exact', async () => {
    const apiPid = api.proc.pid;
    const workerPid = worker.proc.pid;
    const victim = await cluster.masterOf('{switchyard-content}');
    // Four clients queue 120 batches of 50 items (answered 202 at once; a 503 while the queue's master is away is
    // retried, as the Retry-After says), while the worker stores them.
    const BATCHES = 120;
    const SIZE = 50;
    const jobIds: string[] = [];
    let next = 0;
    const queueing = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < BATCHES) {
          next++;
          const items = Array.from({ length: SIZE }, () => item('failover'));
          const res = await through503(() => root.post('/api/content/batch', items, { prefer: 'respond-async' }));
          expect(res.status, res.text).toBe(202);
          jobIds.push(res.body.jobId);
        }
      }),
    );
    const stored = async () => Number((await db.query("select count(*)::int as n from content_items where source = 'failover'")).rows[0].n);
    // Kill the master of the content queue once a third of the batches are queued and the worker is under way.
    for (let i = 0; i < 1200 && (jobIds.length < BATCHES / 3 || (await stored()) < SIZE); i++) await new Promise((r) => setTimeout(r, 25));
    const queuedAtKill = jobIds.length;
    await cluster.kill(victim);
    const atKill = await stored();
    expect(atKill, 'queued work was still waiting or running when the master died').toBeLessThan(queuedAtKill * SIZE);

    // Synchronous calls made during the failover: answered (after 503s while the queue's master is away).
    const during = Array.from({ length: 3 }, () => {
      const items = Array.from({ length: 10 }, () => item('failover'));
      return through503(() => root.post('/api/content/batch', items));
    });
    await cluster.waitHealthy();
    expect(await cluster.masterOf('{switchyard-content}')).not.toBe(victim);
    await queueing;
    expect(jobIds).toHaveLength(BATCHES);
    for (const res of await Promise.all(during)) {
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ success: 10, failed: 0 });
    }

    // Every queued job completes, none fails.
    for (const id of jobIds) {
      let state = '';
      for (let i = 0; i < 600; i++) {
        const res = await through503(() => root.get(`/api/jobs/${id}`));
        expect(res.status, res.text).toBe(200);
        state = res.body.state;
        if (state === 'completed' || state === 'failed') {
          if (state === 'completed') expect(res.body.result).toMatchObject({ success: SIZE, failed: 0 });
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(state, id).toBe('completed');
    }
    // Nothing lost, nothing twice.
    const total = BATCHES * SIZE + 3 * 10;
    const { rows } = await db.query("select count(*)::int as n, count(distinct url)::int as urls from content_items where source = 'failover'");
    expect(rows[0]).toEqual({ n: total, urls: total });
    expect((await root.get('/api/stats')).body.bySource.failover).toBe(total);

    // The same processes, still serving every area.
    expect([api.proc.pid, worker.proc.pid]).toEqual([apiPid, workerPid]);
    expect([api.proc.exitCode, worker.proc.exitCode]).toEqual([null, null]);
    await everyArea('after-failover');
    // The cluster's password never reached a log line; SIGTERM still ends both processes cleanly.
    expect(api.output() + worker.output()).not.toContain(cluster.password);
    const [apiExit, workerExit] = await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM')]);
    expect([apiExit.code, workerExit.code]).toEqual([0, 0]);
  }, 180_000);
});
