// The app on the embedded PGlite database: login, users, tokens, redemption (migrations: migrations.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { HttpClient } from '../helpers/http.js';

describe('the app on PGlite', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ embedded: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('logs in root, creates a user and a token', async () => {
    expect(t.config.embeddedDb).toBe(true);
    expect((await t.root.get('/api/user/self')).body.data.role).toBe(100);
    expect((await t.root.post('/api/user/', { username: 'erin', password: 'erin-password' })).status).toBe(201);
    const erin = new HttpClient(t.url);
    await erin.login('erin', 'erin-password');
    const tok = await erin.post('/api/token/', { name: 'pglite', unlimited_quota: true });
    expect(tok.status).toBe(201);
    expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${tok.body.data.key}` })).body.data.username).toBe('erin');
  });

  it('redeems a code once when ten requests ask together (PGlite runs them one at a time: the race itself is proven on Postgres, accounts.test.ts)', async () => {
    const [key] = (await t.root.post('/api/redemption/', { name: 'pg', quota: 7 })).body.data;
    const results = await Promise.all(Array.from({ length: 10 }, () => t.root.post('/api/user/topup', { key })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    const row = (await t.root.get('/api/redemption/')).body.data.find((r: { key: string }) => r.key === key);
    expect((await t.root.delete(`/api/redemption/${row.id}`)).status).toBe(200);
    expect((await t.root.delete(`/api/redemption/${row.id}`)).status).toBe(404);
  });
});
