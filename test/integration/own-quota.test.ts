// Root sets its own quota (nobody is above it to do so), admins too where ADMIN_SELF_QUOTA is true, nobody else: with
// PUT /api/user/self {quota}; the change is a top-up row, and /api/status says who may.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let plain: TestApp;
let allowing: TestApp;

async function userOf(t: TestApp, name: string, role: number): Promise<HttpClient> {
  expect((await t.root.post('/api/user/', { username: name, password: `${name}-password`, role })).status).toBe(201);
  const c = new HttpClient(t.url);
  await c.login(name, `${name}-password`);
  return c;
}

beforeAll(async () => {
  [plain, allowing] = await Promise.all([startTestApp({ workers: false }), startTestApp({ workers: false, env: { ADMIN_SELF_QUOTA: 'true' } })]);
});
afterAll(async () => {
  await Promise.all([plain?.close(), allowing?.close()]);
});

describe('own quota', () => {
  it('root sets its own quota, written as a top-up row; nobody else may by default', async () => {
    const res = await plain.root.put('/api/user/self', { quota: 5000 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.quota).toBe(5000);
    expect((await plain.root.get('/api/user/self')).body.data.quota).toBe(5000);
    const rows = (await plain.root.get('/api/log/self?type=1')).body.data;
    expect(rows.map((r: { content: string; quota: number }) => [r.content, r.quota])).toContainEqual(['Quota changed from 0 to 5000 by root (#1)', 5000]);
    // The same quota again changes nothing and writes no row.
    await plain.root.put('/api/user/self', { quota: 5000 });
    expect((await plain.root.get('/api/log/self?type=1')).body.data).toHaveLength(rows.length);

    for (const [name, role] of [
      ['ann', 10],
      ['cal', 1],
    ] as const) {
      const c = await userOf(plain, name, role);
      const refused = await c.put('/api/user/self', { quota: 1 });
      expect(refused.status).toBe(403);
      expect(refused.body.message).toContain('only root sets its own quota');
      expect((await c.get('/api/user/self')).body.data.quota).toBe(0);
    }
    expect((await plain.anon.get('/api/status')).body.data.own_quota_min_role).toBe(100);
  });

  it('with ADMIN_SELF_QUOTA=true admins set theirs too, common users still not', async () => {
    expect((await allowing.anon.get('/api/status')).body.data.own_quota_min_role).toBe(10);
    const admin = await userOf(allowing, 'ada', 10);
    const res = await admin.put('/api/user/self', { quota: 700 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.quota).toBe(700);
    const common = await userOf(allowing, 'cy', 1);
    expect((await common.put('/api/user/self', { quota: 700 })).status).toBe(403);
    expect((await common.get('/api/user/self')).body.data.quota).toBe(0);
  });
});
