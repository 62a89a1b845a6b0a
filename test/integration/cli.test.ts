// The operator CLI against real Postgres and Redis (and the embedded database): status, queues, passwords, an admin,
// export and import between two deployments. Each command runs as a child process, as an operator runs it.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { HttpClient } from '../helpers/http.js';
import { createTestEnv, ROOT_PASSWORD, startTestApp, type TestApp, tempDir } from '../helpers/services.js';
import { spawnEntry } from '../helpers/spawn.js';
import { startWorkers } from '../../workers/index.js';

let t: TestApp;
const cleanups: (() => unknown)[] = [];
beforeAll(async () => {
  // The API in this process without workers: jobs it makes wait in their queues for the CLI to see.
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await t?.close();
});

const cli = (...args: string[]) => runCli(args, t.testEnv.env);

describe('npx switchyard status and queues', () => {
  it('status: what GET /api/status says (but the per-process start_time), the readiness checks, and every queue by state', async () => {
    for (let i = 0; i < 3; i++) await t.platform.jobs.enqueue('content.ping', {}, { owner: null });
    const run = await cli('status');
    expect(run.code, run.stderr).toBe(0);
    const status = JSON.parse(run.stdout);
    const { start_time: _, ...api } = (await t.anon.get('/api/status')).body.data;
    expect(status).toMatchObject(api);
    expect(status).not.toHaveProperty('start_time');
    expect(status.readiness).toMatchObject({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
    expect(Object.keys(status.queues).sort()).toEqual(['batches', 'content', 'embeddings', 'mail', 'schedules', 'webhooks']);
    expect(status.queues.content.waiting + status.queues.content.prioritized).toBe(3);
    expect(Object.keys(status.queues.mail)).toEqual(['waiting', 'prioritized', 'delayed', 'waiting-children', 'active', 'completed', 'failed']);
    const queues = JSON.parse((await cli('queues')).stdout);
    expect(queues).toEqual(status.queues);
  });

  it('queues drain: without --yes says what it would remove and removes nothing; with it, the waiting jobs go and a schedule keeps its next run', async () => {
    const waiting = async () => {
      const c = await t.platform.jobs.queues.get('content')!.getJobCounts('waiting', 'prioritized', 'delayed');
      return c.waiting! + c.prioritized! + c.delayed!;
    };
    for (let i = 0; i < 2; i++) await t.platform.jobs.enqueue('content.ping', {}, { owner: null });
    const n = await waiting();
    expect(n).toBeGreaterThanOrEqual(2);
    const asked = await cli('queues', 'drain', 'content');
    expect(asked.code).toBe(1);
    expect(asked.stderr).toBe(`switchyard: would remove ${n} waiting jobs (content ${n}); nothing was done. Run it again with --yes to do it.\n`);
    expect(await waiting()).toBe(n);
    const schedules = t.platform.jobs.queues.get('schedules')!;
    const ticksBefore = (await schedules.getJobSchedulers(0, -1)).map((s) => s.key).sort();
    expect(ticksBefore.length).toBeGreaterThan(0); // the system schedules
    const done = await cli('queues', 'drain', 'all', '--yes');
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(`removed: content ${n}, embeddings 0, mail 0, webhooks 0, schedules 0, batches 0\n`);
    expect(await waiting()).toBe(0);
    // Each schedule's scheduler and its next tick are still there.
    const after = await schedules.getJobSchedulers(0, -1);
    expect(after.map((s) => s.key).sort()).toEqual(ticksBefore);
    for (const s of after) expect(await schedules.getJob(`repeat:${s.key}:${s.next}`), s.key).toBeTruthy();
  });

  it('queues clean: removes ended jobs older than --older-than, of the --state asked; needs --yes', async () => {
    const workers = await startWorkers(t.platform, ['content']);
    cleanups.push(() => workers.close(5_000));
    for (let i = 0; i < 2; i++) await t.platform.jobs.run('content.ping', {}, { owner: null, waitMs: 30_000 });
    await workers.close(5_000);
    const content = t.platform.jobs.queues.get('content')!;
    expect((await content.getJobCounts('completed')).completed).toBe(2);
    expect((await cli('queues', 'clean', 'content', '--state', 'completed')).code).toBe(1);
    // None ended an hour ago: none go.
    const young = await cli('queues', 'clean', 'content', '--state', 'completed', '--older-than', '1h', '--yes');
    expect(young.stdout).toBe('removed: content 0\n');
    expect((await content.getJobCounts('completed')).completed).toBe(2);
    const all = await cli('queues', 'clean', 'content', '--yes');
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe('removed: content 2\n');
    expect((await content.getJobCounts('completed')).completed).toBe(0);
    expect((await cli('queues', 'clean', 'nosuchqueue', '--yes')).code).toBe(2);
    expect((await cli('queues', 'clean', 'content', '--state', 'running', '--yes')).code).toBe(2);
  });
});

describe('npx switchyard reset-password and create-admin', () => {
  it("reset-password root: a new password, printed once; the old one and root's sessions stop working; its failed-login counts are cleared", async () => {
    const session = new HttpClient(t.url);
    await session.login('root', ROOT_PASSWORD);
    // Locked out by guesses from this address (LOGIN_MAX_FAILURES = 10).
    for (let i = 0; i < 10; i++) await t.anon.post('/api/user/login', { username: 'root', password: `wrong-${i}` });
    expect((await t.anon.post('/api/user/login', { username: 'root', password: ROOT_PASSWORD })).status).toBe(429);

    const run = await cli('reset-password', 'root');
    expect(run.code, run.stderr).toBe(0);
    const m = /^new password of root \(#1\): ([A-Za-z0-9]{20})\n$/.exec(run.stdout);
    expect(m, run.stdout).toBeTruthy();
    expect(run.stderr).toBe('It is shown only now. Every session of the user has ended.\n');
    expect((await t.anon.post('/api/user/login', { username: 'root', password: ROOT_PASSWORD })).status).toBe(401);
    expect((await t.anon.post('/api/user/login', { username: 'root', password: m![1] })).status).toBe(200);
    await until(async () => (await session.get('/api/user/self')).status === 401);
    // The change is in root's log rows, by the CLI, without the password.
    const row = await t.platform.db('logs').where({ user_id: 1, type: 3 }).orderBy('id', 'desc').first();
    expect(row.content).toMatch(/by cli \(#0\)/);
    expect(row.content).toMatch(/password/);
    expect(JSON.stringify(row)).not.toContain(m![1]);
    // The other tests go on as root with the new password.
    await t.root.login('root', m![1]!);
  });

  it('reset-password of a name nobody has, or no name: one line, nothing changed', async () => {
    expect(await cli('reset-password', 'nobody-here')).toMatchObject({ code: 1, stderr: 'switchyard: no user is named "nobody-here"\n', stdout: '' });
    expect((await cli('reset-password')).code).toBe(2);
  });

  it('create-admin: an admin (role 10) with a random password printed once; a taken name is refused', async () => {
    const run = await cli('create-admin', 'ops', '--display-name', 'Operations');
    expect(run.code, run.stderr).toBe(0);
    const m = /^created admin ops \(#(\d+)\), password: ([A-Za-z0-9]{20})\n$/.exec(run.stdout);
    expect(m, run.stdout).toBeTruthy();
    const ops = new HttpClient(t.url);
    await ops.login('ops', m![2]!);
    expect((await ops.get('/api/user/self')).body.data).toMatchObject({ username: 'ops', role: 10, display_name: 'Operations' });
    // An admin: the users list is theirs to see.
    expect((await ops.get('/api/user/')).status).toBe(200);
    const again = await cli('create-admin', 'OPS');
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('switchyard: a user named "OPS" exists already (reset-password gives it a new password)\n');
    expect((await cli('create-admin', 'bad name!')).code).toBe(2);
  });
});

async function until(ok: () => Promise<boolean>, ms = 30_000) {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('npx switchyard export and import', () => {
  it("moves users (their passwords), API keys (hashed: the same key works there), channels (their keys sealed under the other deployment's SECRET_KEY) and content; importing again adds nothing", async () => {
    const made = await t.root.post('/api/user/', { username: 'alice', password: 'alice-password' });
    expect(made.status, made.text).toBe(201);
    const alice = new HttpClient(t.url);
    await alice.login('alice', 'alice-password');
    const key = (await alice.post('/api/token/', { name: 'moving', unlimited_quota: true })).body.data.key as string;
    const channel = await t.root.post('/api/channel/', { name: 'up', type: 1, base_url: 'http://127.0.0.1:9', key: 'sk-upstream-secret-1234', models: 'm1' });
    expect(channel.status, channel.text).toBe(201);
    for (const url of ['https://example.com/a', 'https://example.com/b']) {
      const c = await alice.post('/api/content', { source: 'moved', url, summary: 'a summary long enough', content: 'body', score: 4 });
      expect(c.status, c.text).toBe(201);
    }

    const dir = tempDir('sy-export');
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'export.jsonl');
    const exported = await cli('export', '--out', file);
    expect(exported.code, exported.stderr).toBe(0);
    // Every user of this deployment (root, alice, and whoever the tests before made).
    const users = Number((await t.platform.db('users').count({ n: '*' }))[0]!.n);
    expect(exported.stderr).toMatch(new RegExp(`^exported ${users} users, 1 API keys, 1 channels, 2 content items\\. `));
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const text = fs.readFileSync(file, 'utf8');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ format: 'switchyard-export', version: 1 });
    expect(lines.slice(1).map((l) => l.type)).toEqual([...Array(users).fill('user'), 'token', 'channel', 'content', 'content']);
    // Hashes only: no password, no API key; the channel's key in the clear (the other deployment cannot open this one's).
    expect(text).not.toContain('alice-password');
    expect(text).not.toContain(key.slice(3));
    expect(text).toContain('sk-upstream-secret-1234');
    expect(text).not.toContain('key_enc');
    // Never over an existing file.
    expect(await cli('export', '--out', file)).toMatchObject({ code: 1, stderr: `switchyard: ${file} exists already: name a new file\n` });

    const other = await startTestApp({ workers: false, env: { SECRET_KEY: 'the-other-deployments-secret-key-0123456789' } });
    cleanups.push(() => other.close());
    const imported = await runCli(['import', file], other.testEnv.env);
    expect(imported.code, imported.stderr).toBe(0);
    // root is there already (that deployment's own); the others come across.
    expect(imported.stdout).toBe(
      `added: user ${users - 1}, token 1, channel 1, content 2\nalready here, kept as they were: user 1, token 0, channel 0, content 0\n`,
    );
    const there = new HttpClient(other.url);
    await there.login('alice', 'alice-password');
    expect((await there.get('/api/user/self')).body.data.username).toBe('alice');
    expect((await other.anon.get('/v1/models', { authorization: `Bearer ${key}` })).status).toBe(200);
    const row = await other.platform.db('channels').where({ name: 'up' }).first();
    expect(other.platform.secrets.decrypt(row.key_enc)).toBe('sk-upstream-secret-1234');
    const items = (await there.get('/api/content?source=moved')).body as { url: string }[];
    expect(items.map((i) => i.url).sort()).toEqual(['https://example.com/a', 'https://example.com/b']);
    // The other deployment's root is its own: its password is not this one's.
    await new HttpClient(other.url).login('root', ROOT_PASSWORD);

    const twice = await runCli(['import', file], other.testEnv.env);
    expect(twice.stdout).toBe(`added: user 0, token 0, channel 0, content 0\nalready here, kept as they were: user ${users}, token 1, channel 1, content 2\n`);
    // A file that fails half way adds nothing (one transaction); a column this version does not have is dropped.
    const header = text.split('\n')[0];
    const carol = { type: 'user', row: { id: 99, username: 'carol', password_hash: 'x', role: 1, a_column_from_a_later_version: 1 } };
    const half = path.join(dir, 'half.jsonl');
    fs.writeFileSync(half, `${header}\n${JSON.stringify(carol)}\n{"type":"user"\n`);
    expect(await runCli(['import', half], other.testEnv.env)).toMatchObject({
      code: 1,
      stderr: 'switchyard: line 3 is not JSON: not a file written by switchyard export\n',
    });
    expect(await other.platform.db('users').where({ username: 'carol' }).first()).toBeUndefined();
    fs.writeFileSync(half, `${header}\n${JSON.stringify(carol)}\n`);
    expect((await runCli(['import', half], other.testEnv.env)).stdout).toMatch(/^added: user 1, token 0, channel 0, content 0\n/);
    expect(await other.platform.db('users').where({ username: 'carol' }).first()).toMatchObject({ role: 1 });
    // --out - writes to standard output.
    const toStdout = await cli('export', '--out', '-');
    expect(toStdout.stdout.split('\n')[0]).toMatch(/^\{"format":"switchyard-export","version":1,/);
    expect(toStdout.stdout.split('\n').length).toBe(lines.length + 1);
    // Not an export: refused before anything is added.
    const bad = path.join(dir, 'bad.jsonl');
    fs.writeFileSync(bad, '{"hello":1}\n');
    expect(await runCli(['import', bad], other.testEnv.env)).toMatchObject({
      code: 1,
      stderr: 'switchyard: the first line does not say format "switchyard-export": not a file written by switchyard export\n',
    });
  }, 120_000);
});

describe('the CLI on the embedded database (no DATABASE_URL)', () => {
  it('refuses while a server has DATA_DIR open; once it stops, works there, and the server started again sees what it did', async () => {
    const env = await createTestEnv({ embedded: true });
    cleanups.push(() => env.cleanup());
    const server = spawnEntry('server', [], { ...env.env, LOG_LEVEL: 'info' });
    cleanups.push(() => server.stop('SIGKILL'));
    await server.waitFor(/Switchyard listening/);
    const refused = await runCli(['create-admin', 'ops'], env.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^switchyard: another Switchyard process \(npm start, or the CLI\) is using the embedded database in /);
    expect((await server.stop()).code).toBe(0);

    const made = await runCli(['create-admin', 'ops'], env.env);
    expect(made.code, made.stderr).toBe(0);
    const password = /password: (\w+)/.exec(made.stdout)![1]!;
    const again = spawnEntry('server', [], { ...env.env, LOG_LEVEL: 'info' });
    cleanups.push(() => again.stop('SIGKILL'));
    const url = `http://127.0.0.1:${JSON.parse(await again.waitFor(/Switchyard listening/)).port}`;
    await new HttpClient(url).login('ops', password);
    expect((await again.stop()).code).toBe(0);
  }, 180_000);

  it('npx switchyard (the bin, which builds what changed first) answers help on standard output', async () => {
    const run = await runCli(['help'], t.testEnv.env, { bin: true });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Usage: npx switchyard <command>/);
    expect(run.stdout).toMatch(/rotate-secret-key/);
    const unknown = await runCli(['frobnicate'], t.testEnv.env, { bin: true });
    expect(unknown).toMatchObject({ code: 2, stderr: 'switchyard: unknown command "frobnicate" (npx switchyard help lists them)\n' });
  }, 120_000);
});
