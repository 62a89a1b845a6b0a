// npx switchyard rotate-secret-key, interrupted half way (SIGKILL while it waits on a row another transaction holds)
// and run again: afterwards, with the old key gone from every process, every mail account still connects, every
// sealed job still runs, every channel key, webhook secret and kept idempotent answer still opens. Real Postgres,
// Redis and Dovecot; the CLI as a child process. And the generated key (DATA_DIR/secret.key) rotated on the embedded
// database.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { type DovecotServer, startDovecot } from '../helpers/dovecot.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { REDIS_URL, startTestApp, type TestApp } from '../helpers/services.js';
import { until } from '../helpers/until.js';
import { createSecrets } from '../../src/secrets.js';
import { type JobEnvelope, schedulerSignedId, verifyEnvelope } from '../../src/jobs/wire.js';
import { Queue } from 'bullmq';

const OLD = 'test-secret-key-0123456789abcdef0123456789'; // the test environment's SECRET_KEY
const NEW = 'the-new-secret-key-after-rotation-0123456789';
const onlyNew = createSecrets(NEW);
const onlyOld = createSecrets(OLD);

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('rotate-secret-key on Postgres', () => {
  let dovecot: DovecotServer;
  let before: TestApp;

  it('interrupted half way and run again: then, on the new key alone, mail accounts connect, sealed jobs run, channel keys and secrets open', async () => {
    dovecot = await startDovecot();
    cleanups.push(() => dovecot.stop());
    // Before: an API on the old key, no workers (its jobs wait in Redis, sealed and signed under the old key).
    before = await startTestApp({ workers: false });
    const env = before.testEnv;
    cleanups.push(() => env.cleanup());
    for (let i = 1; i <= 6; i++) {
      const c = await before.root.post('/api/channel/', { name: `ch${i}`, type: 1, base_url: 'http://127.0.0.1:9', key: `sk-channel-key-${i}`, models: 'm' });
      expect(c.status, c.text).toBe(201);
    }
    const accounts = [];
    for (let i = 1; i <= 3; i++) accounts.push(await addPasswordAccount(before.root, dovecot, `rot${i}@example.com`));
    const hook = await before.root.post('/api/webhooks', { url: 'https://hooks.example.com/in' }, { 'idempotency-key': 'made-once' });
    expect(hook.status, hook.text).toBe(201);
    const rotated = await before.root.post(`/api/webhooks/${hook.body.id}/rotate-secret`);
    expect(rotated.status, rotated.text).toBe(200);
    const jobIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      jobIds.push(
        await before.platform.jobs.enqueue(
          'embeddings.create',
          { requests: [{ model: 'local-hash-v1', inputs: [`private text ${i}`], tokens: [3] }] },
          { owner: 1 },
        ),
      );
    }
    await before.close({ keepData: true });

    const db = new pg.Client({ connectionString: env.dbUrl });
    await db.connect();
    cleanups.push(() => db.end());
    const sealedIn = async (table: string, column: string): Promise<string[]> =>
      (await db.query(`select ${column} as v from ${table} where ${column} is not null order by 1`)).rows.map((r) => r.v);
    const channels = async () => (await db.query('select id, key_enc from channels order by id')).rows as { id: number; key_enc: string }[];

    // Another transaction holds channel 4: the rotation seals 1-3 again and waits there; killed while it waits.
    const holder = new pg.Client({ connectionString: env.dbUrl });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query('begin');
    await holder.query('select * from channels where id = 4 for update');
    const rotateEnv = { ...env.env, SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: OLD };
    const first = startCli(['rotate-secret-key'], rotateEnv);
    cleanups.push(() => first.proc.kill('SIGKILL'));
    await until(
      'channels 1-3 under the new key, the rotation waiting on channel 4',
      async () => {
        const rows = await channels();
        const waiting = await db.query(
          "select 1 from pg_stat_activity where wait_event_type = 'Lock' and application_name = 'switchyard' and datname = current_database()",
        );
        return rows.map((r) => onlyNew.isCurrent(r.key_enc)).join() === 'true,true,true,false,false,false' && waiting.rowCount === 1;
      },
      (ok) => ok,
    );
    first.proc.kill('SIGKILL');
    expect((await first.done).signal).toBe('SIGKILL');
    // Its statement dies with it, as on a machine that went down (Postgres would otherwise run it once the lock goes).
    await db.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'switchyard' and datname = current_database()");
    await holder.query('rollback');
    // Half way: what was done is under the new key, the rest still under the old one; nothing is under neither.
    for (const r of await channels()) expect(onlyNew.isCurrent(r.key_enc) || onlyOld.isCurrent(r.key_enc)).toBe(true);
    for (const v of await sealedIn('mail_accounts', 'secret_enc')) expect(onlyOld.isCurrent(v)).toBe(true);
    const embeddings = new Queue<JobEnvelope>('embeddings', { connection: { url: REDIS_URL }, prefix: env.prefix });
    cleanups.push(() => embeddings.close());
    for (const id of jobIds) expect(onlyOld.isCurrent((await embeddings.getJob(id))!.data.sealed!)).toBe(true);

    // --check counts what is left, and changes nothing.
    const counted = await runCli(['rotate-secret-key', '--check'], rotateEnv);
    expect(counted.code).toBe(1);
    expect(counted.stdout).toMatch(/\n\d+ values are still under the previous key\n$/);
    expect((await channels()).map((r) => onlyNew.isCurrent(r.key_enc)).join()).toBe('true,true,true,false,false,false');

    // Run again: it carries on, and says what to do next.
    const second = await runCli(['rotate-secret-key'], rotateEnv);
    expect(second.code, second.stderr).toBe(0);
    const out = second.stdout.split('\n');
    // Channels 4-6, 3 mail accounts, the webhook's secret and previous secret.
    expect(out[0]).toBe('postgres: 8 sealed again, 3 already under SECRET_KEY, 0 opened by neither key');
    // The two system schedules' templates; the 3 embeddings jobs (the schedules' next runs are made again with their
    // templates, already under the new key); the webhook's kept answer.
    expect(out[1]).toBe(
      'redis: job schedulers 2 signed again (0 already); jobs 3 sealed or signed again (2 already); idempotent answers 1 sealed again (0 already)',
    );
    expect(out[2]).toBe('done: every stored value is under SECRET_KEY. Remove SECRET_KEY_PREVIOUS from every process and restart them.');
    for (const [table, column] of [
      ['channels', 'key_enc'],
      ['mail_accounts', 'secret_enc'],
      ['webhook_endpoints', 'secret_enc'],
      ['webhook_endpoints', 'previous_secret_enc'],
    ] as const) {
      const values = await sealedIn(table, column);
      expect(values.length, `${table}.${column}`).toBeGreaterThan(0);
      for (const v of values) expect(onlyNew.isCurrent(v), `${table}.${column}`).toBe(true);
    }
    // Nothing left: a check says so.
    const check = await runCli(['rotate-secret-key', '--check'], { ...env.env, SECRET_KEY: NEW });
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/every stored value is under SECRET_KEY\n$/);

    // After: processes on the new key alone, with workers.
    const after = await startTestApp({ testEnv: env, env: { SECRET_KEY: NEW } });
    cleanups.push(() => after.close({ keepData: true }));
    expect(after.platform.secrets.rotating).toBe(false);
    for (const a of accounts) {
      const res = await after.root.post('/api/mail-new', { email: a.email });
      expect(res.status, res.text).toBe(200);
    }
    for (const id of jobIds) {
      const job = (await after.platform.jobs.queues.get('embeddings')!.getJob(id))!;
      await until(
        `job ${id} done`,
        () => job.getState(),
        (s) => s === 'completed' || s === 'failed',
      );
      expect(await job.getState(), (await after.platform.jobs.queues.get('embeddings')!.getJob(id))?.failedReason).toBe('completed');
    }
    const rows = await channels();
    expect(rows.map((r) => after.platform.secrets.decrypt(r.key_enc))).toEqual([1, 2, 3, 4, 5, 6].map((i) => `sk-channel-key-${i}`));
    // The answer kept for the Idempotency-Key opens: replayed as it was first given.
    const replay = await after.root.post('/api/webhooks', { url: 'https://hooks.example.com/in' }, { 'idempotency-key': 'made-once' });
    expect(replay.status, replay.text).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.secret).toBe(hook.body.secret);
    // The job schedulers' templates (the system schedules) are signed under the new key.
    const schedulers = await after.platform.jobs.queues.get('schedules')!.getJobSchedulers(0, -1);
    expect(schedulers.length).toBeGreaterThan(0);
    for (const s of schedulers) expect(verifyEnvelope(onlyNew, schedulerSignedId(s.key), s.name, s.template!.data), s.key).toBe(true);
  }, 300_000);
});

