// GET /api/jobs: the caller's jobs, newest first, keyset pages, filters; admins may name a user below them. Jobs are
// real content.batch jobs through Redis and this process's workers; the owner index is written at submit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient, type Res } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { item } from '../shared/content-suite.js';

let t: TestApp;
const users: Record<string, { id: number; client: HttpClient }> = {};
const submitted: Record<string, string[]> = { alice: [], bob: [] };

async function addUser(username: string, role: number) {
  const res = await t.root.post('/api/user/', { username, password: `${username}-password`, role });
  expect(res.status, res.text).toBe(201);
  const client = new HttpClient(t.url);
  await client.login(username, `${username}-password`);
  users[username] = { id: res.body.data.id, client };
}

/** Submits a batch asynchronously (202) and returns its job id. */
async function submit(who: string): Promise<string> {
  const res = await users[who]!.client.post('/api/content/batch', [item()], { prefer: 'respond-async' });
  expect(res.status, res.text).toBe(202);
  submitted[who]!.push(res.body.jobId);
  return res.body.jobId as string;
}

async function settled(c: HttpClient, ids: string[]) {
  for (let i = 0; i < 400; i++) {
    const states = await Promise.all(ids.map(async (id) => (await c.get(`/api/jobs/${id}`)).body.state));
    if (states.every((s) => s === 'completed' || s === 'failed')) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  t = await startTestApp();
  await addUser('alice', 1);
  await addUser('bob', 1);
  await addUser('admin1', 10);
  await addUser('admin2', 10);
  for (let i = 0; i < 5; i++) await submit('alice');
  await submit('bob');
  await settled(users.alice!.client, submitted.alice!);
  await settled(users.bob!.client, submitted.bob!);
});
afterAll(async () => {
  await t?.close();
});

const ids = (body: { jobs: { id: string }[] }) => body.jobs.map((j) => j.id);

describe('GET /api/jobs', () => {
  it("lists the caller's jobs only, newest first, with their state and status URL but not their result", async () => {
    const res = await users.alice!.client.get('/api/jobs');
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body)).toEqual([...submitted.alice!].reverse());
    expect(res.body.nextCursor).toBeNull();
    const job = res.body.jobs[0];
    expect(job).toMatchObject({ queue: 'content', name: 'content.batch', state: 'completed', statusUrl: `/api/jobs/${job.id}`, error: null });
    expect(job).not.toHaveProperty('result');
    expect(ids((await users.bob!.client.get('/api/jobs')).body)).toEqual(submitted.bob);
  });

  it('pages by keyset: limit, then the nextCursor as cursor, until it is null', async () => {
    const c = users.alice!.client;
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Res = await c.get(`/api/jobs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, res.text).toBe(200);
      seen.push(...ids(res.body));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual([...submitted.alice!].reverse());
    expect(pages).toBe(3);
  });

  it('filters by queue, state and name', async () => {
    const c = users.alice!.client;
    expect(ids((await c.get('/api/jobs?queue=content&state=completed&name=content.batch')).body)).toHaveLength(5);
    expect(ids((await c.get('/api/jobs?queue=mail')).body)).toEqual([]);
    expect(ids((await c.get('/api/jobs?state=failed')).body)).toEqual([]);
    expect(ids((await c.get('/api/jobs?name=mail.send')).body)).toEqual([]);
  });

  it('shows a job submitted asynchronously at once, before it has run', async () => {
    const id = await submit('bob');
    const listed = (await users.bob!.client.get('/api/jobs?limit=1')).body.jobs;
    expect(listed.map((j: { id: string }) => j.id)).toEqual([id]);
    await settled(users.bob!.client, [id]);
  });

  it('drops a job BullMQ no longer has (past its retention) from the listing and from the owner index', async () => {
    const id = await submit('bob');
    await settled(users.bob!.client, [id]);
    const job = await t.platform.jobs.getJob(id);
    await job!.remove();
    expect(ids((await users.bob!.client.get('/api/jobs')).body)).not.toContain(id);
    expect(await t.platform.db('job_owners').where({ job_id: id }).first()).toBeUndefined();
  });

  it('lets an admin name a user below them (user=), not root or another admin; a common user may not name anyone else', async () => {
    expect(ids((await users.admin1!.client.get(`/api/jobs?user=${users.alice!.id}`)).body)).toEqual([...submitted.alice!].reverse());
    expect(ids((await t.root.get(`/api/jobs?user=${users.alice!.id}&limit=1`)).body)).toEqual([submitted.alice!.at(-1)]);
    expect((await users.admin1!.client.get(`/api/jobs?user=${users.admin2!.id}`)).status).toBe(403);
    expect((await users.admin1!.client.get('/api/jobs?user=1')).status).toBe(403);
    expect((await users.admin1!.client.get('/api/jobs?user=999999')).status).toBe(404);
    const refused = await users.bob!.client.get(`/api/jobs?user=${users.alice!.id}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: expect.any(String) });
    // Naming yourself is just your own list.
    expect((await users.bob!.client.get(`/api/jobs?user=${users.bob!.id}`)).status).toBe(200);
  });

  it('refuses bad parameters with 400 naming them, and anonymous callers with 401', async () => {
    for (const [q, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['cursor=abc', 'cursor'],
      ['queue=nope', 'queue'],
      ['state=done', 'state'],
      [`name=${'n'.repeat(101)}`, 'name'],
      ['user=-1', 'user'],
    ]) {
      const res = await users.alice!.client.get(`/api/jobs?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error, q).toContain(param);
    }
    expect((await t.anon.get('/api/jobs')).status).toBe(401);
  });
});
