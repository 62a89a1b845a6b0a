// Attacks on authentication, found by attacking a fresh install as a common user and an admin (issue 10): each is refused.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createApp } from '../../src/http/app.js';
import { jobKinds } from '../../src/job-kinds.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import { serveMetrics } from '../../src/metrics.js';
import { freePort } from '../helpers/redis-server.js';
import { HttpClient } from '../helpers/http.js';
import { ROOT_PASSWORD, startTestApp, type TestApp } from '../helpers/services.js';

const AUTH_CACHE_MS = 300;
/** Lower than the defaults (100 and 100), to reach them in a few seconds. */
const LOGIN = { LOGIN_MAX_FAILURES_PER_USER: 20, LOGIN_MAX_FAILURES_PER_IP: 30 };
const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
let t: TestApp;

async function user(username: string, role = 1): Promise<HttpClient> {
  const res = await t.root.post('/api/user/', { username, password: `${username}-password`, role });
  expect(res.status, res.text).toBe(201);
  const c = new HttpClient(t.url);
  await c.login(username, `${username}-password`);
  return c;
}

const idOf = async (username: string) => (await t.platform.db('users').where({ username }).first('id')).id as number;
const basic = (username: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  t = await startTestApp({
    workers: false,
    env: {
      TRUST_PROXY: 'true',
      AUTH_CACHE_MS: String(AUTH_CACHE_MS),
      METRICS_TOKEN,
      LOGIN_MAX_FAILURES_PER_USER: String(LOGIN.LOGIN_MAX_FAILURES_PER_USER),
      LOGIN_MAX_FAILURES_PER_IP: String(LOGIN.LOGIN_MAX_FAILURES_PER_IP),
    },
  });
});
afterAll(async () => {
  await t?.close();
});

