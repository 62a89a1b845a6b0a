// HTTP behaviour every area shares: JSON errors for everything, request ids, health probes, settings.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';
import { documentedEndpoints } from '../../src/http/app.js';
import { DRAIN_FACTOR, DRAIN_MS } from '../../src/http/body.js';
import { HttpClient } from '../helpers/http.js';
import { baseline, within } from '../helpers/pace.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';
import { ROOT_DIR, spawnServer } from '../helpers/spawn.js';

let t: TestApp;

/**
 * Writes `head` and then up to `total` body bytes in 64 KB writes (each after the previous one drained), and
 * stops writing as soon as the server answers or closes. `sent` counts the body bytes handed to the socket by then.
 * With `pauseAfter`, writes only that many bytes and then just waits for an answer.
 */
function uploadUntilAnswered(
  head: string,
  total: number,
  opts: { chunked?: boolean; pauseAfter?: number; timeoutMs?: number; url?: string } = {},
): Promise<{ status: number | null; sent: number; closedBeforeEnd: boolean }> {
  const port = Number(new URL(opts.url ?? t.url).port);
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let sent = 0;
    let answer = '';
    let finished = false;
    const chunk = Buffer.alloc(64 * 1024, 'y');
    const done = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      sock.destroy();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      resolve({ status: m ? Number(m[1]) : null, sent, closedBeforeEnd: sent < total });
    };
    const timer = setTimeout(done, opts.timeoutMs ?? 10_000);
    sock.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
      if (/\r\n\r\n/.test(answer)) done();
    });
    sock.on('error', done);
    sock.on('close', done);
    // One write per turn of the event loop, so an answer is read as soon as it comes (before more is written).
    const pump = () => {
      if (finished || sent >= Math.min(total, opts.pauseAfter ?? total)) {
        if (!finished && opts.chunked && sent >= total) sock.write('0\r\n\r\n');
        return;
      }
      const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
      sent += piece.length;
      const ok = sock.write(opts.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
      if (ok) setImmediate(pump);
      else sock.once('drain', pump);
    };
    sock.once('connect', () => {
      sock.write(head);
      pump();
    });
  });
}

beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await t?.close();
});

