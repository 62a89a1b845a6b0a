// Accounts over HTTP against real Postgres and Redis: login, sessions, users, tokens, redemption codes.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let admin: HttpClient;
let alice: HttpClient;

const sha256 = (value: string) => crypto.createHash('sha256').update(value).digest('hex');

async function count(table: string): Promise<number> {
  const [{ n }] = await t.platform.db(table).count({ n: '*' });
  return Number(n);
}

beforeAll(async () => {
  // A credential lookup is cached for a minute here, so a revocation that works only because the cache
  // expired shows up as a failure: "at once on the process that handled it" is what these tests check.
  t = await startTestApp({ workers: false, env: { TRUST_PROXY: 'true', AUTH_CACHE_MS: '60000', LOGIN_MAX_FAILURES_PER_IP: '10' } });
  expect((await t.root.post('/api/user/', { username: 'admin1', password: 'admin-password', role: 10 })).status).toBe(201);
  expect((await t.root.post('/api/user/', { username: 'alice', password: 'alice-password' })).status).toBe(201);
  admin = new HttpClient(t.url);
  await admin.login('admin1', 'admin-password');
  alice = new HttpClient(t.url);
  await alice.login('alice', 'alice-password');
});

afterAll(async () => {
  await t?.close();
});

describe('login and sessions', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and returns the user without secrets', async () => {
    const c = new HttpClient(t.url);
    const res = await c.post('/api/user/login', { username: 'root', password: ROOT_PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, message: '', data: { username: 'root', role: 100, status: 1 } });
    expect(res.body.data.password_hash).toBeUndefined();
    expect(res.body.data.access_token_hash).toBeUndefined();
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sy_session='))!;
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/samesite=lax/i);
    expect((await c.get('/api/user/self')).body.data.username).toBe('root');
  });

  it('rejects a wrong password with 401 and an unknown user the same way', async () => {
    const a = await t.anon.post('/api/user/login', { username: 'root', password: 'not-the-password' });
    const b = await t.anon.post('/api/user/login', { username: 'nobody-here', password: 'whatever123' });
    expect(a.status).toBe(401);
    expect(b.status).toBe(401);
    expect(a.body).toEqual({ success: false, message: 'Invalid username or password' });
    expect(b.body).toEqual(a.body);
  });

  it('logout revokes the session on the server', async () => {
    const c = new HttpClient(t.url);
    await c.login('alice', 'alice-password');
    const stolen = new Map(c.cookies);
    expect((await c.get('/api/user/logout')).status).toBe(200);
    const replay = new HttpClient(t.url);
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    expect((await replay.get('/api/user/self')).status).toBe(401);
  });

  it('a tampered session cookie is ignored', async () => {
    const c = new HttpClient(t.url);
    c.cookies.set('sy_session', 'forged-value');
    c.cookies.set('sy_session.sig', 'forged-signature');
    expect((await c.get('/api/user/self')).status).toBe(401);
  });

  it('no credentials is 401 in the envelope', async () => {
    const res = await t.anon.get('/api/user/self');
    expect(res.status).toBe(401);
    expect(res.body.success).toBe(false);
    expect(typeof res.body.message).toBe('string');
  });

  it('the system access token works as Bearer and bare, and rotating it kills the old one at once on this process', async () => {
    expect(t.config.AUTH_CACHE_MS).toBe(60_000);
    const first = (await alice.get('/api/user/token')).body.data as string;
    expect(first).toMatch(/^[A-Za-z0-9]{32}$/);
    // Both uses leave the token's lookup in this process's cache.
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${first}` })).body.data.username).toBe('alice');
    expect((await t.anon.get('/api/user/self', { authorization: first })).body.data.username).toBe('alice');
    const second = (await alice.get('/api/user/token')).body.data as string;
    expect(second).not.toBe(first);
    // No wait: the cached lookup (kept 60 s here) must already be gone.
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${first}` })).status).toBe(401);
    expect((await t.anon.get('/api/user/self', { authorization: first })).status).toBe(401);
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${second}` })).status).toBe(200);
  });

  it('stores the access token only as its SHA-256 hash', async () => {
    const token = (await alice.get('/api/user/token')).body.data as string;
    const row = await t.platform.db('users').where({ username: 'alice' }).first();
    expect(row.access_token_hash).toBe(sha256(token));
    expect(JSON.stringify(row)).not.toContain(token);
  });
});

describe('cross-site request protection', () => {
  it('refuses a cookie-authenticated write from another origin', async () => {
    const res = await alice.post('/api/token/', { name: 'csrf' }, { origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    expect(res.body.message).toMatch(/Cross-origin/);
  });

  it('accepts the same write from its own origin', async () => {
    const res = await alice.post('/api/token/', { name: 'same-origin' }, { origin: t.url });
    expect(res.status).toBe(201);
  });

  it('does not apply to access tokens (no ambient credential)', async () => {
    const token = (await alice.get('/api/user/token')).body.data as string;
    const res = await t.anon.post('/api/token/', { name: 'script' }, { authorization: token, origin: 'https://elsewhere.example' });
    expect(res.status).toBe(201);
  });

  it('checks the login form too: a cross-origin login is 403 and sets no cookie', async () => {
    const res = await t.anon.post('/api/user/login', { username: 'alice', password: 'alice-password' }, { origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    expect(res.headers.getSetCookie()).toEqual([]);
    expect((await t.anon.post('/api/user/login', { username: 'alice', password: 'alice-password' }, { origin: t.url })).status).toBe(200);
  });
});

describe('login rate limit', () => {
  // The app trusts X-Forwarded-For in this file, so each test can speak from its own address.
  const from = (ip: string) => ({ 'x-forwarded-for': ip });

  it('answers 429 after 10 failures for one username from one address; that user still gets in from another', async () => {
    await t.root.post('/api/user/', { username: 'victim', password: 'victim-password' });
    for (let i = 0; i < 10; i++) {
      expect((await t.anon.post('/api/user/login', { username: 'victim', password: `wrong-${i}` }, from('198.51.100.1'))).status).toBe(401);
    }
    const blocked = await t.anon.post('/api/user/login', { username: 'victim', password: 'victim-password' }, from('198.51.100.1'));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.body.success).toBe(false);
    // This user from another address is not affected.
    expect((await t.anon.post('/api/user/login', { username: 'victim', password: 'victim-password' }, from('198.51.100.2'))).status).toBe(200);
  });

  it('answers 429 after LOGIN_MAX_FAILURES_PER_IP (10 here) failures from one address, whatever the usernames', async () => {
    for (let i = 0; i < 10; i++) {
      expect((await t.anon.post('/api/user/login', { username: `guess${i}`, password: 'wrong-password' }, from('203.0.113.7'))).status).toBe(401);
    }
    expect((await t.anon.post('/api/user/login', { username: 'alice', password: 'alice-password' }, from('203.0.113.7'))).status).toBe(429);
    expect((await t.anon.post('/api/user/login', { username: 'alice', password: 'alice-password' }, from('203.0.113.8'))).status).toBe(200);
  });
});

describe('users (admin)', () => {
  it('creates a user: 201 with the user and no secrets', async () => {
    const res = await admin.post('/api/user/', { username: 'bob.smith', password: 'bob-password', display_name: 'Bob', quota: 500 });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ username: 'bob.smith', display_name: 'Bob', role: 1, quota: 500, status: 1 });
    expect(res.body.data.id).toBeTypeOf('number');
    expect(Object.keys(res.body.data)).not.toContain('password_hash');
    const bob = new HttpClient(t.url);
    await bob.login('bob.smith', 'bob-password');
  });

  it('a taken username is 409, case-insensitively, and changes nothing', async () => {
    const before = await count('users');
    const res = await admin.post('/api/user/', { username: 'ALICE', password: 'another-password' });
    expect(res.status).toBe(409);
    expect(res.body.success).toBe(false);
    expect(await count('users')).toBe(before);
  });

  it('refuses a role equal to or above the caller with 403', async () => {
    const res = await admin.post('/api/user/', { username: 'wannabe', password: 'wannabe-password', role: 10 });
    expect(res.status).toBe(403);
    expect((await admin.post('/api/user/', { username: 'wannabe', password: 'wannabe-password', role: 100 })).status).toBe(403);
    expect((await t.root.post('/api/user/', { username: 'admin2', password: 'admin2-password', role: 10 })).status).toBe(201);
  });

  it('common users get 403 on admin routes', async () => {
    expect((await alice.get('/api/user/')).status).toBe(403);
    expect((await alice.post('/api/user/', { username: 'x1', password: 'password123' })).status).toBe(403);
    expect((await alice.post('/api/redemption/', { name: 'x', quota: 1 })).status).toBe(403);
  });

  it('rejects bad input with 400 naming the field, and stores nothing', async () => {
    const before = await count('users');
    const cases: [unknown, RegExp][] = [
      [{ username: 'ok', password: 'short' }, /^password: /],
      [{ username: '', password: 'password123' }, /^username: /],
      [{ username: 'x'.repeat(33), password: 'password123' }, /^username: /],
      [{ username: "robert'); DROP TABLE users;--", password: 'password123' }, /^username: /],
      [{ username: 42, password: 'password123' }, /^username: /],
      [{ username: 'neg', password: 'password123', quota: -5 }, /^quota: /],
      [{ username: 'frac', password: 'password123', quota: 1.5 }, /^quota: /],
      [{ username: 'badrole', password: 'password123', role: 5 }, /^role: /],
      [{ password: 'password123' }, /^username: /],
      [[1, 2, 3], /expected object|Invalid input/i],
    ];
    for (const [body, message] of cases) {
      const res = await admin.post('/api/user/', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.success).toBe(false);
      expect(res.body.message).toMatch(message);
    }
    expect(await count('users')).toBe(before);
  });

  it('lists users with X-Total-Count and pages', async () => {
    // Root lists everyone (an admin only the users below them: security-auth.test.ts).
    const res = await t.root.get('/api/user/?p=0&page_size=2');
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body.data)).toBe(true);
    expect(res.body.data).toHaveLength(2);
    expect(Number(res.headers.get('x-total-count'))).toBeGreaterThanOrEqual(4);
    const search = await admin.get('/api/user/search?keyword=alic');
    expect(search.body.data.map((u: { username: string }) => u.username)).toEqual(['alice']);
  });

  it('gets, updates and deletes a user by id; unknown ids are 404', async () => {
    const created = (await admin.post('/api/user/', { username: 'temp', password: 'temp-password' })).body.data;
    expect((await admin.get(`/api/user/${created.id}`)).body.data.username).toBe('temp');
    const upd = await admin.put(`/api/user/${created.id}`, { display_name: 'Temporary', quota: 42 });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ display_name: 'Temporary', quota: 42 });
    // one-api style: id in the body
    expect((await admin.put('/api/user/', { id: created.id, status: 2 })).body.data.status).toBe(2);
    const disabled = new HttpClient(t.url);
    expect((await disabled.post('/api/user/login', { username: 'temp', password: 'temp-password' })).status).toBe(403);
    expect((await admin.delete(`/api/user/${created.id}`)).status).toBe(200);
    expect((await admin.get(`/api/user/${created.id}`)).status).toBe(404);
    expect((await admin.delete(`/api/user/${created.id}`)).status).toBe(404);
    expect((await admin.get('/api/user/999999')).status).toBe(404);
    expect((await admin.get('/api/user/abc')).status).toBe(400);
  });

  it('a disabled user\'s right password is refused with 403 "User is disabled" and no session cookie', async () => {
    const created = (await admin.post('/api/user/', { username: 'benched', password: 'benched-password' })).body.data;
    expect((await admin.put('/api/user/', { id: created.id, status: 2 })).status).toBe(200);
    const res = await new HttpClient(t.url).post('/api/user/login', { username: 'benched', password: 'benched-password' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ success: false, message: 'User is disabled' });
    expect(res.headers.getSetCookie().some((c) => c.startsWith('sy_session='))).toBe(false);
  });

  it('an admin cannot change or delete root, or promote to admin', async () => {
    const rootId = (await t.root.get('/api/user/self')).body.data.id;
    expect((await admin.put(`/api/user/${rootId}`, { quota: 1 })).status).toBe(403);
    expect((await admin.delete(`/api/user/${rootId}`)).status).toBe(403);
    const aliceId = (await alice.get('/api/user/self')).body.data.id;
    expect((await admin.put(`/api/user/${aliceId}`, { role: 10 })).status).toBe(403);
  });

  it('disabling a user ends their sessions and their API keys stop working, at once on this process', async () => {
    await t.root.post('/api/user/', { username: 'carol', password: 'carol-password' });
    const carol = new HttpClient(t.url);
    const { id } = (await carol.login('carol', 'carol-password')).body.data;
    const key = (await carol.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
    // Both credentials are used (and so cached, for 60 s here) before the change.
    expect((await carol.get('/api/user/self')).status).toBe(200);
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${key}` })).status).toBe(200);
    expect((await t.root.put(`/api/user/${id}`, { status: 2 })).status).toBe(200);
    expect((await carol.get('/api/user/self')).status).toBe(401);
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${key}` })).status).toBe(403);
  });

  it('PUT /api/user/self changes the own password only with the current one', async () => {
    await t.root.post('/api/user/', { username: 'dave', password: 'dave-password' });
    const dave = new HttpClient(t.url);
    await dave.login('dave', 'dave-password');
    expect((await dave.put('/api/user/self', { password: 'new-dave-password' })).status).toBe(400);
    expect((await dave.put('/api/user/self', { password: 'new-dave-password', original_password: 'dave-password', display_name: 'D' })).status).toBe(200);
    await new HttpClient(t.url).login('dave', 'new-dave-password');
  });
});

describe('API tokens', () => {
  it('POST returns 201 with id and the whole sk- key, once; lists mask it; only the hash is stored', async () => {
    const res = await alice.post('/api/token/', { name: 'my key', remain_quota: 1000, expired_time: -1, models: 'local-hash-v1', subnet: '127.0.0.1/32' });
    expect(res.status).toBe(201);
    const tok = res.body.data;
    expect(tok.id).toBeTypeOf('number');
    expect(tok.key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    expect(tok).toMatchObject({
      name: 'my key',
      remain_quota: 1000,
      unlimited_quota: false,
      expired_time: -1,
      status: 1,
      models: 'local-hash-v1',
      subnet: '127.0.0.1/32',
    });
    const list = await alice.get('/api/token/');
    const listed = list.body.data.find((x: { id: number }) => x.id === tok.id);
    expect(listed.key).not.toBe(tok.key);
    expect(listed.key).toMatch(/^sk-.{4}\*+.{4}$/);
    expect((await alice.get(`/api/token/${tok.id}`)).body.data.key).toBe(listed.key);
    const row = await t.platform.db('tokens').where({ id: tok.id }).first();
    expect(row.key_hash).toBe(sha256(tok.key));
    expect(JSON.stringify(row)).not.toContain(tok.key);
    expect(JSON.stringify(row)).not.toContain(tok.key.slice(3));
    // The key authenticates on /v1; with limits of its own it reaches nothing under /api (security-auth.test.ts).
    expect((await t.anon.get('/v1/models', { authorization: `Bearer ${tok.key}` })).status).toBe(200);
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${tok.key}` })).status).toBe(403);
  });

  it('defaults: expired_time -1 when omitted or 0, remain_quota 0, limited', async () => {
    const a = (await alice.post('/api/token/', {})).body.data;
    const b = (await alice.post('/api/token/', { expired_time: 0 })).body.data;
    expect(a).toMatchObject({ expired_time: -1, remain_quota: 0, unlimited_quota: false, name: '' });
    expect(b.expired_time).toBe(-1);
    // Limited with nothing left reads as exhausted (4) until quota is given.
    expect(a.status).toBe(4);
  });

  it('only the owner sees or changes a token', async () => {
    const tok = (await alice.post('/api/token/', { name: 'private', unlimited_quota: true })).body.data;
    for (const c of [admin, t.root]) {
      expect((await c.get(`/api/token/${tok.id}`)).status).toBe(404);
      expect((await c.put('/api/token/', { id: tok.id, name: 'stolen' })).status).toBe(404);
      expect((await c.delete(`/api/token/${tok.id}`)).status).toBe(404);
      expect((await c.get('/api/token/')).body.data.some((x: { id: number }) => x.id === tok.id)).toBe(false);
    }
    expect((await alice.get(`/api/token/${tok.id}`)).body.data.name).toBe('private');
  });

  it('status rules: disable, and no re-enable while expired or exhausted', async () => {
    const soon = Math.floor(Date.now() / 1000) + 2;
    const tok = (await alice.post('/api/token/', { name: 'expiring', unlimited_quota: true, expired_time: soon })).body.data;
    expect((await alice.put('/api/token/?status_only=1', { id: tok.id, status: 2, name: 'ignored' })).body.data).toMatchObject({ status: 2, name: 'expiring' });
    await new Promise((r) => setTimeout(r, 2_200));
    const refused = await alice.put('/api/token/?status_only=1', { id: tok.id, status: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/expired/);
    // Fixing the expiry in the same update makes enabling possible.
    const fixed = await alice.put('/api/token/', { id: tok.id, expired_time: -1, status: 1 });
    expect(fixed.status).toBe(200);
    expect(fixed.body.data.status).toBe(1);

    const limited = (await alice.post('/api/token/', { name: 'empty', remain_quota: 0 })).body.data;
    await alice.put(`/api/token/${limited.id}`, { status: 2 });
    expect((await alice.put(`/api/token/${limited.id}`, { status: 1 })).status).toBe(400);
    expect((await alice.put(`/api/token/${limited.id}`, { status: 1, remain_quota: 10 })).body.data.status).toBe(1);
  });

  it('a key that was never disabled cannot be "enabled" while it reads as expired (3) or exhausted (4)', async () => {
    const empty = (await alice.post('/api/token/', { name: 'never-off' })).body.data;
    expect(empty.status).toBe(4);
    for (const [path, body] of [
      ['/api/token/?status_only=1', { id: empty.id, status: 1 }],
      ['/api/token/', { id: empty.id, status: 1 }],
      [`/api/token/${empty.id}`, { status: 1, name: 'renamed' }],
    ] as const) {
      const res = await alice.put(path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body).toMatchObject({ success: false, message: expect.stringMatching(/no quota left/) });
    }
    expect((await alice.get(`/api/token/${empty.id}`)).body.data).toMatchObject({ status: 4, name: 'never-off' });

    const soon = Math.floor(Date.now() / 1000) + 2;
    const expiring = (await alice.post('/api/token/', { name: 'never-off-2', unlimited_quota: true, expired_time: soon })).body.data;
    await new Promise((r) => setTimeout(r, soon * 1000 - Date.now() + 200));
    expect((await alice.get(`/api/token/${expiring.id}`)).body.data.status).toBe(3);
    const refused = await alice.put('/api/token/?status_only=1', { id: expiring.id, status: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/expired/);
  });

  it('a key read and sent back whole (status 3 or 4, key, used_quota…) is updated, its status left as computed', async () => {
    const tok = (await alice.post('/api/token/', { name: 'round-trip' })).body.data;
    const read = (await alice.get(`/api/token/${tok.id}`)).body.data;
    expect(read.status).toBe(4);
    const res = await alice.put('/api/token/', { ...read, remain_quota: 40 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ remain_quota: 40, status: 1 });
    // 3 and 4 are not statuses to set.
    expect((await alice.put('/api/token/?status_only=1', { id: tok.id, status: 4 })).status).toBe(400);
  });

  it('an update with nothing it can change answers the key as it is (200), and one without status under status_only is a 400', async () => {
    const tok = (await alice.post('/api/token/', { name: 'unchanged', unlimited_quota: true })).body.data;
    for (const body of [{ id: tok.id }, { id: tok.id, key: 'sk-whatever', used_quota: 5, created_time: 1 }]) {
      const res = await alice.put('/api/token/', body);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toMatchObject({ id: tok.id, name: 'unchanged', status: 1 });
    }
    const missing = await alice.put('/api/token/?status_only=1', { id: tok.id, name: 'ignored' });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/^status: /);
  });

  it('an id past 2^31 - 1 in a PUT body is a 400 naming the id, not a server error', async () => {
    const big = 2_147_483_648;
    for (const [c, path, body] of [
      [alice, '/api/token/', { id: big, name: 'x' }],
      [t.root, '/api/user/', { id: big, quota: 1 }],
      [t.root, '/api/redemption/', { id: big, name: 'x' }],
      [t.root, '/api/channel/', { id: big, name: 'x' }],
    ] as const) {
      const res = await c.put(path, body);
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect(res.body.message).toMatch(/^id: /);
    }
  });

  it('a disabled, expired or deleted key no longer authenticates, at once on this process', async () => {
    const tok = (await alice.post('/api/token/', { name: 'temp', unlimited_quota: true })).body.data;
    const use = () => t.anon.get('/api/user/self', { authorization: `Bearer ${tok.key}` });
    expect((await use()).status).toBe(200);
    await alice.put('/api/token/?status_only=1', { id: tok.id, status: 2 });
    expect((await use()).status).toBe(401);
    // Enabled again it works; deleted it does not.
    await alice.put('/api/token/?status_only=1', { id: tok.id, status: 1 });
    expect((await use()).status).toBe(200);
    await alice.delete(`/api/token/${tok.id}`);
    expect((await use()).status).toBe(401);
    // Expired: works (and is cached) until its expired_time, then 401 — the cache does not stretch its life.
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const expiring = (await alice.post('/api/token/', { name: 'expiring', unlimited_quota: true, expired_time: expiresAt })).body.data;
    // A key with an expiry has limits of its own: it is used where it may be, on /v1.
    const useExpiring = () => t.anon.get('/v1/models', { authorization: `Bearer ${expiring.key}` });
    expect((await useExpiring()).status).toBe(200);
    await new Promise((r) => setTimeout(r, expiresAt * 1000 - Date.now() + 100));
    const expired = await useExpiring();
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toMatch(/expired/);
    expect((await t.anon.get('/api/user/self', { authorization: 'Bearer sk-doesnotexist' })).status).toBe(401);
  });

  it('a key bound to another subnet is refused', async () => {
    const tok = (await alice.post('/api/token/', { name: 'remote only', unlimited_quota: true, subnet: '10.0.0.0/8' })).body.data;
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${tok.key}` })).status).toBe(403);
  });

  it('validates token fields and creates nothing on bad input', async () => {
    const before = await count('tokens');
    const cases: [unknown, RegExp][] = [
      [{ name: 'x'.repeat(51) }, /^name: /],
      [{ remain_quota: -1 }, /^remain_quota: /],
      [{ remain_quota: 'lots' }, /^remain_quota: /],
      [{ unlimited_quota: 'yes' }, /^unlimited_quota: /],
      [{ expired_time: 1 }, /^expired_time: /],
      [{ expired_time: -5 }, /^expired_time: /],
      [{ subnet: 'not-a-cidr' }, /^subnet: /],
      [{ subnet: '10.0.0.0/33' }, /^subnet: /],
      [{ models: 12 }, /^models: /],
    ];
    for (const [body, message] of cases) {
      const res = await alice.post('/api/token/', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message).toMatch(message);
    }
    expect(await count('tokens')).toBe(before);
    expect((await alice.put('/api/token/', { name: 'no id' })).status).toBe(400);
    expect((await alice.get('/api/token/notanumber')).status).toBe(400);
    expect((await alice.get('/api/token/424242')).status).toBe(404);
  });
});

describe('redemption codes and top-up', () => {
  it('on Postgres, 20 users redeeming one code at once (20 transactions side by side): one is credited, once, with one top-up row', async () => {
    const [key] = (await admin.post('/api/redemption/', { name: 'race', quota: 33 })).body.data;
    const users = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const username = `racer${i}-${Date.now()}`;
        expect((await t.root.post('/api/user/', { username, password: `${username}-pw` })).status).toBe(201);
        return (await t.platform.db('users').where({ username }).first('id')).id as number;
      }),
    );
    const { redeemCode } = await import('../../src/accounts/store.js');
    // Straight to the store, all at once on the pool's connections (over HTTP the requests would spread out).
    const outcomes = await Promise.all(users.map((id) => redeemCode(t.platform.db, key, id)));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
    const credited = await t.platform.db('users').whereIn('id', users).andWhere('quota', '>', 0).pluck('id');
    expect(credited).toHaveLength(1);
    const topups = await t.platform.db('logs').whereIn('user_id', users).andWhere({ type: 1 }).count<{ n: string }[]>({ n: '*' });
    expect(Number(topups[0]!.n)).toBe(1);
  });

  it('creates 1–100 codes of 32 hex characters (201), lists and deletes them', async () => {
    const res = await admin.post('/api/redemption/', { name: 'promo', quota: 250, count: 3 });
    expect(res.status).toBe(201);
    expect(res.body.data).toHaveLength(3);
    for (const k of res.body.data) expect(k).toMatch(/^[0-9a-f]{32}$/);
    const list = await admin.get('/api/redemption/?page_size=100');
    const mine = list.body.data.filter((r: { key: string }) => res.body.data.includes(r.key));
    expect(mine).toHaveLength(3);
    expect((await admin.delete(`/api/redemption/${mine[0].id}`)).status).toBe(200);
    expect((await admin.delete(`/api/redemption/${mine[0].id}`)).status).toBe(404);
    expect((await admin.get(`/api/redemption/${mine[1].id}`)).body.data.quota).toBe(250);
  });

  it('validates name, quota and count', async () => {
    const before = await count('redemptions');
    for (const body of [
      { name: '', quota: 1 },
      { name: 'x'.repeat(21), quota: 1 },
      { name: 'ok', quota: 0 },
      { name: 'ok', quota: -1 },
      { name: 'ok', quota: 1.5 },
      { name: 'ok', quota: 1, count: 0 },
      { name: 'ok', quota: 1, count: 101 },
      { name: 'ok' },
    ]) {
      const res = await admin.post('/api/redemption/', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(await count('redemptions')).toBe(before);
  });

  it('top-up credits the code once; used, disabled and unknown codes are 400', async () => {
    const [key] = (await admin.post('/api/redemption/', { name: 'once', quota: 300 })).body.data;
    const before = (await alice.get('/api/user/self')).body.data.quota;
    const ok = await alice.post('/api/user/topup', { key });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ success: true, data: 300 });
    expect((await alice.get('/api/user/self')).body.data.quota).toBe(before + 300);
    const again = await alice.post('/api/user/topup', { key });
    expect(again.status).toBe(400);
    expect(again.body.message).toMatch(/already been used/);
    expect((await alice.post('/api/user/topup', { key: 'f'.repeat(32) })).status).toBe(400);
    expect((await alice.post('/api/user/topup', {})).status).toBe(400);

    const [off] = (await admin.post('/api/redemption/', { name: 'off', quota: 5 })).body.data;
    const row = (await admin.get('/api/redemption/search?keyword=off')).body.data.find((r: { key: string }) => r.key === off);
    expect((await admin.put('/api/redemption/?status_only=1', { id: row.id, status: 2 })).body.data.status).toBe(2);
    const disabled = await alice.post('/api/user/topup', { key: off });
    expect(disabled.status).toBe(400);
    expect(disabled.body.message).toMatch(/disabled/);
  });

  it('a code that would take the balance past 2^53 − 1 is refused with 400 and stays unused; the balance is unchanged', async () => {
    const [big] = (await admin.post('/api/redemption/', { name: 'huge', quota: Number.MAX_SAFE_INTEGER })).body.data;
    const before = (await alice.get('/api/user/self')).body.data.quota;
    expect(before).toBeGreaterThan(0);
    const res = await alice.post('/api/user/topup', { key: big });
    expect(res.status, res.text).toBe(400);
    expect(res.body).toMatchObject({ success: false });
    expect(res.body.message).toMatch(/largest a balance can hold/);
    expect((await alice.get('/api/user/self')).body.data.quota).toBe(before);
    const row = (await admin.get('/api/redemption/search?keyword=huge')).body.data.find((r: { key: string }) => r.key === big);
    expect(row.status).toBe(1); // unused
  });

  it('twenty concurrent redemptions of one code: exactly one succeeds, credited once', async () => {
    const [key] = (await admin.post('/api/redemption/', { name: 'race', quota: 1000 })).body.data;
    const racers: HttpClient[] = [];
    for (let i = 0; i < 4; i++) {
      await t.root.post('/api/user/', { username: `racer${i}`, password: 'racer-password' });
      const c = new HttpClient(t.url);
      await c.login(`racer${i}`, 'racer-password');
      racers.push(c);
    }
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => racers[i % 4]!.post('/api/user/topup', { key })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 400)).toHaveLength(19);
    const quotas = await t.platform.db('users').whereIn('username', ['racer0', 'racer1', 'racer2', 'racer3']).sum({ s: 'quota' });
    expect(Number(quotas[0].s)).toBe(1000);
  });
});