describe('state-changing GETs authenticated by the session cookie', () => {
  const crossSite = { 'sec-fetch-site': 'cross-site' };

  it('GET /api/user/token from another site is 403 and rotates nothing', async () => {
    const c = await user('csrf-token');
    const token = (await c.get('/api/user/token')).body.data as string;
    const refused = await c.get('/api/user/token', crossSite);
    expect(refused.status).toBe(403);
    expect(refused.body.success).toBe(false);
    expect((await c.get('/api/user/token', { referer: 'https://evil.example/page' })).status).toBe(403);
    expect((await c.get('/api/user/token', { 'sec-fetch-site': 'same-site' })).status).toBe(403);
    // The browser's Sec-Fetch-Site is believed over an Origin or Referer claiming to be ours.
    for (const claim of [{ origin: t.url }, { referer: `${t.url}/` }] as Record<string, string>[])
      expect((await c.get('/api/user/token', { ...crossSite, ...claim })).status, JSON.stringify(claim)).toBe(403);
    expect((await c.post('/api/token/', { name: 'csrf' }, { ...crossSite, origin: t.url })).status).toBe(403);
    // The header sent twice reaches us joined by a comma: either value saying another site counts.
    expect((await c.get('/api/user/token', { 'sec-fetch-site': 'same-origin, cross-site' })).status).toBe(403);
    expect((await t.anon.get('/api/user/self', { authorization: token })).status).toBe(200);
    // The same request from our own pages, or typed into the address bar, still works.
    expect((await c.get('/api/user/token', { 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await c.get('/api/user/token', { 'sec-fetch-site': 'none' })).status).toBe(200);
  });

  it('GET /api/user/logout from another site is 403 and the session lives on', async () => {
    const c = await user('csrf-logout');
    expect((await c.get('/api/user/logout', crossSite)).status).toBe(403);
    expect((await c.get('/api/user/self')).status).toBe(200);
    expect((await c.get('/api/user/logout')).status).toBe(200);
    expect((await c.get('/api/user/self')).status).toBe(401);
  });

  it("logout ends the cookie's session even when a bad Authorization header comes with it", async () => {
    const c = await user('logout-noise');
    // The same cookie, kept aside: the logout answer clears it from `c`.
    const again = new HttpClient(t.url);
    for (const [k, v] of c.cookies) again.cookies.set(k, v);
    expect((await again.get('/api/user/self')).status).toBe(200);
    const res = await c.get('/api/user/logout', { authorization: 'Bearer not-a-real-token' });
    expect(res.status).toBe(200);
    expect((await again.get('/api/user/self')).status).toBe(401);
  });

  it('GET mail operations (empty a mailbox, send) from another site are 403 before anything runs', async () => {
    const c = await user('csrf-mail');
    for (const path of [
      '/api/process-inbox?email=a@example.com',
      '/api/process-junk?email=a@example.com',
      '/api/send-mail?email=a@example.com&to=b@example.com&subject=x&text=y',
    ]) {
      const res = await c.get(path, crossSite);
      expect(res.status, path).toBe(403);
      expect(res.body.error, path).toMatch(/Cross-site/);
      // Its own origin gets as far as the account lookup (no such account here).
      expect((await c.get(path, { 'sec-fetch-site': 'same-origin' })).status, path).toBe(404);
    }
  });

  it('does not apply to an access token sent from anywhere (no ambient credential)', async () => {
    const c = await user('csrf-script');
    const token = (await c.get('/api/user/token')).body.data as string;
    const res = await t.anon.get('/api/process-inbox?email=a@example.com', { authorization: token, 'sec-fetch-site': 'cross-site' });
    expect(res.status).toBe(404);
  });
});

describe(`the login limiter (here: ${LOGIN.LOGIN_MAX_FAILURES_PER_USER} failures per username, ${LOGIN.LOGIN_MAX_FAILURES_PER_IP} per address)`, () => {
  // A new client each time: a login that succeeds must not leave its cookie on a shared one.
  const login = (username: string, password: string, from: string) =>
    new HttpClient(t.url).post('/api/user/login', { username, password }, { 'x-forwarded-for': from });

  it('an attacker past 10 failures from one address gets 429 there, right password included, while the owner signs in from another address', async () => {
    await user('lockout-victim');
    for (let i = 0; i < 10; i++) expect((await login('lockout-victim', `wrong-${i}`, '198.18.2.1')).status).toBe(401);
    const refused = await login('lockout-victim', 'lockout-victim-password', '198.18.2.1');
    expect(refused.status).toBe(429);
    expect(refused.body.message).toMatch(/for this user from your address/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(800);
    expect((await login('lockout-victim', 'lockout-victim-password', '198.18.2.2')).status).toBe(200);
  });

  it('root too: 10 wrong passwords for root do not lock root out of another address', async () => {
    for (let i = 0; i < 11; i++) await login('root', `wrong-${i}`, '198.18.3.1');
    expect((await login('root', 'wrong-again', '198.18.3.1')).status).toBe(429);
    expect((await login('root', ROOT_PASSWORD, '198.18.3.2')).status).toBe(200);
  });

  it("a good login clears that address's failures for the user: 9 wrong, the right one, then 10 wrong again are all 401, the next 429", async () => {
    await user('clears-its-count');
    const from = '198.18.9.1';
    for (let i = 0; i < 9; i++) expect((await login('clears-its-count', `wrong-${i}`, from)).status).toBe(401);
    expect((await login('clears-its-count', 'clears-its-count-password', from)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await login('clears-its-count', `again-${i}`, from)).status).toBe(401);
    expect((await login('clears-its-count', 'again-last', from)).status).toBe(429);
  });

  it('guesses from many addresses past the per-username limit: addresses that failed wait, the owner still gets in from a clean address', async () => {
    await user('botnet-victim');
    const perUser = LOGIN.LOGIN_MAX_FAILURES_PER_USER;
    const from = (i: number) => `198.18.4.${i + 1}`;
    for (let i = 0; i < perUser + 5; i++) expect((await login('botnet-victim', `wrong-${i}`, from(i))).status, `address ${i}`).toBe(401);
    // Past the limit: an address that already failed for this username waits, though it is far below its own 10.
    const again = await login('botnet-victim', 'wrong-again', from(0));
    expect(again.status).toBe(429);
    expect(again.body.message).toMatch(/from many addresses/);
    // A fresh address gets one guess, then waits too.
    expect((await login('botnet-victim', 'wrong-fresh', '198.18.5.1')).status).toBe(401);
    expect((await login('botnet-victim', 'wrong-fresh-2', '198.18.5.1')).status).toBe(429);
    // The owner's right password from an address with no failures is never refused, and signing in reopens nothing.
    const owner = await login('botnet-victim', 'botnet-victim-password', '198.18.6.1');
    expect(owner.status, owner.text).toBe(200);
    expect((await login('botnet-victim', 'wrong-after', from(1))).status).toBe(429);
  });

  it('counts parallel guesses before checking them: of 40 at once from one address, at most 10 are checked', async () => {
    await user('parallel-victim');
    const guesses = await Promise.all(Array.from({ length: 40 }, (_, i) => login('parallel-victim', `wrong-${i}`, '198.18.0.1')));
    const statuses = guesses.map((g) => g.status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(30);
    expect(new Set(statuses)).toEqual(new Set([401, 429]));
  });

  it(`limits one address across usernames: of ${LOGIN.LOGIN_MAX_FAILURES_PER_IP + 10} guesses at as many names at once, at most ${LOGIN.LOGIN_MAX_FAILURES_PER_IP} are checked`, async () => {
    const perIp = LOGIN.LOGIN_MAX_FAILURES_PER_IP;
    const guesses = await Promise.all(Array.from({ length: perIp + 10 }, (_, i) => login(`sprayed-${i}`, 'Password1!', '198.18.7.1')));
    const statuses = guesses.map((g) => g.status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(perIp);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(10);
    expect(guesses.find((g) => g.status === 429)!.body.message).toMatch(/from your address/);
  });

  it('an address is the last X-Forwarded-For entry (what our proxy saw): the entries a client writes before it change nothing', async () => {
    const perIp = LOGIN.LOGIN_MAX_FAILURES_PER_IP;
    for (let i = 0; i < perIp; i++) {
      const res = await new HttpClient(t.url).post(
        '/api/user/login',
        { username: `forged-${i}`, password: 'x' },
        { 'x-forwarded-for': `203.0.113.${i + 1}, 198.18.8.1` },
      );
      expect(res.status).toBe(401);
    }
    const next = await new HttpClient(t.url).post(
      '/api/user/login',
      { username: 'forged-next', password: 'x' },
      { 'x-forwarded-for': '203.0.113.250, 198.18.8.1' },
    );
    expect(next.status).toBe(429);
  });

  it('an IPv6 /64 is one address: 28 addresses of it past the per-username limit are refused as one, the owner from another /64 gets in', async () => {
    await user('v6-victim');
    const perUser = LOGIN.LOGIN_MAX_FAILURES_PER_USER;
    for (let i = 0; i < perUser + 1; i++) expect((await login('v6-victim', `wrong-${i}`, `2001:db8:${i + 1}::1`)).status, `/64 ${i}`).toBe(401);
    // Past the limit: the /64's first address gets its one guess; its 27 others are that address again.
    expect((await login('v6-victim', 'wrong-first', '2001:db8:ff::1')).status).toBe(401);
    const rest = [];
    for (let i = 2; i <= 28; i++) rest.push((await login('v6-victim', `wrong-${i}`, `2001:db8:ff::${i.toString(16)}:${i}`)).status);
    expect(rest).toEqual(new Array(27).fill(429));
    const owner = await login('v6-victim', 'v6-victim-password', '[2001:db8:aaaa::1]:443');
    expect(owner.status, owner.text).toBe(200);
  });

  it('an address is counted without the port a proxy wrote with it, and an IPv4-mapped IPv6 address is its IPv4 address', async () => {
    await user('port-victim');
    for (let i = 0; i < 5; i++) expect((await login('port-victim', `wrong-${i}`, `198.18.20.1:${5555 + i}`)).status).toBe(401);
    for (let i = 5; i < 8; i++) expect((await login('port-victim', `wrong-${i}`, '::ffff:198.18.20.1')).status).toBe(401);
    for (let i = 8; i < 10; i++) expect((await login('port-victim', `wrong-${i}`, `[::ffff:198.18.20.1]:${6666 + i}`)).status).toBe(401);
    // Ten failures of one address, whatever its spelling: the eleventh is refused, the right password included.
    const refused = await login('port-victim', 'port-victim-password', '198.18.20.1:6666');
    expect(refused.status).toBe(429);
    expect(refused.body.message).toMatch(/for this user from your address/);
    expect((await login('port-victim', 'port-victim-password', '198.18.20.2:5555')).status).toBe(200);
  });

  it('cannot be sidestepped by a username that Postgres and JavaScript lower-case differently (İ)', async () => {
    await user('ivan');
    for (let i = 0; i < 10; i++) expect((await login('ivan', `wrong-${i}`, '198.18.1.1')).status).toBe(401);
    // Postgres lower-cases 'İvan' to 'ivan'; JavaScript to 'i̇van' (i + combining dot). It must not be a second door.
    expect((await login('İvan', 'ivan-password', '198.18.1.1')).status).toBe(401);
    expect((await login('IVAN', 'ivan-password', '198.18.1.1')).status).toBe(429);
  });
});

describe('ending credentials', () => {
  it('changing your own password ends your other sessions and your access token, not this session', async () => {
    const first = await user('rotator');
    const second = new HttpClient(t.url);
    await second.login('rotator', 'rotator-password');
    const token = (await first.get('/api/user/token')).body.data as string;
    const res = await first.put('/api/user/self', { password: 'rotator-new-password', original_password: 'rotator-password' });
    expect(res.status).toBe(200);
    expect((await second.get('/api/user/self')).status).toBe(401);
    expect((await t.anon.get('/api/user/self', { authorization: token })).status).toBe(401);
    expect((await first.get('/api/user/self')).status).toBe(200);
  });

  describe('HTTP Basic (Bull Board) on another API process', () => {
    let other: { platform: Platform; server: Server; client: HttpClient };
    beforeAll(async () => {
      const platform = await createPlatform(t.config, createLogger('silent'), { listenForJobs: true, jobs: jobKinds });
      const server: Server = await new Promise((resolve) => {
        const s = createApp(platform).listen(0, '127.0.0.1', () => resolve(s));
      });
      other = { platform, server, client: new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`) };
    });
    afterAll(async () => {
      other?.server.closeAllConnections();
      await new Promise((r) => other?.server.close(r));
      await other?.platform.close();
    });

    it('disabling a user ends their cached Basic credentials there within AUTH_CACHE_MS', async () => {
      await user('board-admin', 10);
      expect((await other.client.get('/admin/queues', basic('board-admin', 'board-admin-password'))).status).toBe(200);
      expect((await t.root.put(`/api/user/${await idOf('board-admin')}`, { status: 2 })).status).toBe(200);
      await sleep(AUTH_CACHE_MS + 200);
      expect((await other.client.get('/admin/queues', basic('board-admin', 'board-admin-password'))).status).toBe(403);
    });

    it('a new password ends the old Basic pair there within AUTH_CACHE_MS', async () => {
      await user('board-admin2', 10);
      expect((await other.client.get('/admin/queues', basic('board-admin2', 'board-admin2-password'))).status).toBe(200);
      expect((await t.root.put(`/api/user/${await idOf('board-admin2')}`, { password: 'a-brand-new-password' })).status).toBe(200);
      await sleep(AUTH_CACHE_MS + 200);
      expect((await other.client.get('/admin/queues', basic('board-admin2', 'board-admin2-password'))).status).toBe(401);
      expect((await other.client.get('/admin/queues', basic('board-admin2', 'a-brand-new-password'))).status).toBe(200);
    });
  });
});

describe('the role rule', () => {
  it('an admin lists and searches only users below their role', async () => {
    const admin = await user('lister', 10);
    await user('listed');
    const all = (await admin.get('/api/user/?page_size=100')).body.data.map((u: { username: string }) => u.username);
    expect(all).toContain('listed');
    expect(all).not.toContain('root');
    expect(all).not.toContain('lister');
    const found = (await admin.get('/api/user/search?keyword=root')).body.data;
    expect(found).toEqual([]);
    expect((await t.root.get('/api/user/search?keyword=root')).body.data.map((u: { username: string }) => u.username)).toContain('root');
  });

  it("an admin lists, reads, changes and deletes only their own redemption codes and those of users below them, not root's or another admin's", async () => {
    const adminA = await user('codes-admin-a', 10);
    const adminB = await user('codes-admin-b', 10);
    const make = async (c: HttpClient, name: string) => {
      const res = await c.post('/api/redemption/', { name, quota: 7 });
      expect(res.status, res.text).toBe(201);
      return (await t.platform.db('redemptions').where({ key: res.body.data[0] }).first('id')).id as number;
    };
    const rootCode = await make(t.root, 'rr-root');
    const aCode = await make(adminA, 'rr-a');
    const bCode = await make(adminB, 'rr-b');
    const names = async (c: HttpClient, path: string) => (await c.get(path)).body.data.map((r: { name: string }) => r.name);

    expect(await names(adminA, '/api/redemption/?page_size=100')).toEqual(expect.arrayContaining(['rr-a']));
    expect(await names(adminA, '/api/redemption/?page_size=100')).not.toContain('rr-root');
    expect(await names(adminA, '/api/redemption/?page_size=100')).not.toContain('rr-b');
    expect(await names(adminA, '/api/redemption/search?keyword=rr-')).toEqual(['rr-a']);
    expect(await names(adminA, `/api/redemption/search?keyword=${rootCode}`)).toEqual([]);
    for (const other of [rootCode, bCode]) {
      expect((await adminA.get(`/api/redemption/${other}`)).status).toBe(404);
      expect((await adminA.put('/api/redemption/', { id: other, name: 'taken', status: 2 })).status).toBe(404);
      expect((await adminA.put('/api/redemption/?status_only=1', { id: other, status: 2 })).status).toBe(404);
      expect((await adminA.delete(`/api/redemption/${other}`)).status).toBe(404);
    }
    expect(await t.platform.db('redemptions').whereIn('id', [rootCode, bCode]).orderBy('id').select('name', 'status')).toEqual([
      { name: 'rr-root', status: 1 },
      { name: 'rr-b', status: 1 },
    ]);
    // Their own, they change and delete.
    expect((await adminA.put('/api/redemption/?status_only=1', { id: aCode, status: 2 })).body.data.status).toBe(2);
    expect((await adminA.delete(`/api/redemption/${aCode}`)).status).toBe(200);
    // Root sees every code, ownerless ones too (their maker deleted); an admin does not.
    expect((await t.root.delete(`/api/user/${await idOf('codes-admin-b')}`)).status).toBe(200);
    expect(await names(t.root, '/api/redemption/search?keyword=rr-')).toEqual(['rr-b', 'rr-root']);
    expect((await adminA.get(`/api/redemption/${bCode}`)).status).toBe(404);
    // A common user's codes (made while they were an admin) are the admins' to manage.
    const demoted = await user('codes-demoted', 10);
    const dCode = await make(demoted, 'rr-d');
    expect((await t.root.put(`/api/user/${await idOf('codes-demoted')}`, { role: 1 })).status).toBe(200);
    expect((await adminA.get(`/api/redemption/${dCode}`)).body.data.name).toBe('rr-d');
  });

  it("an admin sees, changes and deletes only their own channels and those of users below them: not root's, another admin's or the ones from before makers were recorded", async () => {
    const adminA = await user('channels-admin-a', 10);
    const adminB = await user('channels-admin-b', 10);
    const make = async (c: HttpClient, name: string) => {
      const res = await c.post('/api/channel/', { name, base_url: 'http://127.0.0.1:9', key: 'sk-upstream-key', models: 'm', price: 1 });
      expect(res.status, res.text).toBe(201);
      return res.body.data.id as number;
    };
    const rootChannel = await make(t.root, 'ch-root');
    const bChannel = await make(adminB, 'ch-b');
    const aChannel = await make(adminA, 'ch-a');
    // Made before channels recorded their maker: root's.
    const legacy = await make(adminA, 'ch-legacy');
    await t.platform.db('channels').where({ id: legacy }).update({ created_by: null });
    const names = async (c: HttpClient) => (await c.get('/api/channel/?page_size=100')).body.data.map((ch: { name: string }) => ch.name);

    expect(await names(adminA)).toEqual(['ch-a']);
    expect((await adminA.get('/api/channel/search?keyword=ch-')).body.data.map((ch: { name: string }) => ch.name)).toEqual(['ch-a']);
    for (const other of [rootChannel, bChannel, legacy]) {
      expect((await adminA.get(`/api/channel/${other}`)).status).toBe(404);
      expect((await adminA.put('/api/channel/', { id: other, price: 0 })).status).toBe(404);
      expect((await adminA.put(`/api/channel/${other}`, { status: 2 })).status).toBe(404);
      expect((await adminA.delete(`/api/channel/${other}`)).status).toBe(404);
    }
    expect(await t.platform.db('channels').whereIn('id', [rootChannel, bChannel, legacy]).orderBy('id').select('price', 'status')).toEqual([
      { price: 1, status: 1 },
      { price: 1, status: 1 },
      { price: 1, status: 1 },
    ]);
    // Their own they change and delete; root does any.
    expect((await adminA.put('/api/channel/', { id: aChannel, price: 0 })).body.data.price).toBe(0);
    expect((await adminA.delete(`/api/channel/${aChannel}`)).status).toBe(200);
    expect(await names(t.root)).toEqual(expect.arrayContaining(['ch-root', 'ch-b', 'ch-legacy']));
    expect((await t.root.put('/api/channel/', { id: bChannel, price: 2 })).body.data.price).toBe(2);
    expect((await t.root.delete(`/api/channel/${legacy}`)).status).toBe(200);
    // A demoted admin's channels are the admins' to manage.
    expect((await t.root.put(`/api/user/${await idOf('channels-admin-b')}`, { role: 1 })).status).toBe(200);
    expect((await adminA.put('/api/channel/', { id: bChannel, price: 3 })).body.data.price).toBe(3);
  });

  it("an admin neither sees nor deletes root's mail accounts, but does a common user's", async () => {
    const admin = await user('mail-admin', 10);
    const common = await user('mail-common');
    const account = (email: string) => ({
      email,
      auth: { type: 'password', password: 'secret-password' },
      imap: { host: 'imap.example.com' },
      smtp: { host: 'smtp.example.com' },
    });
    expect((await t.root.post('/api/mail/accounts', account('root-box@example.com'))).status).toBe(201);
    expect((await common.post('/api/mail/accounts', account('common-box@example.com'))).status).toBe(201);
    const seen = (await admin.get('/api/mail/accounts')).body.map((a: { email: string }) => a.email);
    expect(seen).toContain('common-box@example.com');
    expect(seen).not.toContain('root-box@example.com');
    expect((await admin.delete('/api/mail/accounts/root-box@example.com')).status).toBe(404);
    expect((await admin.post('/api/process-inbox', { email: 'root-box@example.com' })).status).toBe(404);
    expect((await t.root.get('/api/mail/accounts')).body.map((a: { email: string }) => a.email)).toContain('root-box@example.com');
  });
});

describe('API keys with limits of their own reach only /v1', () => {
  const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
  const limitedKinds = [
    { name: 'quota', remain_quota: 20 },
    { name: 'models', unlimited_quota: true, models: 'local-hash-v1' },
    { name: 'subnet', unlimited_quota: true, subnet: '127.0.0.0/8' },
    { name: 'expiry', unlimited_quota: true, expired_time: inAnHour() },
  ];
  /** The error's words, whichever shape the area writes ({success,message} or {error}). */
  const said = (res: { body: any }) => String(res.body?.message ?? res.body?.error ?? '');
  const box = (email: string) => ({
    email,
    auth: { type: 'password', password: 'secret-password' },
    imap: { host: 'imap.example.com' },
    smtp: { host: 'smtp.example.com' },
  });

  it("a key with limits reads none of its owner's mail, adds no mail account, changes no account detail and deletes none of the owner's other keys", async () => {
    const owner = await user('limited-owner');
    expect((await owner.post('/api/mail/accounts', box('limited-owner@example.com'))).status).toBe(201);
    const other = (await owner.post('/api/token/', { name: 'the unlimited one', unlimited_quota: true })).body.data;
    const async = { prefer: 'respond-async' };
    for (const kind of limitedKinds) {
      const made = await owner.post('/api/token/', kind);
      expect(made.status, made.text).toBe(201);
      const secret = made.body.data.key as string;
      const key = t.anon.withAuth(`Bearer ${secret}`);
      for (const [label, res] of [
        ['read the newest mail', await key.get('/api/mail-new?email=limited-owner@example.com', async)],
        // msOauth2api's clients send their credential as a `password` parameter: the same key, the same refusal.
        ['read mail with the key as password', await t.anon.post('/api/mail-all', { email: 'limited-owner@example.com', password: secret }, async)],
        ['list mail accounts', await key.get('/api/mail/accounts')],
        ['add a mail account', await key.post('/api/mail/accounts', box(`added-by-${kind.name}@example.com`))],
        ['change the display name', await key.put('/api/user/self', { display_name: 'owned' })],
        ['read the account', await key.get('/api/user/self')],
        ['delete another key', await key.delete(`/api/token/${other.id}`)],
        ['make a key', await key.post('/api/token/', { name: 'escape', unlimited_quota: true })],
        ['raise a key', await key.put('/api/token/', { id: other.id, unlimited_quota: true })],
        ['make the access token', await key.get('/api/user/token')],
      ] as const) {
        expect(res.status, `${kind.name}: ${label}: ${res.text}`).toBe(403);
        expect(said(res), `${kind.name}: ${label}`).toMatch(/limits of its own.*only call \/v1/);
      }
    }
    // Nothing happened: no job, no account, no name, every key still there.
    expect(await t.platform.db('job_owners').where({ owner_id: await idOf('limited-owner') })).toEqual([]);
    expect((await owner.get('/api/mail/accounts')).body.map((a: { email: string }) => a.email)).toEqual(['limited-owner@example.com']);
    expect((await owner.get('/api/user/self')).body.data.display_name).not.toBe('owned');
    const names = (await owner.get('/api/token/?page_size=100')).body.data.map((x: { name: string }) => x.name);
    expect(names).toEqual(expect.arrayContaining(['the unlimited one', ...limitedKinds.map((k) => k.name)]));
    expect(names).not.toContain('escape');
  });

  it('every documented route outside /v1 that takes credentials refuses a key with limits (403, from /openapi.json)', async () => {
    // Root's key: nothing below is refused for its role, only for the key's limits.
    const secret = (await t.root.post('/api/token/', { name: 'root-capped', remain_quota: 20 })).body.data.key as string;
    const doc = (await t.anon.get('/openapi.json')).body as { paths: Record<string, Record<string, { security: unknown[] }>> };
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op.security.length > 0 && !path.startsWith('/v1'))
        .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
    );
    expect(routes.length).toBeGreaterThan(40);
    const refusedOthers: string[] = [];
    for (const { method, path } of routes) {
      // Parameters that name nothing: on a build without the rule, nothing of anyone's is touched.
      const concrete = path.replace('{email}', 'nobody@example.com').replace(/\{[A-Za-z]+\}/g, '987654');
      const res = await t.anon.request(method, concrete, method === 'GET' ? undefined : {}, { authorization: `Bearer ${secret}`, prefer: 'respond-async' });
      if (res.status !== 403 || !/limits of its own/.test(said(res))) refusedOthers.push(`${method} ${path}: ${res.status} ${res.text.slice(0, 120)}`);
    }
    expect(refusedOthers).toEqual([]);
    // Still good where it is meant for.
    expect((await t.anon.get('/v1/models', { authorization: `Bearer ${secret}` })).status).toBe(200);
  });

  it("a key without limits acts as its user under /api: reads the account, makes and deletes keys, does the admin's work", async () => {
    const adminClient = await user('unlimited-admin', 10);
    const full = t.anon.withAuth(`Bearer ${(await adminClient.post('/api/token/', { name: 'full', unlimited_quota: true })).body.data.key}`);
    expect((await full.get('/api/user/self')).body.data.username).toBe('unlimited-admin');
    const made = await full.post('/api/token/', { name: 'made-by-key', unlimited_quota: true });
    expect(made.status).toBe(201);
    expect((await full.delete(`/api/token/${made.body.data.id}`)).status).toBe(200);
    expect((await full.get('/api/user/token')).status).toBe(200);
    expect((await full.post('/api/redemption/', { name: 'by-key', quota: 5 })).status).toBe(201);
    expect((await full.post('/api/mail/accounts', box('unlimited-admin@example.com'))).status).toBe(201);
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  it('answers 401 JSON without the token or with a wrong one, and the metrics with it', async () => {
    const none = await t.anon.get('/metrics');
    expect(none.status).toBe(401);
    expect(none.body.error).toMatch(/METRICS_TOKEN/);
    expect((await t.anon.get('/metrics', { authorization: 'Bearer wrong-token-0123456789' })).status).toBe(401);
    const ok = await t.anon.get('/metrics', { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/switchyard_process_resident_memory_bytes/);
  });

  it("guards a worker process's METRICS_PORT the same way", async () => {
    const port = await freePort();
    const server = serveMetrics(port, '127.0.0.1', METRICS_TOKEN);
    try {
      await new Promise((r) => server.once('listening', r));
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).toBe(200);
    } finally {
      server.close();
    }
  });
});
