// What jobs keep in Postgres (src/jobs/wire.ts) on real Postgres: a payload too large for the queue and read back by
// its reference, a result kept until it expires (a re-run overwrites it), taken once by its one reader, everything of a
// removed job dropped, and the sweep of what is past its age: only that, batch by batch, up to its number of batches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createDb, type Db, migrateLatest } from '../../src/db.js';
import { AppError } from '../../src/errors.js';
import { dropJobStorage, dropPayload, loadPayload, loadResult, storePayload, storeResult, sweepJobStorage, takeResult } from '../../src/jobs/wire.js';
import { createSecrets } from '../../src/secrets.js';
import { createTestEnv, type TestEnv } from '../helpers/services.js';

let env: TestEnv;
let db: Db;
const secrets = createSecrets('a-secret-key-for-the-api-and-workers-0123');

beforeAll(async () => {
  env = await createTestEnv();
  db = await createDb(parseConfig(env.env));
  await migrateLatest(db);
});
afterAll(async () => {
  await db?.destroy();
  await env?.cleanup();
});

const payloadRows = async (prefix: string) => Number((await db('job_payloads').where('job_id', 'like', `${prefix}%`).count<{ n: string }[]>('* as n'))[0]!.n);
const resultRows = async (prefix: string) => Number((await db('job_results').where('job_id', 'like', `${prefix}%`).count<{ n: string }[]>('* as n'))[0]!.n);

describe('a payload kept in Postgres', () => {
  it('is read back by its reference, dropped with the envelope that names it, and its absence is a final 410', async () => {
    await storePayload(db, 'content-p0', JSON.stringify({ another: 'job' }));
    await storePayload(db, 'content-p1', JSON.stringify({ big: 'x'.repeat(10) }));
    const envelope = { owner: 1, payloadRef: 'content-p1' };
    expect(await loadPayload(db, secrets, envelope)).toEqual({ big: 'x'.repeat(10) });
    await dropPayload(db, { owner: 1 });
    expect(await payloadRows('content-p1')).toBe(1);
    await dropPayload(db, envelope);
    expect(await payloadRows('content-p1')).toBe(0);
    expect(await payloadRows('content-p0')).toBe(1);
    const gone = await loadPayload(db, secrets, envelope).catch((e) => e);
    expect(gone).toBeInstanceOf(AppError);
    expect((gone as AppError).toJSON()).toMatchObject({
      status: 410,
      code: 'payload_missing',
      message: 'The payload of this job is gone (job_payloads row removed)',
    });
    expect((gone as AppError).retriable).toBe(false);
  });
});

describe('a result kept in Postgres', () => {
  it('is kept for its time to live, and a re-run of the job overwrites it', async () => {
    await storeResult(db, 'content-r1', JSON.stringify({ n: 1 }), 3_600);
    await storeResult(db, 'content-r1', JSON.stringify({ n: 2 }), 7_200);
    expect(await loadResult(db, 'content-r1')).toEqual({ n: 2 });
    const { secs } = await db('job_results').where({ job_id: 'content-r1' }).first(db.raw('extract(epoch from expires_at - now())::int as secs'));
    expect(secs).toBeGreaterThan(3_600);
    expect(secs).toBeLessThanOrEqual(7_200);
    expect(await loadResult(db, 'content-none')).toBeUndefined();
  });

  it("is taken once: the reader gets it and the row is gone, and no other job's result", async () => {
    await storeResult(db, 'content-r2', JSON.stringify(['v']), 60);
    await storeResult(db, 'content-r3', JSON.stringify(['w']), 60);
    expect(await takeResult(db, 'content-r2')).toEqual({ found: true, result: ['v'] });
    expect(await takeResult(db, 'content-r2')).toEqual({ found: false });
    expect(await resultRows('content-r2')).toBe(0);
    expect(await loadResult(db, 'content-r3')).toEqual(['w']);
  });

  it("a removed job's payload and result both go, and no other job's", async () => {
    await storePayload(db, 'content-d1', '{}');
    await storeResult(db, 'content-d1', '{}', 60);
    await storePayload(db, 'content-d2', '{}');
    await storeResult(db, 'content-d2', '{}', 60);
    await dropJobStorage(db, 'content-d1');
    expect([await payloadRows('content-d1'), await resultRows('content-d1')]).toEqual([0, 0]);
    expect([await payloadRows('content-d2'), await resultRows('content-d2')]).toEqual([1, 1]);
  });
});

describe('the sweep', () => {
  it('deletes payloads past their age and results past their expiry, and nothing younger', async () => {
    const old = db.raw('now() - make_interval(secs => ?)', [7_200]);
    await db('job_payloads').insert([
      { job_id: 'sweep-a-old', data: '{}', created_at: old },
      { job_id: 'sweep-a-new', data: '{}' },
    ]);
    await db('job_results').insert([
      { job_id: 'sweep-a-expired', data: '{}', expires_at: db.raw("now() - interval '1 second'") },
      { job_id: 'sweep-a-live', data: '{}', expires_at: db.raw("now() + interval '1 hour'") },
    ]);
    expect(await sweepJobStorage(db, { payloadMaxAgeSeconds: 3_600 })).toEqual({ payloads: 1, results: 1 });
    expect(await db('job_payloads').where('job_id', 'like', 'sweep-a-%').pluck('job_id')).toEqual(['sweep-a-new']);
    expect(await db('job_results').where('job_id', 'like', 'sweep-a-%').pluck('job_id')).toEqual(['sweep-a-live']);
  });

  it('goes batch by batch until a batch is short, and stops after its number of batches', async () => {
    const old = db.raw('now() - make_interval(secs => ?)', [7_200]);
    await db('job_payloads').insert(Array.from({ length: 25 }, (_, i) => ({ job_id: `sweep-b-${i}`, data: '{}', created_at: old })));
    expect((await sweepJobStorage(db, { payloadMaxAgeSeconds: 3_600, batch: 10, maxBatches: 2 })).payloads).toBe(20);
    expect(await payloadRows('sweep-b-')).toBe(5);
    expect((await sweepJobStorage(db, { payloadMaxAgeSeconds: 3_600, batch: 10 })).payloads).toBe(5);
    expect(await payloadRows('sweep-b-')).toBe(0);
    await db('job_payloads').insert(Array.from({ length: 20 }, (_, i) => ({ job_id: `sweep-c-${i}`, data: '{}', created_at: old })));
    expect((await sweepJobStorage(db, { payloadMaxAgeSeconds: 3_600, batch: 10 })).payloads).toBe(20);
  });
});
