// Every documented endpoint enforces the auth it documents (issue 23): the declaration (src/http/route.ts) is the
// enforcement, so /openapi.json's `auth` of each route is tried with no credentials, a common user, an admin and root,
// and (for /v1) an sk- key: 401 where a credential is missing, 403 insufficient_role below the documented role,
// neither at or above it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedEndpoints } from '../../src/http/app.js';
import type { Auth, Endpoint } from '../../src/http/route.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let common: HttpClient;
let admin: HttpClient;
let key: string;

beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_MAX_FAILURES: '1000', LOGIN_MAX_FAILURES_PER_IP: '100000' } });
  expect((await t.root.post('/api/user/', { username: 'plain', password: 'plain-password' })).status).toBe(201);
  expect((await t.root.post('/api/user/', { username: 'boss', password: 'boss-password', role: 10 })).status).toBe(201);
  common = new HttpClient(t.url);
  expect((await common.login('plain', 'plain-password')).status).toBe(200);
  admin = new HttpClient(t.url);
  expect((await admin.login('boss', 'boss-password')).status).toBe(200);
  const made = await common.post('/api/token/', { name: 'route-auth', unlimited_quota: true });
  expect(made.status).toBe(201);
  key = made.body.data.key;
  expect(key).toMatch(/^sk-/);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

/** A path with placeholders that name nothing stored (the answer past auth is a 400 or 404, never a change). */
const concrete = (e: Endpoint) =>
  e.path.replace(/:([A-Za-z]+)/g, (_, name: string) =>
    name === 'email' ? 'nobody%40example.invalid' : name === 'model' ? 'no-such-model' : name === 'file' ? 'none.css' : '999999',
  );

// These would change what the next requests see: ending the session the test holds.
const SKIP = new Set(['GET /api/user/logout']);

type Who = 'anonymous' | 'common' | 'admin' | 'root' | 'key';
const RANK: Record<Exclude<Auth, 'none' | 'apiKey'>, Who[]> = {
  user: ['common', 'admin', 'root'],
  admin: ['admin', 'root'],
  adminBasic: ['admin', 'root'],
  root: ['root'],
};

async function call(e: Endpoint, who: Who) {
  const client = who === 'common' ? common : who === 'admin' ? admin : who === 'root' ? t.root : who === 'key' ? t.anon.withAuth(`Bearer ${key}`) : t.anon;
  const body = e.method === 'get' || e.method === 'delete' ? undefined : {};
  const res = await client.request(e.method.toUpperCase(), concrete(e), body);
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  return { status: res.status, text };
}

describe('documented auth is enforced auth', () => {
  it('every endpoint answers each kind of caller as its documented auth says', async () => {
    const endpoints = documentedEndpoints(t.platform);
    expect(endpoints.length).toBeGreaterThan(60);
    const wrong: string[] = [];
    for (const e of endpoints) {
      const label = `${e.method.toUpperCase()} ${e.path} (auth: ${e.auth})`;
      if (SKIP.has(`${e.method.toUpperCase()} ${e.path}`)) continue;
      const expect401 = async (who: Who) => {
        const r = await call(e, who);
        if (r.status !== 401) wrong.push(`${label} as ${who}: ${r.status}, expected 401 ${r.text.slice(0, 120)}`);
      };
      const expectRefusedRole = async (who: Who) => {
        const r = await call(e, who);
        if (r.status !== 403 || !/Insufficient role/.test(r.text))
          wrong.push(`${label} as ${who}: ${r.status}, expected 403 insufficient role ${r.text.slice(0, 120)}`);
      };
      const expectLetIn = async (who: Who) => {
        const r = await call(e, who);
        if (r.status === 401 || (r.status === 403 && /role|key|Authentication|Cross/.test(r.text)))
          wrong.push(`${label} as ${who}: ${r.status}, expected past auth ${r.text.slice(0, 120)}`);
      };
      if (e.auth === 'none') {
        await expectLetIn('anonymous');
      } else if (e.auth === 'apiKey') {
        await expect401('anonymous');
        // A session is not a /v1 credential: only an sk- key is.
        await expect401('common');
        await expectLetIn('key');
      } else {
        await expect401('anonymous');
        const allowed = RANK[e.auth];
        for (const who of ['common', 'admin', 'root'] as const) await (allowed.includes(who) ? expectLetIn(who) : expectRefusedRole(who));
      }
    }
    expect(wrong).toEqual([]);
  }, 240_000);
});
