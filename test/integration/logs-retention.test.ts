// The log table's day partitions, on Postgres and on embedded PGlite: made ahead, strays in the default partition
// moved in, retention by dropping whole partitions (the tables are gone, not emptied), DELETE /api/log/'s partition
// drops, and an API process doing its maintenance on start.
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createDb, migrateLatest, type Db } from '../../src/db.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/log.js';
import { DAY_SECONDS, dayStart, partitionName } from '../../src/logs/partitions.js';
import { deleteLogsBefore, dropExpiredPartitions, ensurePartitions, insertLogs, listPartitions } from '../../src/logs/store.js';
import { jobKinds } from '../../src/job-kinds.js';
import { createPlatform } from '../../src/platform.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';

const envs: TestEnv[] = [];
afterAll(async () => {
  for (const e of envs) await e.cleanup();
});

const now = Math.floor(Date.now() / 1000);
const today = dayStart(now);
const day = (n: number) => today + n * DAY_SECONDS;

async function freshDb(embedded: boolean): Promise<Db> {
  const env = await createTestEnv({ embedded });
  envs.push(env);
  const db = await createDb(parseConfig(env.env));
  await migrateLatest(db);
  return db;
}

const tableExists = async (db: Db, name: string) => {
  const res = await db.raw('select to_regclass(?) as t', [name]);
  return ((res.rows ?? res) as { t: string | null }[])[0]!.t !== null;
};
const whereRow = async (db: Db, content: string) => {
  const res = await db.raw('select tableoid::regclass::text as part from logs where content = ?', [content]);
  return ((res.rows ?? res) as { part: string }[]).map((r) => r.part);
};
const row = (createdAt: number, content: string) => ({ type: 2 as const, userId: 1, username: 'u', quota: 1, content, createdAt });

for (const embedded of [false, true]) {
  describe(embedded ? 'on embedded PGlite' : 'on Postgres', () => {
    // One database for these tests (PGlite takes seconds to start): each looks at its own days and rows.
    let db: Db;
    beforeAll(async () => {
      db = await freshDb(embedded);
    });
    afterAll(async () => {
      await db?.destroy();
    });

    it('migrating makes the partitions of yesterday to 7 days ahead, and rows land in their day', async () => {
      {
        const days = (await listPartitions(db)).map((p) => p.day);
        for (let n = -1; n <= 7; n++) expect(days, `day ${n}`).toContain(day(n));
        await insertLogs(db, [row(now, 'today')]);
        expect(await whereRow(db, 'today')).toEqual([partitionName(today)]);
      }
    });

    it('a row of a day with no partition lands in the default one, and moves into its day when that partition is made', async () => {
      {
        await insertLogs(db, [row(day(20) + 5, 'far ahead')]);
        expect(await whereRow(db, 'far ahead')).toEqual(['logs_default']);
        const made = await ensurePartitions(db, day(20));
        expect(made).toContain(partitionName(day(20)));
        expect(await whereRow(db, 'far ahead')).toEqual([partitionName(day(20))]);
        expect(await ensurePartitions(db, day(20))).toEqual([]);
      }
    });

    it('retention drops every day partition wholly older than LOG_RETENTION_DAYS (the tables go) and keeps the younger days and their rows', async () => {
      {
        // Partitions of 40 to 30 days ago, as a process would have made them then.
        for (let n = -40; n <= -30; n += 5) await ensurePartitions(db, day(n));
        await insertLogs(db, [
          row(day(-40) + 60, 'forty days old'),
          row(day(-35) + 60, 'thirty-five'),
          row(day(-31) + 60, 'thirty-one'),
          row(day(-29) + 60, 'twenty-nine'),
        ]);
        const dropped = await dropExpiredPartitions(db, 30, now);
        // Cutoff: the start of the day 30 days ago; every day wholly before it goes.
        expect(dropped).toContain(partitionName(day(-40)));
        expect(dropped).toContain(partitionName(day(-31)));
        expect(dropped).not.toContain(partitionName(day(-30)));
        expect(await tableExists(db, partitionName(day(-40)))).toBe(false);
        expect(await tableExists(db, partitionName(day(-31)))).toBe(false);
        expect(await tableExists(db, partitionName(day(-30)))).toBe(true);
        const left = (await db('logs').whereIn('content', ['forty days old', 'thirty-five', 'thirty-one', 'twenty-nine']).select('content')).map(
          (r) => r.content,
        );
        expect(left).toEqual(['twenty-nine']);
        expect(await dropExpiredPartitions(db, 30, now)).toEqual([]);
      }
    });

    it('deleting before a time drops the partitions wholly before it, deletes from the one it falls in, and counts both', async () => {
      {
        await ensurePartitions(db, day(-5));
        await insertLogs(db, [row(day(-5) + 10, 'a'), row(day(-5) + 20, 'b'), row(day(-4) + 10, 'c'), row(day(-1) + 10, 'd'), row(day(-1) + 5000, 'e')]);
        const target = day(-1) + 100;
        const older = Number((await db('logs').where('created_at', '<', target).count({ n: '*' }))[0]!.n);
        expect(older).toBeGreaterThanOrEqual(4);
        expect(await deleteLogsBefore(db, target)).toBe(older);
        expect(await tableExists(db, partitionName(day(-5)))).toBe(false);
        expect(await tableExists(db, partitionName(day(-4)))).toBe(false);
        expect(await tableExists(db, partitionName(day(-1)))).toBe(true);
        expect((await db('logs').whereIn('content', ['a', 'b', 'c', 'd', 'e']).select('content')).map((r) => r.content)).toEqual(['e']);
        expect(Number((await db('logs').where('created_at', '<', target).count({ n: '*' }))[0]!.n)).toBe(0);
      }
    });
  });
}

describe('an API process', () => {
  it('on start, makes the partitions it lacks and drops the ones past LOG_RETENTION_DAYS', async () => {
    const env = await createTestEnv({ env: { LOG_RETENTION_DAYS: '3' } });
    envs.push(env);
    const config = parseConfig(env.env);
    const db = await createDb(config);
    await migrateLatest(db);
    await ensurePartitions(db, day(-10));
    await insertLogs(db, [row(day(-10) + 1, 'old'), row(day(-2) + 1, 'kept')]);
    // As if today's partitions had never been made (a process down for days).
    await db.raw(`drop table ${partitionName(day(7))}`);
    await db.destroy();

    const platform = await createPlatform(config, createLogger('silent'), { bootstrapRoot: false, listenForJobs: false, jobs: jobKinds });
    const server: Server = createApp(platform).listen(0, '127.0.0.1');
    try {
      let parts: number[] = [];
      for (let i = 0; i < 100; i++) {
        parts = (await listPartitions(platform.db)).map((p) => p.day);
        if (!parts.some((d) => d < day(-3)) && parts.includes(day(7))) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(parts).not.toContain(day(-10));
      expect(parts).not.toContain(day(-5));
      expect(parts).toContain(day(-3));
      expect(parts).toContain(day(7));
      expect((await platform.db('logs').select('content')).map((r) => r.content)).toEqual(['kept']);
    } finally {
      server.close();
      await platform.close();
    }
  });
});
