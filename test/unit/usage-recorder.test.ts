// The free-call recorder when Postgres fails: calls are never kept waiting on it after a first failed write.
import { describe, expect, it } from 'vitest';
import { UsageRecorder } from '../../src/accounts/usage.js';
import type { Db } from '../../src/db.js';
import type { Logger } from '../../src/log.js';

describe('UsageRecorder with Postgres away', () => {
  it('after one inline row fails, the next free calls join their aggregate without trying Postgres again', async () => {
    let tries = 0;
    const db = {
      raw: () => {
        tries++;
        return Promise.reject(new Error('connect ECONNREFUSED'));
      },
    } as unknown as Db;
    const warnings: string[] = [];
    const log = { warn: (_: unknown, msg: string) => warnings.push(msg) } as unknown as Logger;
    const recorder = new UsageRecorder(db, log, 60, 60_000);
    const entry = { type: 2 as const, userId: 7, tokenId: 3, tokenName: 'k', modelName: 'local-hash-v1', content: 'free' };
    await recorder.record(7, 3, entry);
    expect(tries).toBe(1);
    for (let i = 0; i < 5; i++) await recorder.record(7, 3, entry);
    expect(tries).toBe(1);
    expect(warnings).toHaveLength(1);
  });

  it("the one warning names the database's error and says the call joins its minute's aggregate", async () => {
    const logged: { fields: unknown; msg: string }[] = [];
    const log = { warn: (fields: unknown, msg: string) => logged.push({ fields, msg }) } as unknown as Logger;
    const refused = new Error('connect ECONNREFUSED');
    const db = { raw: () => Promise.reject(refused) } as unknown as Db;
    const recorder = new UsageRecorder(db, log, 60, 60_000);
    await recorder.record(7, 3, { type: 2 as const, userId: 7, tokenId: 3, tokenName: 'k', modelName: 'local-hash-v1', content: 'free' });
    expect(logged).toHaveLength(1);
    expect(logged[0]!.fields).toEqual({ err: refused });
    expect(logged[0]!.msg).toMatch(/could not write a free call's log row; it joins its minute's aggregate/);
  });
});
