// Traces across processes (docs/operations.md#traces): an API process (exporting OTLP/HTTP protobuf) and a worker
// process (OTLP/HTTP JSON), both real entry points, send their spans to an OTLP receiver on loopback. A /v1/embeddings
// call, a mail-new and a send-mail each make one trace that crosses both processes, and no secret is in any of it.
// Off (no OTEL_* variables), a process loads nothing of OpenTelemetry.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient, type Res } from '../helpers/http.js';
import { startOtlpReceiver, type AttrValue, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { createTestEnv, ROOT_PASSWORD, tempDir, type TestEnv } from '../helpers/services.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';
import { spawnEntry, spawnServer, type Spawned } from '../helpers/spawn.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const mark = () => crypto.randomBytes(6).toString('hex');
const EMAIL = `traces-${mark()}@example.test`;
const MAIL_PASSWORD = `mail-pass-${mark()}`;
const MAIL_BODY = `the body of a private mail ${mark()}`;
const MAIL_SUBJECT = `subject ${mark()}`;
const EMBED_TEXT = `a private text to embed ${mark()}`;
const SENT_TEXT = `a private outgoing mail ${mark()}`;
const DB_PASSWORD = `db-pass-${mark()}`;
const UPSTREAM_KEY = `sk-upstream-${mark()}`;
const RELAY_TEXT = `a private text to relay ${mark()}`;
const RECORDER = path.resolve(import.meta.dirname, '../helpers/import-recorder.mjs');

let receiver: OtlpReceiver;
let hooks: Receiver;
let upstream: FakeOpenAI;
let dovecot: DovecotServer;
let smtp: SmtpTestServer;
let testEnv: TestEnv;
let api: Spawned & { url: string };
let worker: Spawned;
let root: HttpClient;
let key: string;
let webhookSecret: string;
let importLogs: string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; spans so far: ${receiver.spans.map((s) => s.name).join(', ')}`);
    await sleep(50);
  }
}

const traceOf = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
/** The server span of the request that got this answer (by its X-Request-Id). */
const serverSpanOf = (res: Res) => receiver.spans.find((s) => s.kind === 2 && s.attributes['switchyard.request_id'] === res.headers.get('x-request-id'));
const pidOf = (s: ReceivedSpan) => s.resource['process.pid'];

/** The span's ancestors up to the trace's root, through parentSpanId. */
function ancestry(span: ReceivedSpan, all: ReceivedSpan[]): ReceivedSpan[] {
  const byId = new Map(all.map((s) => [s.spanId, s]));
  const chain: ReceivedSpan[] = [];
  for (let s: ReceivedSpan | undefined = span; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined) chain.push(s);
  return chain;
}

/**
 * The chain of spans from `span` up to `root`, once every span between them has come in (each process exports in
 * batches of its own, so a child may arrive before its parent); it fails if the chain never reaches `root`.
 */
const chainTo = (span: ReceivedSpan, root: ReceivedSpan) =>
  until(`the chain from ${span.name} to ${root.name}`, () => {
    const chain = ancestry(span, traceOf(root.traceId));
    return chain.at(-1) === root && chain;
  });

/** A request's trace once the span `wanted` picks (a worker's) is in and linked up to the API's server span, its root. */
async function traceOfRequest(res: Res, name: string, wanted: (s: ReceivedSpan) => boolean) {
  const server = await until(`the server span of ${name}`, () => serverSpanOf(res));
  expect(server.name).toBe(name);
  const consumer = await until(`the wanted span in the trace of ${name}`, () => traceOf(server.traceId).find(wanted));
  const chain = await chainTo(consumer, server);
  return { server, consumer, chain, spans: traceOf(server.traceId) };
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  hooks = await startReceiver();
  upstream = await new FakeOpenAI().start();
  dovecot = await startDovecot();
  smtp = await startSmtp({ users: { [EMAIL]: MAIL_PASSWORD } });
  await dovecot.addUser(EMAIL, MAIL_PASSWORD);
  await dovecot.deliver(EMAIL, 'INBOX', buildMessage({ from: 'Sender <sender@example.test>', to: EMAIL, subject: MAIL_SUBJECT, text: MAIL_BODY }));
  testEnv = await createTestEnv();
  // A password in the database URL (the test Postgres trusts loopback, so any password connects).
  const dbUrl = new URL(testEnv.env.DATABASE_URL!);
  dbUrl.password = DB_PASSWORD;
  importLogs = tempDir('imports');
  const traced = {
    ...testEnv.env,
    DATABASE_URL: dbUrl.toString(),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_SERVICE_NAME: 'switchyard-traces-test',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
  api = await spawnServer(['api'], {
    ...traced,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    NODE_OPTIONS: `--import ${RECORDER}`,
    IMPORT_LOG: path.join(importLogs, 'api-on.log'),
  });
  worker = spawnEntry('worker', [], { ...traced, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', WORKER_QUEUES: 'embeddings,mail,webhooks', LOG_LEVEL: 'info' });
  await worker.waitFor(/workers started/);
  root = new HttpClient(api.url);
  await root.login('root', ROOT_PASSWORD);
  key = (await root.post('/api/token/', { name: 'traces', unlimited_quota: true })).body.data.key;
  const account = await root.post('/api/mail/accounts', {
    email: EMAIL,
    auth: { type: 'password', password: MAIL_PASSWORD },
    imap: { host: dovecot.host, port: dovecot.port, secure: false },
    smtp: { host: smtp.host, port: smtp.port, secure: false },
  });
  expect(account.status, account.text).toBe(201);
  const hook = await root.post('/api/webhooks', { url: `${hooks.url}/hook`, event_types: ['job.completed'] });
  expect(hook.status, hook.text).toBe(201);
  webhookSecret = hook.body.secret;
  const channel = await root.post('/api/channel/', {
    type: 'openai',
    name: 'traced-upstream',
    base_url: upstream.url,
    key: UPSTREAM_KEY,
    models: 'relayed-model',
    price: 1,
    priority: 0,
    weight: 1,
  });
  expect(channel.status, channel.text).toBe(201);
  // The relayed model is priced: root gives itself quota.
  const quota = await root.put('/api/user/self', { quota: 1_000_000 });
  expect(quota.status, quota.text).toBe(200);
}, 180_000);

afterAll(async () => {
  await Promise.all([api?.stop(), worker?.stop()]);
  await Promise.all([receiver?.close(), hooks?.close(), upstream?.stop(), dovecot?.stop(), smtp?.stop()]);
  await testEnv?.cleanup();
  if (importLogs) fs.rmSync(importLogs, { recursive: true, force: true });
});

describe('traces on (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  it('a /v1/embeddings call is one trace from the API request through the enqueue to the worker that embedded it', async () => {
    const res = await new HttpClient(api.url).withAuth(`Bearer ${key}`).post('/v1/embeddings', { model: 'local-hash-v1', input: [EMBED_TEXT] });
    expect(res.status, res.text).toBe(200);
    const { server, consumer, chain, spans } = await traceOfRequest(res, 'POST /v1/embeddings', (s) => s.kind === 5 && s.name === 'process embeddings');
    // Two processes, each with its own encoding: the API's protobuf and the worker's JSON, decoded into one trace.
    expect(server.encoding).toBe('protobuf');
    expect(consumer.encoding).toBe('json');
    expect(pidOf(server)).not.toBe(pidOf(consumer));
    expect(server.resource['service.name']).toBe('switchyard-traces-test');
    expect(server.resource['switchyard.process']).toBe('api');
    expect(consumer.resource['switchyard.process']).toBe('worker');
    for (const attr of ['host.name', 'service.instance.id']) expect(typeof server.resource[attr], attr).toBe('string');
    expect(server.resource['service.instance.id']).not.toBe(consumer.resource['service.instance.id']);
    expect(server.attributes['http.route']).toBe('/v1/embeddings');
    expect(server.attributes['http.response.status_code']).toBe(200);
    // The worker's span descends from the request's: request, the coalesced job, BullMQ's add (producer), process.
    expect(chain.map((s) => s.name)).toEqual(['process embeddings', 'add embeddings.embeddings.create', 'embeddings.job', 'POST /v1/embeddings']);
    // Redis on both sides: the API's enqueue and the worker's reply.
    const redis = spans.filter((s) => s.attributes['db.system.name'] === 'redis');
    expect(new Set(redis.map(pidOf))).toEqual(new Set([pidOf(server), pidOf(consumer)]));
  });

  it('a mail-new is one trace from the API request through the mail job (IMAP) to the webhook delivery its end made', async () => {
    // msOauth2api's style: the API key rides in the query string as `password`.
    const res = await new HttpClient(api.url).get(`/api/mail-new?email=${encodeURIComponent(EMAIL)}&password=${key}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.message.subject).toBe(MAIL_SUBJECT);
    const { server, consumer, spans } = await traceOfRequest(res, 'GET /api/mail-new', (s) => s.kind === 5 && s.name === 'process mail');
    expect(pidOf(server)).not.toBe(pidOf(consumer));
    // The path, never the query string.
    expect(server.attributes['url.path']).toBe('/api/mail-new');
    const names = new Set(spans.map((s) => s.name));
    for (const n of ['imap.session', 'imap.connect', 'imap.fetch', 'imap.logout']) expect(names, n).toContain(n);
    const fetch = spans.find((s) => s.name === 'imap.fetch')!;
    expect(fetch.attributes['switchyard.mail.messages']).toBe(1);
    expect(await chainTo(fetch, server)).toContain(consumer);
    // Postgres: the worker read the account (and stored the message) inside the job.
    expect(spans.some((s) => s.attributes['db.system.name'] === 'postgresql' && pidOf(s) === pidOf(consumer))).toBe(true);
    // The job's end is announced to the webhook endpoint by a delivery job in the same trace, with its POST.
    await until('the webhook delivery', () => hooks.requests.length > 0);
    const post = await until('the delivery POST span', () =>
      traceOf(server.traceId).find((s) => s.kind === 3 && s.name === 'POST' && s.attributes['url.path'] === '/hook'),
    );
    const delivery = await chainTo(post, server);
    expect(delivery.map((s) => s.name)).toContain('webhook.deliver');
    expect(post.attributes['http.response.status_code']).toBe(200);
    // The trace context is not sent to the receiver.
    expect(hooks.requests[0]!.headers.traceparent).toBeUndefined();
  });

  it('a send-mail is one trace through the mail job and its SMTP span', async () => {
    const res = await new HttpClient(api.url)
      .withAuth(`Bearer ${key}`)
      .post('/api/send-mail', { email: EMAIL, to: 'friend@example.test', subject: 'hello', text: SENT_TEXT });
    expect(res.status, res.text).toBe(200);
    const { server, consumer } = await traceOfRequest(res, 'POST /api/send-mail', (s) => s.name === 'smtp.send');
    expect(pidOf(server)).not.toBe(pidOf(consumer));
    expect(consumer.attributes['switchyard.mail.recipients']).toBe(1);
  });

  it("a relayed call's upstream request is a client span in the request's trace, and gets no trace context", async () => {
    const client = new HttpClient(api.url).withAuth(`Bearer ${key}`);
    // The API reads channels every 2 s: the new one may not be known yet.
    let res = await client.post('/v1/embeddings', { model: 'relayed-model', input: [RELAY_TEXT] });
    for (let i = 0; res.status !== 200 && i < 50; i++) {
      await sleep(100);
      res = await client.post('/v1/embeddings', { model: 'relayed-model', input: [RELAY_TEXT] });
    }
    expect(res.status, res.text).toBe(200);
    const port = Number(new URL(upstream.url).port);
    const { server, consumer: post } = await traceOfRequest(res, 'POST /v1/embeddings', (s) => s.kind === 3 && s.attributes['server.port'] === port);
    expect(post.name).toBe('POST');
    expect(post.attributes['http.response.status_code']).toBe(200);
    expect(pidOf(post)).toBe(pidOf(server));
    expect(upstream.calls.at(-1)!.headers.traceparent).toBeUndefined();
  });

  it("continues a caller's trace (traceparent), and makes none for /healthz, /readyz and /metrics", async () => {
    const traceId = crypto.randomBytes(16).toString('hex');
    const parent = crypto.randomBytes(8).toString('hex');
    const client = new HttpClient(api.url);
    for (const p of ['/healthz', '/readyz', '/metrics']) expect((await client.get(p)).status, p).toBeLessThan(600);
    const res = await client.get('/api/status', { traceparent: `00-${traceId}-${parent}-01` });
    expect(res.status).toBe(200);
    const server = await until('the server span of /api/status', () => serverSpanOf(res));
    expect(server.traceId).toBe(traceId);
    expect(server.parentSpanId).toBe(parent);
    expect(receiver.spans.filter((s) => ['/healthz', '/readyz', '/metrics'].includes(String(s.attributes['url.path'])))).toEqual([]);
  });

  it('no span holds a secret: keys, passwords, the session, texts, mails, the webhook secret or the database password', async () => {
    // Everything the three calls above made has been exported (the last spans come a batch delay after the answers).
    await sleep(1_000);
    const secrets = {
      key,
      keyBody: key.replace(/^sk-/, ''),
      rootPassword: ROOT_PASSWORD,
      mailPassword: MAIL_PASSWORD,
      mailBody: MAIL_BODY,
      embedText: EMBED_TEXT,
      relayText: RELAY_TEXT,
      upstreamKey: UPSTREAM_KEY,
      sentText: SENT_TEXT,
      secretKey: testEnv.env.SECRET_KEY!,
      session: [...root.cookies.values()].join('; '),
      webhookSecret,
      webhookSecretBody: webhookSecret.replace(/^whsec_/, ''),
      dbPassword: DB_PASSWORD,
    };
    for (const [name, value] of Object.entries(secrets)) expect(value.length, name).toBeGreaterThan(8);
    const values: string[] = [];
    const walk = (v: AttrValue) => {
      if (v === null) return;
      if (Array.isArray(v)) v.forEach(walk);
      else if (typeof v === 'object') Object.values(v).forEach(walk);
      else values.push(String(v));
    };
    for (const s of receiver.spans) {
      values.push(s.name);
      for (const attrs of [s.attributes, s.resource, ...s.events.map((e) => e.attributes), ...s.links.map((l) => l.attributes)])
        for (const [k, v] of Object.entries(attrs)) {
          values.push(k);
          walk(v);
        }
    }
    expect(receiver.spans.length).toBeGreaterThan(20);
    for (const [name, secret] of Object.entries(secrets)) {
      expect(
        values.filter((v) => v.includes(secret)),
        name,
      ).toEqual([]);
      // And in the bytes as exported, whatever field they might have been in.
      expect(receiver.bodies.filter((b) => b.includes(secret)).length, `${name} in an export`).toBe(0);
    }
    // No header either: the Authorization scheme and cookie names never appear.
    expect(values.filter((v) => /bearer|authorization|cookie/i.test(v))).toEqual([]);
    // A Redis command is recorded by its name alone (its arguments are job data, cached values, keys).
    const redis = receiver.spans.filter((s) => s.attributes['db.system.name'] === 'redis');
    expect(redis.length).toBeGreaterThan(0);
    expect(redis.filter((s) => s.attributes['db.query.text'] !== s.name).map((s) => s.attributes['db.query.text'])).toEqual([]);
    // BullMQ's job-completed event is kept without the job's result.
    const completions = receiver.spans.flatMap((s) => s.events).filter((e) => e.name === 'job completed');
    expect(completions.length).toBeGreaterThan(0);
    expect(completions.filter((e) => 'bullmq.job.result' in e.attributes)).toEqual([]);
  });
});