describe('rotate-secret-key and a value neither key opens', () => {
  it('leaves it as it is, seals the rest again, names it and fails asking for its key', async () => {
    const before = await startTestApp({ workers: false });
    const env = before.testEnv;
    cleanups.push(() => env.cleanup());
    for (const name of ['a', 'b']) {
      const c = await before.root.post('/api/channel/', { name, type: 1, base_url: 'http://127.0.0.1:9', key: `sk-${name}-key`, models: 'm' });
      expect(c.status, c.text).toBe(201);
    }
    await before.close({ keepData: true });
    const foreign = createSecrets('a-third-key-nobody-here-knows-0123456789').encrypt('sk-lost');
    const db = new pg.Client({ connectionString: env.dbUrl });
    await db.connect();
    cleanups.push(() => db.end());
    await db.query("update channels set key_enc = $1 where name = 'a'", [foreign]);
    const run = await runCli(['rotate-secret-key'], { ...env.env, SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: OLD });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^postgres: 1 sealed again, 0 already under SECRET_KEY, 1 opened by neither key\n/);
    expect(run.stderr).toMatch(/ {2}opened by neither key: channels\.key_enc of row \d+\n/);
    expect(run.stderr).toMatch(
      /switchyard: 1 stored value open under neither SECRET_KEY nor SECRET_KEY_PREVIOUS: set SECRET_KEY_PREVIOUS to the key they were sealed with and run this again\n$/,
    );
    const rows = (await db.query('select name, key_enc from channels order by name')).rows;
    expect(rows[0].key_enc).toBe(foreign);
    expect(onlyNew.decrypt(rows[1].key_enc)).toBe('sk-b-key');
  }, 120_000);
});