describe('errors are JSON in the area shape', () => {
  /** Sends `raw` bytes as they are and reads the whole answer until the server closes. */
  const rawExchange = (raw: string) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const sock = net.connect({ host: '127.0.0.1', port: Number(new URL(t.url).port) }, () => sock.write(raw));
      let answer = '';
      sock.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      sock.on('error', reject);
      sock.on('close', () => {
        const [head = '', body = ''] = answer.split('\r\n\r\n');
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), type: /content-type: ([^\r]+)/i.exec(head)?.[1] ?? '', body });
      });
    });

  it("requests Node's HTTP parser refuses (not HTTP; headers past the limit) are answered in JSON too, in both shapes", async () => {
    for (const [raw, status] of [
      ['GARBAGE\r\n\r\n', 400],
      ['GET /api/status HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 400],
      [`GET /api/content?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
    ] as const) {
      const res = await rawExchange(raw);
      expect(res.status, raw.slice(0, 30)).toBe(status);
      expect(res.type).toMatch(/application\/json/);
      const body = JSON.parse(res.body);
      expect(body).toMatchObject({ success: false, error: { code: 'bad_http_request' } });
    }
  });

  it('malformed JSON is 400', async () => {
    const res = await t.anon.post('/api/user/login', '{"username": "root", ');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/Malformed JSON/);
  });

  it('curl -d style JSON (form content type) is read as JSON', async () => {
    const res = await t.anon.post('/api/user/login', '{"username":"root","password":"nope-nope"}', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(401);
  });

  it('a body over the limit is 413 in the area shape', async () => {
    const big = JSON.stringify({ username: 'x', password: 'y'.repeat(12 * 1024 * 1024) });
    const res = await t.anon.post('/api/user/login', big);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, message: expect.stringMatching(/too large/) });
  });

  it('every Node fetch() of a 12 MB body gets the 413 JSON, none a broken pipe, whole or streamed: the server reads and drops the rest before it answers', async () => {
    // The server in a process of its own, as in use: in this one it could not answer while fetch() is busy sending.
    const api = await spawnServer(['api'], t.testEnv.env);
    const body = JSON.stringify({ source: 's', url: 'https://example.com/big', summary: 's', score: 5, content: 'y'.repeat(12 * 1024 * 1024) });
    /** The same body as a stream of 256 KB pieces (sent chunked), each after a turn of the event loop: a client still sending. */
    const streamed = () => {
      let at = 0;
      return new ReadableStream<Uint8Array>({
        async pull(c) {
          await new Promise((r) => setImmediate(r));
          if (at >= body.length) return c.close();
          c.enqueue(Buffer.from(body.slice(at, (at += 256 * 1024))));
        },
      });
    };
    const post = async (i: number) => {
      try {
        const init = { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer nobody' }, duplex: 'half' } as RequestInit;
        const res = await fetch(`${api.url}/api/content`, { ...init, body: i % 2 ? streamed() : body });
        return `${res.status} ${res.headers.get('content-type')} ${JSON.stringify(await res.json())}`;
      } catch (err) {
        const e = err as Error & { cause?: { code?: string } };
        return `${e.message} ${e.cause?.code ?? ''}`;
      }
    };
    // One after another, then all at once (the server busy with the others while each still sends).
    const outcomes: string[] = [];
    try {
      for (let i = 0; i < 12; i++) outcomes.push(await post(i));
      outcomes.push(...(await Promise.all(Array.from({ length: 12 }, (_, i) => post(i)))));
    } finally {
      await api.stop();
    }
    const limit = t.config.BODY_LIMIT_BYTES;
    expect(outcomes).toEqual(Array(24).fill(`413 application/json; charset=utf-8 {"error":"Request body too large (limit ${limit} bytes)"}`));
  });

  it('an unsupported content type is 415 to fetch() too, its 8 MB body read and dropped first', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${t.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: 'y'.repeat(8 * 1024 * 1024) });
      expect(res.status).toBe(415);
      expect(((await res.json()) as { success: boolean }).success).toBe(false);
    }
  });

  it('a declared Content-Length past the drain bound (4 × the limit) is 413 at once, before the body is sent', async () => {
    const limit = t.config.BODY_LIMIT_BYTES;
    const total = DRAIN_FACTOR * limit + 1;
    const head = `POST /api/user/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`;
    // 64 KB of the 40 MB, then silence: a server that waits for the body never answers.
    const res = await uploadUntilAnswered(head, total, { pauseAfter: 64 * 1024, timeoutMs: 5_000 });
    expect(res).toEqual({ status: 413, sent: 64 * 1024, closedBeforeEnd: true });
  });

  it(
    'a client that trickles an oversized body gets its 413 after DRAIN_MS at most, and the socket is closed',
    async () => {
      const limit = t.config.BODY_LIMIT_BYTES;
      const total = 2 * limit;
      const head = `POST /api/user/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`;
      // The limit and 64 KB past it, then silence: draining would wait for the rest for ever.
      const started = Date.now();
      const res = await uploadUntilAnswered(head, total, { pauseAfter: limit + 64 * 1024, timeoutMs: DRAIN_MS + 5_000 });
      expect(res).toEqual({ status: 413, sent: limit + 64 * 1024, closedBeforeEnd: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(DRAIN_MS - 500);
    },
    DRAIN_MS + 15_000,
  );

  it('a chunked body that goes on past the drain bound is cut off with 413: the server stops reading there, not at the end of the 400 MB', async () => {
    const limit = t.config.BODY_LIMIT_BYTES;
    const total = 40 * limit;
    const head = 'POST /api/user/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const res = await uploadUntilAnswered(head, total, { chunked: true, timeoutMs: 30_000 });
    expect(res.status).toBe(413);
    expect(res.sent).toBeGreaterThan(DRAIN_FACTOR * limit);
    // What the client had written when the answer came: the bound plus what socket buffers held.
    expect(res.sent).toBeLessThan((DRAIN_FACTOR + 1) * limit);
  });

  it('a JSON body labelled text/plain (what fetch() sends for a string) is read as JSON; text that is not JSON stays text', async () => {
    const item = { source: 'plain', url: `https://example.com/plain-${Date.now()}`, summary: 's', content: 'c', score: 5 };
    const created = await t.root.post('/api/content', JSON.stringify(item), { 'content-type': 'text/plain;charset=UTF-8' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ url: item.url, source: 'plain' });
    // Not JSON (or too deep to be read as such): the route gets the text, and says what it expected.
    for (const body of ['{not json', `${'['.repeat(100)}${']'.repeat(100)}`]) {
      const res = await t.root.post('/api/content', body, { 'content-type': 'text/plain' });
      expect(res.status, body.slice(0, 10)).toBe(400);
      expect(res.body).toEqual({ error: 'Item must be a JSON object' });
    }
  });

  it('an unsupported content type is 415', async () => {
    const res = await t.anon.post('/api/user/login', '<xml/>', { 'content-type': 'application/xml' });
    expect(res.status).toBe(415);
    expect(res.body.success).toBe(false);
  });

  it('an unknown route is 404 JSON, also under /api and /v1', async () => {
    for (const path of ['/nothing-here', '/api/nothing', '/v1/nothing']) {
      const res = await t.anon.get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
    }
    expect((await t.anon.get('/nothing-here')).body).toEqual({ error: 'No route for GET /nothing-here' });
    expect((await t.anon.get('/v1/nothing')).body.error).toMatchObject({ message: expect.any(String), type: 'invalid_request_error' });
  });

  it("one-api's collection paths answer without their trailing slash too (/api/token as /api/token/), query kept", async () => {
    const made = await t.root.post('/api/token', { name: 'no-slash', unlimited_quota: true });
    expect(made.status, made.text).toBe(201);
    expect(made.body.data.key).toMatch(/^sk-/);
    const tokens = await t.root.get('/api/token?page_size=100');
    expect(tokens.status).toBe(200);
    expect(tokens.body.data.map((x: { name: string }) => x.name)).toContain('no-slash');
    const users = await t.root.get('/api/user?page_size=1');
    expect(users.status).toBe(200);
    expect(users.body.data).toHaveLength(1);
    for (const path of ['/api/redemption', '/api/channel', '/api/log']) expect((await t.root.get(path)).status, path).toBe(200);
    // Not a way around the method rules: a wrong method there is still 405 with Allow.
    const wrong = await t.root.request('PATCH', '/api/token');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('POST');
  });

  it('a wrong method is 405 with Allow', async () => {
    const res = await t.anon.request('PATCH', '/api/user/login');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('POST');
    expect(res.body.success).toBe(false);
    const opts = await t.anon.request('OPTIONS', '/api/token/');
    expect(opts.status).toBe(204);
    expect(opts.headers.get('allow')).toContain('GET');
  });

  it('no stack traces or HTML in any error, and an answer within 5 s: every documented endpoint, anonymous and as an admin, with bad bodies, bad parameters and wrong methods', async () => {
    // Its own session: one of the endpoints is logout (sorted last).
    const admin = new HttpClient(t.url);
    await admin.login('root', ROOT_PASSWORD);
    const cookie = [...admin.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const endpoints = documentedEndpoints(t.platform).sort((a, b) => Number(a.path === '/api/user/logout') - Number(b.path === '/api/user/logout'));
    expect(endpoints.length).toBeGreaterThan(40);
    const problems: string[] = [];
    let checked = 0;
    const check = async (who: 'anonymous' | 'admin', method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
      const label = `${who} ${method} ${path}${body ? ` ${body.slice(0, 12)}` : ''}`;
      checked++;
      let res: Response;
      let text: string;
      try {
        res = await fetch(t.url + path, {
          method,
          body,
          redirect: 'manual',
          headers: { origin: t.url, ...(body ? { 'content-type': 'application/json' } : {}), ...(who === 'admin' ? { cookie } : {}), ...headers },
          signal: AbortSignal.timeout(5_000),
        });
        text = await res.text();
      } catch (err) {
        problems.push(`${label}: ${(err as Error).name === 'TimeoutError' ? 'no answer within 5 s' : (err as Error).message}`);
        return;
      }
      if (res.status < 400) return;
      if (/<html|<!doctype|\bat .+\.[jt]s:\d+|\n\s+at /i.test(text)) problems.push(`${label}: ${res.status} HTML or a stack trace: ${text.slice(0, 100)}`);
      if (!/application\/json/.test(res.headers.get('content-type') ?? '')) problems.push(`${label}: ${res.status} ${res.headers.get('content-type')}`);
      // 503/504 are documented answers (a job nobody runs here); any other 5xx is a failure.
      if (res.status >= 500 && res.status !== 503 && res.status !== 504) problems.push(`${label}: ${res.status} ${text.slice(0, 100)}`);
    };
    for (const e of endpoints) {
      const method = e.method.toUpperCase();
      const hasBody = method !== 'GET' && method !== 'DELETE';
      for (const param of ['1', 'no-such-thing', '%00', encodeURIComponent("'; drop table users; --")]) {
        const path = e.path.replace(/:[A-Za-z]+/g, param);
        for (const who of ['anonymous', 'admin'] as const) {
          await check(who, method, `${path}?limit=-1&p=x&email=%00&since=yesterday&cursor=%ff&queue=nope`, hasBody ? '{"broken": ' : undefined);
          if (hasBody) await check(who, method, path, `${'['.repeat(100)}${']'.repeat(100)}`);
        }
      }
      for (const wrong of ['PATCH', 'PUT']) if (wrong !== method) await check('admin', wrong, e.path.replace(/:[A-Za-z]+/g, '1'), '{}');
      await check('admin', 'PATCH', e.path.replace(/:[A-Za-z]+/g, '1'));
    }
    for (const path of ['/x', '/api/nothing', '/v1/nothing', '/admin/queues/api/nothing', '/docs/nothing']) await check('admin', 'GET', path);
    await check('anonymous', 'DELETE', '/healthz');
    await check('admin', 'POST', '/api/content', '<xml/>', { 'content-type': 'application/xml' });
    expect(checked).toBeGreaterThan(endpoints.length * 10);
    expect(problems).toEqual([]);
  }, 90_000);
});

describe('a body that does not arrive in time', () => {
  let slow: TestApp;
  beforeAll(async () => {
    slow = await startTestApp({ workers: false, env: { BODY_READ_TIMEOUT_MS: '1500' } });
  });
  afterAll(async () => {
    await slow?.close();
  });

  it('a body under the limit sent only in part is answered 408 after BODY_READ_TIMEOUT_MS and its socket closed (no credentials needed to hold one)', async () => {
    const total = 1024 * 1024;
    const head = `POST /api/content HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`;
    // A whole small request's time, this run: the slack allowed past BODY_READ_TIMEOUT_MS below.
    const healthy = await baseline(() => slow.anon.post('/api/content', {}));
    const started = Date.now();
    const res = await uploadUntilAnswered(head, total, { pauseAfter: 128 * 1024, timeoutMs: 10_000, url: slow.url });
    expect(res).toEqual({ status: 408, sent: 128 * 1024, closedBeforeEnd: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(Date.now() - started).toBeLessThan(within(1_500, healthy));
  });
});

describe('request ids and probes', () => {
  it('returns X-Request-Id, echoing a sane incoming one', async () => {
    const generated = await t.anon.get('/healthz');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await t.anon.get('/healthz', { 'x-request-id': 'abc-123' })).headers.get('x-request-id')).toBe('abc-123');
    expect((await t.anon.get('/healthz', { 'x-request-id': 'bad id with spaces' })).headers.get('x-request-id')).not.toBe('bad id with spaces');
  });

  it('/healthz and /readyz', async () => {
    expect((await t.anon.get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await t.anon.get('/readyz')).body).toEqual({
      status: 'ready',
      checks: { postgres: 'ok', redis: 'ok' },
      models: { 'use-lite': 'not loaded by any worker yet' },
    });
  });
});

describe('settings', () => {
  it('a bad value stops parsing with a message naming the variable', () => {
    const bad = (env: Record<string, string>) => () => parseConfig(env);
    expect(bad({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(bad({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(bad({ REDIS_URL: 'localhost:6379' })).toThrow(/REDIS_URL/);
    expect(bad({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(bad({ ROOT_PASSWORD: 'short' })).toThrow(/ROOT_PASSWORD/);
    expect(bad({ WORKER_QUEUES: 'content,nope' })).toThrow(/WORKER_QUEUES.*nope/);
    expect(bad({ TRUST_PROXY: 'maybe' })).toThrow(/TRUST_PROXY/);
  });

  it('defaults match the manual: every row of the settings tables (docs/configuration.md, README) is what parseConfig({}) gives', () => {
    const all = manualSettings('docs/configuration.md', '## All settings');
    expect(all.length).toBeGreaterThanOrEqual(40);
    const summary = manualSettings('README.md', '## Settings');
    expect(summary.length).toBeGreaterThanOrEqual(10);
    const rows = [...all, ...summary];
    const c = parseConfig({}) as unknown as Record<string, unknown>;
    expect(Object.isFrozen(c)).toBe(true);
    expect(c.embeddedDb).toBe(true);
    const mismatches: string[] = [];
    for (const { name, documented } of rows) {
      if (!(name in c) && !['unset', 'generated'].includes(documented)) {
        mismatches.push(`${name}: documented but not a setting`);
        continue;
      }
      // "unset": no value; "generated": SECRET_KEY, made at start (into DATA_DIR), not by parsing. Otherwise the
      // documented default, set explicitly, must parse to the same value as leaving the variable out.
      let expected: unknown;
      if (documented === 'unset' || documented === 'generated') expected = undefined;
      else expected = parseConfig({ [name]: documented === 'empty' ? '' : documented } as NodeJS.ProcessEnv)[name as keyof ReturnType<typeof parseConfig>];
      if (JSON.stringify(c[name]) !== JSON.stringify(expected) || (expected === undefined) !== (c[name] === undefined))
        mismatches.push(`${name}: the manual says ${documented}, parseConfig({}) gives ${JSON.stringify(c[name])}`);
    }
    expect(mismatches).toEqual([]);
  });

  it('every setting in src/config.ts has a row in the settings table of docs/configuration.md', () => {
    const documented = new Set(manualSettings('docs/configuration.md', '## All settings').map((r) => r.name));
    // NODE_ENV is Node's convention, not a Switchyard setting; embeddedDb is derived from DATABASE_URL.
    const undocumented = Object.keys(parseConfig({})).filter((k) => !documented.has(k) && k !== 'NODE_ENV' && k !== 'embeddedDb');
    expect(undocumented).toEqual([]);
  });
});

/**
 * A settings table of the manual (the section under `heading` in `file`) as (variable, documented default) pairs;
 * "`A` / `_B`" rows name A and A's stem + _B.
 */
function manualSettings(file: string, heading: string): { name: string; documented: string }[] {
  const text = fs.readFileSync(path.join(ROOT_DIR, file), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `${file} has a "${heading}" section`).toBeGreaterThanOrEqual(0);
  const end = text.indexOf('\n## ', start + heading.length + 1);
  const section = text.slice(start, end === -1 ? undefined : end);
  const out: { name: string; documented: string }[] = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((x) => x.trim());
    if (cells.length < 4 || !cells[1]!.startsWith('`')) continue;
    const names = cells[1]!.split('/').map((x) => x.trim().replace(/`/g, ''));
    const defaults = cells[2]!.split(' / ').map((x) => x.trim().replace(/^`|`$/g, ''));
    expect(defaults.length, line).toBe(names.length);
    names.forEach((n, i) => {
      const name = n.startsWith('_') ? names[0]!.replace(/_[A-Z]+$/, '') + n : n;
      out.push({ name, documented: defaults[i]! });
    });
  }
  return out;
}
