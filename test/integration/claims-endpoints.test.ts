// The five endpoints the fuzz in faults.test.ts skips (logout would end its session; the others answer
// HTML or text, not JSON), each fuzzed on its own: no 5xx, JSON or the documented type, no hang.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;

beforeAll(async () => {
  // The fuzz sends wrong Basic passwords for root; the login limiter (tested elsewhere) would turn them into 429s.
  t = await startTestApp({ env: { LOGIN_MAX_FAILURES: '1000', LOGIN_MAX_FAILURES_PER_IP: '100000' } });
  await t.root.post('/api/user/', { username: 'plain', password: 'plain-password' });
});

afterAll(async () => {
  await t?.close();
});

// A seeded generator: a failure names the request, and reruns send the same ones.
let state = 0x5eed;
const rand = () => {
  state = (state * 1103515245 + 12345) & 0x7fffffff;
  return state / 0x7fffffff;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
const VALUES = [
  '',
  ' ',
  'null',
  '0',
  '-1',
  '1e309',
  'NaN',
  'true',
  '[]',
  '{}',
  '💥',
  '\u0000',
  '%00',
  '../../../etc/passwd',
  '<script>alert(1)</script>',
  "' or 1=1 --",
  'a'.repeat(4000),
  '__proto__',
  'constructor',
  '\ud800',
];
const KEYS = ['format', 'callback', 'debug', 'limit', 'cursor', 'q', 'name[]', '__proto__[x]', 'constructor', 'url', 'p', 'queue', 'status'];
const ACCEPTS = ['*/*', 'application/json', 'text/html', 'text/plain', 'application/xml', 'image/png', '', 'garbage/;;;'];
const AUTHS = [
  '',
  'Bearer ',
  'Bearer not-a-token',
  `Basic ${Buffer.from('root:wrong-password').toString('base64')}`,
  'Basic !!!',
  'Digest x',
  'x'.repeat(2000),
];

function randomQuery(): string {
  const q = new URLSearchParams();
  for (let n = Math.floor(rand() * 4); n > 0; n--) q.append(pick(KEYS), pick(VALUES));
  return q.size ? `?${q}` : '';
}

interface Sent {
  label: string;
  status: number;
  type: string;
  text: string;
  headers: Headers;
}

/** One request with a 15 s budget: an answer that never comes is a failure like a 5xx. */
async function send(method: string, path: string, headers: Record<string, string>): Promise<Sent> {
  const label = `${method} ${path.slice(0, 120)} ${JSON.stringify(headers).slice(0, 160)}`;
  const res = await fetch(t.url + path, { method, headers, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  return { label, status: res.status, type: res.headers.get('content-type') ?? '', text, headers: res.headers };
}

const JSON_TYPE = /^application\/json/;
/** Every error is JSON (docs/operations.md); a success has the endpoint's documented type. */
function check(r: Sent, okType: RegExp) {
  expect(r.status, `${r.label} → ${r.text.slice(0, 200)}`).toBeLessThan(500);
  expect(r.type, `${r.label} → ${r.status}`).toMatch(r.status < 400 ? okType : JSON_TYPE);
  if (JSON_TYPE.test(r.type)) expect(() => JSON.parse(r.text), r.label).not.toThrow();
}

const cookieOf = (c: HttpClient) => [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

/** Random queries, Accept and Authorization headers, with and without the root session; then the wrong methods. */
async function fuzz(path: string, okType: RegExp, also: (r: Sent, withSession: boolean) => void = () => {}) {
  for (let i = 0; i < 24; i++) {
    const withSession = i % 2 === 0;
    const headers: Record<string, string> = { accept: pick(ACCEPTS) };
    const auth = pick(AUTHS);
    if (auth) headers.authorization = auth;
    if (withSession) headers.cookie = cookieOf(t.root);
    else if (rand() < 0.5) headers.cookie = `sy_session=${pick(VALUES).replace(/[^\x21-\x7e]/g, '')}; sy_session.sig=x`;
    const r = await send('GET', path + randomQuery(), headers);
    check(r, okType);
    also(r, withSession);
  }
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    const r = await send(method, path, { cookie: cookieOf(t.root), origin: t.url, 'content-type': 'application/json' });
    expect([404, 405], r.label).toContain(r.status);
    check(r, JSON_TYPE);
  }
}

describe('the endpoints the fuzz skips, each on its own', () => {
  it('GET /docs: always the Swagger UI page (text/html), whatever the query and headers', async () => {
    await fuzz('/docs', /^text\/html/, (r) => {
      expect(r.status, r.label).toBe(200);
      expect(r.text).toContain('/docs/assets/swagger-ui-bundle.js');
    });
  });

  it('GET /openapi.json: always the same OpenAPI 3.1 JSON document, whatever the query and headers', async () => {
    const reference = await send('GET', '/openapi.json', {});
    expect(JSON.parse(reference.text).openapi).toMatch(/^3\.1/);
    await fuzz('/openapi.json', JSON_TYPE, (r) => {
      expect(r.status, r.label).toBe(200);
      expect(r.text, r.label).toBe(reference.text);
    });
  });

  it('GET /metrics: the Prometheus text format (METRICS_TOKEN unset), whatever the query and headers', async () => {
    await fuzz('/metrics', /^text\/plain; version=0\.0\.4/, (r) => {
      expect(r.status, r.label).toBe(200);
      expect(r.text).toMatch(/^# HELP switchyard_/m);
    });
  });

  it('GET /admin/queues: the board (text/html) for an admin session, 401 JSON with a Basic challenge otherwise, 403 JSON below admin', async () => {
    await fuzz('/admin/queues', /^text\/html/, (r, withSession) => {
      // A session wins over a bad Authorization header only when the header is not Basic (Basic is checked when sent).
      if (withSession && r.status === 200) expect(r.text, r.label).toMatch(/<html/i);
      else expect([200, 401], r.label).toContain(r.status);
    });
    const anon = await send('GET', '/admin/queues', {});
    expect(anon.status).toBe(401);
    check(anon, JSON_TYPE);
    expect(anon.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    const basic = await send('GET', '/admin/queues', { authorization: `Basic ${Buffer.from(`root:${ROOT_PASSWORD}`).toString('base64')}` });
    expect(basic.status).toBe(200);
    check(basic, /^text\/html/);
    const plain = new HttpClient(t.url);
    await plain.login('plain', 'plain-password');
    const below = await send('GET', '/admin/queues', { cookie: cookieOf(plain) });
    expect(below.status).toBe(403);
    check(below, JSON_TYPE);
  });

  it('GET /api/user/logout: ends the session it is sent with (envelope JSON), refuses a foreign origin with 403 JSON, never 5xx', async () => {
    for (let i = 0; i < 12; i++) {
      const c = new HttpClient(t.url);
      await c.login('plain', 'plain-password');
      const headers: Record<string, string> = { cookie: cookieOf(c), accept: pick(ACCEPTS) };
      // No Authorization header here: with a bad one next to the cookie, logout answers 200 but keeps the session
      // (authorize() fails on the header and the handler swallows it; reported on issue 11, not asserted either way).
      const foreign = i % 3 === 2;
      if (foreign) headers.origin = 'https://evil.example';
      const r = await send('GET', `/api/user/logout${randomQuery()}`, headers);
      check(r, JSON_TYPE);
      const still = (await c.get('/api/user/self')).status;
      if (foreign) {
        expect(r.status, r.label).toBe(403);
        expect(still, `${r.label}: the session survives a refused logout`).toBe(200);
      } else {
        expect(r.status, r.label).toBe(200);
        expect(JSON.parse(r.text)).toMatchObject({ success: true });
        expect(still, `${r.label}: the session is gone`).toBe(401);
      }
    }
    // Without any session, or with a garbage one, it is still a plain 200 envelope.
    for (const cookie of ['', 'sy_session=garbage', 'sy_session=; sy_session.sig=', `sy_session=${'x'.repeat(4000)}`]) {
      const r = await send('GET', `/api/user/logout${randomQuery()}`, cookie ? { cookie } : {});
      check(r, JSON_TYPE);
      expect(r.status, r.label).toBe(200);
    }
    // PUT and DELETE reach /api/user/:id with id "logout" (400 naming it); POST is no route (405).
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const r = await send(method, '/api/user/logout', { origin: t.url });
      expect(r.status, r.label).toBeGreaterThanOrEqual(400);
      check(r, JSON_TYPE);
    }
  });
});
