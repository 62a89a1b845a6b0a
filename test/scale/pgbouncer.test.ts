// docs/deployment-and-scale-out.md (PgBouncer): Postgres behind a real PgBouncer 1.18 in transaction pooling mode. The client sends
// nothing PgBouncer refuses, the migration lock holds no session state, and the database paths of every area
// (migrations, accounts, content, jobs, the mail store, embeddings quota) work through it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createDb, migrateLatest, migrateRollbackAll, type Db } from '../../src/db.js';
import { migrationSource } from '../../migrations/index.js';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { createTestDatabase, startTestApp, type TestApp } from '../helpers/services.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';

let pgbouncer: PgBouncer;
const drops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  // Four server connections: fewer than the migrators and API connections below, as in a real deployment.
  pgbouncer = await startPgBouncer({ poolSize: 4 });
});

afterAll(async () => {
  for (const drop of drops.reverse()) await drop().catch(() => {});
  await pgbouncer?.stop();
});

/** A fresh database, and its URL through PgBouncer. */
async function databaseBehindPgBouncer(): Promise<{ name: string; url: string }> {
  const db = await createTestDatabase();
  drops.push(() => db.drop());
  return { name: db.name, url: pgbouncer.url(db.name) };
}

const dbThrough = (url: string, extra: Record<string, string> = {}) =>
  createDb(parseConfig({ DATABASE_URL: url, DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_POOL_MAX: '3', ...extra }));