describe('other settings', () => {
  it('OTEL_TRACES_EXPORTER=console prints the spans (service.name switchyard when not set); an exporter it does not know stops the process naming the variable', async () => {
    const consoleApi = await spawnServer(['api'], { ...testEnv.env, OTEL_TRACES_EXPORTER: 'console', OTEL_BSP_SCHEDULE_DELAY: '100' });
    try {
      expect((await new HttpClient(consoleApi.url).get('/api/status')).status).toBe(200);
      await consoleApi.waitFor(/name: 'GET \/api\/status'/, 20_000);
      expect(consoleApi.output()).toMatch(/'service\.name': 'switchyard'/);
    } finally {
      await consoleApi.stop();
    }
    const bad = spawnEntry('server', ['api'], { ...testEnv.env, OTEL_TRACES_EXPORTER: 'zipkin' });
    expect((await bad.exited).code).toBe(1);
    expect(bad.output()).toContain('switchyard: invalid configuration: OTEL_TRACES_EXPORTER: "zipkin" is not one of otlp, console, none');
  });
});

describe('traces off (no OTEL_* variables)', () => {
  it('a process loads no OpenTelemetry module at all; the traced one loaded the SDK', async () => {
    const off = await spawnServer(['api'], { ...testEnv.env, NODE_OPTIONS: `--import ${RECORDER}`, IMPORT_LOG: path.join(importLogs, 'api-off.log') });
    try {
      const res = await new HttpClient(off.url).withAuth(`Bearer ${key}`).post('/v1/embeddings', { model: 'local-hash-v1', input: ['x'] });
      expect(res.status, res.text).toBe(200);
    } finally {
      await off.stop();
    }
    const loaded = fs.readFileSync(path.join(importLogs, 'api-off.log'), 'utf8').split('\n');
    expect(loaded.some((u) => u.includes('/src/server.ts'))).toBe(true);
    expect(loaded.filter((u) => /@opentelemetry|bullmq-otel|telemetry-sdk/.test(u))).toEqual([]);
    // The recorder sees them when they are loaded: the traced API process above loaded the SDK.
    const on = fs.readFileSync(path.join(importLogs, 'api-on.log'), 'utf8');
    expect(on).toContain('telemetry-sdk');
    expect(on).toContain('@opentelemetry/sdk-trace-node');
  });
});
