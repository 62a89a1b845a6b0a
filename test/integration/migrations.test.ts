// Every migration applies, rolls back completely and applies again, on Postgres and on embedded PGlite.
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createDb, migrateLatest, migrateRollbackAll } from '../../src/db.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';

const TABLES = [
  'files',
  'file_parts',
  'batches',
  'batch_requests',
  'batch_results',
  'batch_chunks',
  'schedules',
  'schedule_runs',
  'users',
  'sessions',
  'tokens',
  'redemptions',
  'content_items',
  'content_stats',
  'job_payloads',
  'channels',
  'embedding_cache',
  'mail_accounts',
  'mail_messages',
  'mail_sends',
  'job_results',
  'logs',
  'job_owners',
  'quota_reservations',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
];

const envs: TestEnv[] = [];
afterAll(async () => {
  for (const e of envs) await e.cleanup();
});

for (const embedded of [false, true]) {
  describe(embedded ? 'on embedded PGlite' : 'on Postgres', () => {
    it('up, all the way down, and up again', async () => {
      const env = await createTestEnv({ embedded });
      envs.push(env);
      const db = await createDb(parseConfig(env.env));
      try {
        const applied = await migrateLatest(db);
        expect(applied).toEqual([
          '001_accounts',
          '002_content',
          '003_embeddings',
          '004_mail',
          '005_content_owner',
          '006_job_results',
          '007_logs',
          '008_quota_functions',
          '009_ledger',
          '010_embeddings_functions',
          '011_settle_what_was_taken',
          '012_channel_creator',
          '013_content_url_key',
          '014_channel_cache_purge',
          '015_webhooks',
          '016_schedules',
          '017_batches',
          '018_channel_providers',
        ]);
        for (const t of TABLES) expect(await db.schema.hasTable(t), t).toBe(true);
        // The counters' triggers work right after migrating.
        await db('content_items').insert({
          id: '01900000-0000-7000-8000-000000000001',
          source: 's',
          url: 'https://x.example',
          summary: 's',
          content: 'c',
          score: 1,
          analyzed_at: new Date(),
          created_at: new Date(),
          updated_at: new Date(),
        });
        expect((await db('content_stats').first()).count).toBe(1);
        // The batched statements' functions, and only those (008's single reservation gave way to the ledger).
        const functions = async () =>
          (await db.raw("select proname from pg_proc where proname like 'switchyard%' order by proname")).rows.map((r: { proname: string }) => r.proname);
        expect(await functions()).toEqual([
          'switchyard_cache_read',
          'switchyard_cache_write',
          'switchyard_embeddings_round',
          'switchyard_ledger',
          'switchyard_sweep_reservations',
        ]);

        await migrateRollbackAll(db);
        for (const t of TABLES) expect(await db.schema.hasTable(t), t).toBe(false);
        const fn = await db.raw("select count(*)::int as n from pg_proc where proname = 'content_stats_apply'");
        expect(fn.rows[0].n).toBe(0);
        expect(await functions()).toEqual([]);

        expect(await migrateLatest(db)).toEqual(applied);
        expect(await migrateLatest(db)).toEqual([]);
      } finally {
        await db.destroy();
      }
    });
  });
}

describe('migrators starting together on Postgres', () => {
  it('four at the same moment (all connected first, then released together): one applies every migration, the others wait and find nothing to do', async () => {
    const env = await createTestEnv();
    envs.push(env);
    const dbs = await Promise.all(Array.from({ length: 4 }, () => createDb(parseConfig(env.env))));
    try {
      // The barrier: every migrator holds a connection before any starts, so their first steps overlap.
      await Promise.all(dbs.map((db) => db.raw('select 1')));
      const outcomes = await Promise.all(dbs.map((db) => migrateLatest(db).then((done) => done.length)));
      const all = (await dbs[0]!('knex_migrations').count<{ n: string }[]>({ n: '*' }))[0]!.n;
      expect(outcomes.sort((a, b) => b - a)).toEqual([Number(all), 0, 0, 0]);
      const names = (await dbs[0]!('knex_migrations').pluck('name')) as string[];
      expect(new Set(names).size).toBe(names.length);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
    }
  }, 180_000);
});