describe('PgBouncer in transaction mode', () => {
  it('statement_timeout is not sent at connect time when DATABASE_STATEMENT_TIMEOUT_MS=0 (PgBouncer refuses it); the timeout is set by PgBouncer', async () => {
    const { url } = await databaseBehindPgBouncer();
    const sending = await createDb(parseConfig({ DATABASE_URL: url }));
    try {
      await expect(sending.raw('select 1')).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
    } finally {
      await sending.destroy();
    }
    const db = await dbThrough(url);
    try {
      // The helper's connect_query, the way the PgBouncer example of docs/deployment-and-scale-out.md sets it.
      expect((await db.raw('show statement_timeout')).rows[0].statement_timeout).toBe('30s');
    } finally {
      await db.destroy();
    }
  });

  it('eight migrators at once on an empty database, with four server connections: each migration applied once, and the lock is free afterwards', async () => {
    const MIGRATIONS = await migrationSource.getMigrations([]);
    const { url } = await databaseBehindPgBouncer();
    const dbs: Db[] = await Promise.all(Array.from({ length: 8 }, () => dbThrough(url)));
    try {
      const applied = await Promise.all(dbs.map((db) => migrateLatest(db)));
      expect(applied.filter((a) => a.length > 0)).toEqual([MIGRATIONS]);
      const rows = await dbs[0]!('knex_migrations').select('name').orderBy('id');
      expect(rows.map((r: { name: string }) => r.name)).toEqual(MIGRATIONS);
      // A lock left behind on one of PgBouncer's server connections would make these wait (or fail).
      for (const db of dbs.slice(0, 4)) {
        const started = Date.now();
        expect(await migrateLatest(db)).toEqual([]);
        expect(Date.now() - started).toBeLessThan(2_000);
      }
      await migrateRollbackAll(dbs[1]!);
      expect(await dbs[2]!.schema.hasTable('users')).toBe(false);
      expect(await migrateLatest(dbs[3]!)).toEqual(MIGRATIONS);
      const { rows: locks } = await dbs[0]!.raw(
        "select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())",
      );
      expect(locks[0].n).toBe(0);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
    }
  }, 60_000);

  describe('the API and workers through PgBouncer', () => {
    let t: TestApp;
    let dovecot: DovecotServer;
    let smtp: SmtpTestServer;
    let dbName: string;
    const email = `pgbouncer-${Date.now()}@example.test`;

    beforeAll(async () => {
      const target = await databaseBehindPgBouncer();
      dbName = target.name;
      [dovecot, smtp] = await Promise.all([startDovecot(), startSmtp({ users: { [email]: 'imap-password' } })]);
      t = await startTestApp({
        env: { DATABASE_URL: target.url, DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_POOL_MAX: '6', LOCAL_MODEL_PRICE: '1000' },
      });
      await addPasswordAccount(t.root, dovecot, email, smtp);
      for (let i = 0; i < 2; i++)
        await dovecot.deliver(email, 'INBOX', buildMessage({ from: 'a@service.example', to: email, subject: `hello ${i}`, text: 'hi' }));
    }, 90_000);

    afterAll(async () => {
      await t?.close();
      await Promise.all([dovecot?.stop(), smtp?.stop()]);
    });

    it('really goes through PgBouncer', async () => {
      expect(t.config.DATABASE_URL).toContain(`:${pgbouncer.port}/`);
      const mine = (await pgbouncer.stats()).find((s) => s.database === dbName);
      expect(mine?.total_xact_count).toBeGreaterThan(10);
    });

    it('accounts: users, sessions, tokens, redemption top-up, and disabling a user ends their session', async () => {
      expect((await t.root.post('/api/user/', { username: 'pat', password: 'pat-password' })).status).toBe(201);
      const pat = new HttpClient(t.url);
      const { id } = (await pat.login('pat', 'pat-password')).body.data;
      const key = (await pat.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
      expect((await t.anon.get('/api/user/self', { authorization: `Bearer ${key}` })).status).toBe(200);
      const [code] = (await t.root.post('/api/redemption/', { name: 'pb', quota: 300 })).body.data;
      expect((await pat.post('/api/user/topup', { key: code })).body).toMatchObject({ success: true, data: 300 });
      expect((await pat.post('/api/user/topup', { key: code })).status).toBe(400);
      expect((await t.root.put(`/api/user/${id}`, { status: 2 })).status).toBe(200);
      expect((await pat.get('/api/user/self')).status).toBe(401);
    });

    it('content: a batch job, upserts, search, stats and delete', async () => {
      const items = Array.from({ length: 30 }, (_, i) => ({
        source: 'pgbouncer',
        url: `https://pgbouncer.example/${i}`,
        title: `pooled item ${i}`,
        summary: `summary ${i}`,
        content: `content ${i}`,
        score: 5,
      }));
      expect((await t.root.post('/api/content/batch', items)).body).toMatchObject({ success: 30, failed: 0 });
      expect((await t.root.post('/api/content/batch', items.slice(0, 10))).body).toMatchObject({ success: 10, failed: 0 });
      expect((await t.root.get('/api/stats')).body.bySource.pgbouncer).toBe(30);
      const found = await t.root.get('/api/content?q=pooled%20item%2017&source=pgbouncer');
      expect(found.status, found.text).toBe(200);
      expect(found.body.map((i: { title: string }) => i.title)).toEqual(['pooled item 17']);
      expect(found.headers.get('x-total-count')).toBe('1');
      const created = await t.root.post('/api/content', { source: 'pgbouncer', url: 'https://pgbouncer.example/one', summary: 's', content: 'c', score: 1 });
      expect(created.status, created.text).toBe(201);
      const upserted = await t.root.post('/api/content', { source: 'pgbouncer', url: 'https://pgbouncer.example/one', summary: 's', content: 'c', score: 9 });
      expect([upserted.status, upserted.body.id, upserted.body.score]).toEqual([200, created.body.id, 9]);
      expect((await t.root.delete(`/api/content/${created.body.id}`)).status).toBe(200);
      expect((await t.root.get('/api/stats')).body.bySource.pgbouncer).toBe(30);
    });

    it('jobs and the mail store: a mail fetch and a send, their payloads and results kept in Postgres and read back', async () => {
      const fetched = await t.root.post('/api/mail-all', { email }, { prefer: 'respond-async' });
      expect(fetched.status, fetched.text).toBe(202);
      let job: { state: string; result: { messages: { subject: string }[] } } | undefined;
      for (let i = 0; i < 100; i++) {
        job = (await t.root.get(`/api/jobs/${fetched.body.jobId}`)).body;
        if (job?.state === 'completed' || job?.state === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(job?.state).toBe('completed');
      expect(job!.result.messages.map((m) => m.subject).sort()).toEqual(['hello 0', 'hello 1']);
      // Mail jobs' results live in job_results, not in Redis.
      expect(await t.platform.db('job_results').where({ job_id: fetched.body.jobId }).first()).toBeDefined();

      const sent = await t.root.post('/api/send-mail', { email, to: 'friend@example.test', subject: 'through the pooler', text: 'x' });
      expect(sent.status, sent.text).toBe(200);
      expect(sent.body.accepted).toEqual(['friend@example.test']);
      expect(smtp.received.map((m) => m.parsed.subject)).toContain('through the pooler');
      // mail.send's payload went through job_payloads and is gone once sent.
      expect(Number((await t.platform.db('job_payloads').count({ n: '*' }).first())!.n)).toBe(0);
    });

    it('embeddings quota: 20 concurrent calls with quota for exactly 5 → 5 succeed, 15 are refused, nothing left or overspent', async () => {
      expect((await t.root.post('/api/user/', { username: 'payer', password: 'payer-password', quota: 1_000_000 })).status).toBe(201);
      const payer = new HttpClient(t.url);
      const { id } = (await payer.login('payer', 'payer-password')).body.data;
      const key = (await payer.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key as string;
      const v1 = t.anon.withAuth(`Bearer ${key}`);
      const quota = async () => (await payer.get('/api/user/self')).body.data.quota as number;
      expect((await v1.post('/v1/embeddings', { model: 'local-hash-v1', input: 'race' })).status).toBe(200);
      const perCall = 1_000_000 - (await quota());
      expect(perCall).toBeGreaterThan(0);
      expect((await t.root.put(`/api/user/${id}`, { quota: perCall * 5 })).status).toBe(200);
      const results = await Promise.all(Array.from({ length: 20 }, () => v1.post('/v1/embeddings', { model: 'local-hash-v1', input: 'race' })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(5);
      expect(results.filter((r) => r.status === 403)).toHaveLength(15);
      expect(await quota()).toBe(0);
    });
  });
});
