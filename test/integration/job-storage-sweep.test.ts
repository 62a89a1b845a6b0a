// The workers' sweep of leftover job payloads (docs/jobs.md, Clean-up): any number of processes sweep at once, each
// batch skipping the rows another sweep holds (FOR UPDATE SKIP LOCKED), on real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepJobStorage } from '../../src/jobs/wire.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
const AGE = 7 * 86_400;
beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await t?.close();
});

async function orphans(prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const created_at = t.platform.db.raw('now() - make_interval(secs => ?)', [AGE + 3600]);
  for (let i = 0; i < n; i += 500) await t.platform.db('job_payloads').insert(ids.slice(i, i + 500).map((job_id) => ({ job_id, data: '{}', created_at })));
  return ids;
}
const left = async (prefix: string) =>
  Number((await t.platform.db('job_payloads').where('job_id', 'like', `${prefix}-%`).count<{ n: string }[]>('* as n'))[0]!.n);

describe('the job storage sweep', () => {
  it('does not wait for rows another sweep holds: it deletes the rest and leaves those', async () => {
    const ids = await orphans('held', 1_500);
    // Another sweep's batch, held: 500 rows locked in an open transaction.
    const other = await t.platform.db.transaction();
    try {
      await other('job_payloads').whereIn('job_id', ids.slice(0, 500)).forUpdate().select('job_id');
      // This sweep would wait for those locks without SKIP LOCKED: lock_timeout turns a wait into an error.
      const swept = await t.platform.db.transaction(async (trx) => {
        await trx.raw("set local lock_timeout = '3s'");
        return sweepJobStorage(trx, { payloadMaxAgeSeconds: AGE, batch: 500 });
      });
      expect(swept.payloads).toBe(1_000);
    } finally {
      await other.rollback();
    }
    expect(await left('held')).toBe(500);
  });

  it('four sweeps at once, on connections of their own, delete every leftover row between them', async () => {
    await orphans('many', 4_000);
    const before = (await left('held')) + (await left('many'));
    const runs = await Promise.all(Array.from({ length: 4 }, () => sweepJobStorage(t.platform.db, { payloadMaxAgeSeconds: AGE, batch: 500 })));
    expect(runs.reduce((n, r) => n + r.payloads, 0)).toBe(before);
    expect((await left('held')) + (await left('many'))).toBe(0);
  });
});