describe('rotate-secret-key on the embedded database, with the generated key (DATA_DIR/secret.key)', () => {
  it('writes a new key into secret.key, seals everything again under it, and deletes the previous one', async () => {
    const generated = { SECRET_KEY: '' };
    const before = await startTestApp({ embedded: true, workers: false, env: generated });
    const env = before.testEnv;
    cleanups.push(() => env.cleanup());
    const made = await before.root.post('/api/channel/', { name: 'up', type: 1, base_url: 'http://127.0.0.1:9', key: 'sk-embedded-channel', models: 'm' });
    expect(made.status, made.text).toBe(201);
    await before.close({ keepData: true });
    const keyFile = path.join(env.dataDir, 'secret.key');
    const oldKey = fs.readFileSync(keyFile, 'utf8');

    const run = await runCli(['rotate-secret-key'], { ...env.env, ...generated });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^postgres: 1 sealed again, 0 already under SECRET_KEY, 0 opened by neither key\n/);
    expect(run.stdout).toMatch(new RegExp(`done: every stored value is under the new key in ${env.dataDir}/secret.key; the previous key is deleted\n$`));
    const newKey = fs.readFileSync(keyFile, 'utf8');
    expect(newKey).not.toBe(oldKey);
    expect(fs.existsSync(`${keyFile}.previous`)).toBe(false);

    const after = await startTestApp({ testEnv: env, workers: false, env: generated });
    cleanups.push(() => after.close({ keepData: true }));
    const row = await after.platform.db('channels').first('key_enc');
    expect(after.platform.secrets.decrypt(row.key_enc)).toBe('sk-embedded-channel');
    expect(() => createSecrets(oldKey).decrypt(row.key_enc)).toThrow();
  }, 180_000);
});
