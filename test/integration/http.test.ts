// HTTP behaviour every area shares: JSON errors for everything, request ids, health probes, settings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await t?.close();
});

describe('errors are JSON in the area shape', () => {
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

  it('a body over the limit is 413, without reading it all', async () => {
    const big = JSON.stringify({ username: 'x', password: 'y'.repeat(12 * 1024 * 1024) });
    const res = await t.anon.post('/api/user/login', big);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, message: expect.stringMatching(/too large/) });
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

  it('a wrong method is 405 with Allow', async () => {
    const res = await t.anon.request('PATCH', '/api/user/login');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('POST');
    expect(res.body.success).toBe(false);
    const opts = await t.anon.request('OPTIONS', '/api/token/');
    expect(opts.status).toBe(204);
    expect(opts.headers.get('allow')).toContain('GET');
  });

  it('no stack traces or HTML anywhere', async () => {
    for (const res of [await t.anon.post('/api/user/login', '{'), await t.anon.get('/x'), await t.anon.request('DELETE', '/healthz')]) {
      expect(res.text).not.toMatch(/<html|at .*\.ts:\d+/i);
    }
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
    expect((await t.anon.get('/readyz')).body).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
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

  it('defaults match the manual', () => {
    const c = parseConfig({});
    expect(c).toMatchObject({ PORT: 3000, REDIS_URL: 'redis://127.0.0.1:6379', QUEUE_PREFIX: '{switchyard}', SYNC_WAIT_MS: 30_000, embeddedDb: true });
    expect(c.WORKER_QUEUES).toEqual(['content', 'embeddings', 'mail']);
    expect(Object.isFrozen(c)).toBe(true);
  });
});
