// No charge without its consume row, no consume row without its charge: an API process SIGKILLed in the middle of a
// stream of priced calls leaves every user's used_quota growth equal to the sum of their consume rows; and a charge
// whose row cannot be written is not made at all. Real Postgres and Redis; the API a child process; a fake upstream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { spawnServer, type Spawned } from '../helpers/spawn.js';

let t: TestApp;
let up: FakeOpenAI;
let child: (Spawned & { url: string }) | undefined;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  // local-hash-v1 priced too, so both kinds of /v1 call are charged; this process's workers serve the child's jobs.
  t = await startTestApp({ env: { LOCAL_MODEL_PRICE: '1000' } });
  const ch = await t.root.post('/api/channel/', {
    type: 'openai',
    name: 'crash',
    key: 'sk-crash-upstream-key',
    base_url: up.url,
    models: 'crash-model',
    price: 2000,
  });
  expect(ch.status, ch.text).toBe(201);
});
afterAll(async () => {
  await child?.stop('SIGKILL');
  await t?.close();
  await up?.stop();
});

async function payer(name: string, quota: number) {
  const created = await t.root.post('/api/user/', { username: name, password: `${name}-password`, quota });
  expect(created.status, created.text).toBe(201);
  const session = new HttpClient(t.url);
  await session.login(name, `${name}-password`);
  const key = (await session.post('/api/token/', { name: `key-${name}`, unlimited_quota: true })).body.data.key as string;
  return { id: created.body.data.id as number, key };
}

/** Per user: what users says was spent, and what the consume rows add up to. */
async function ledger(ids: number[]) {
  const db = t.platform.db;
  const users = await db('users').whereIn('id', ids).select('id', 'quota', 'used_quota', 'request_count');
  const rows = await db('logs')
    .whereIn('user_id', ids)
    .where('type', 2)
    .groupBy('user_id')
    .select('user_id', db.raw('sum(quota)::bigint as quota'), db.raw('sum(request_count)::bigint as calls'));
  return ids.map((id) => {
    const u = users.find((x) => x.id === id)!;
    const r = rows.find((x) => x.user_id === id);
    return {
      id,
      quota: Number(u.quota),
      used: Number(u.used_quota),
      requests: Number(u.request_count),
      logged: Number(r?.quota ?? 0),
      loggedCalls: Number(r?.calls ?? 0),
    };
  });
}

describe('an API process killed (SIGKILL) during a stream of priced calls', () => {
  it("leaves each user's used_quota growth equal to the sum of their consume rows and request_count to their count; the reservations of the calls it cut off are given back once they expire, each with an error row", async () => {
    const payers = await Promise.all(['crash-a', 'crash-b', 'crash-c'].map((n) => payer(n, 1_000_000_000)));
    const ids = payers.map((p) => p.id);
    const before = await ledger(ids);
    // The sweep below must be the one that gives the cut-off calls' reservations back: this process's own 30 s sweep
    // could take them first (a race the count below would lose), so it is stopped here.
    t.platform.ledger.stopSweeping();
    // The upstream takes 300 ms to answer, so each upstream stream has a call between its reservation and its
    // settlement almost all the time: the kill leaves reservations held, and the sweep half below has work to prove.
    up.behaviour = { kind: 'ok', reportUsage: true, delayMs: 300 };
    // Reservations expire after max(QUOTA_RESERVATION_TTL_MS, SYNC_WAIT_MS + 5 s): 8 s here.
    child = await spawnServer(['api'], { ...t.testEnv.env, SYNC_WAIT_MS: '3000', QUOTA_RESERVATION_TTL_MS: '1000' });
    const api = child;

    let ok = 0;
    let failed = 0;
    let stop = false;
    // Two streams per user (the local model and the priced upstream one), each call after the last, until the process dies.
    const streams = payers.flatMap((p, u) =>
      ['local-hash-v1', 'crash-model'].map(async (model) => {
        const v1 = new HttpClient(api.url).withAuth(`Bearer ${p.key}`);
        for (let i = 0; !stop; i++) {
          try {
            const res = await v1.post('/v1/embeddings', { model, input: [`crash ${u} ${model} ${i}`, `second input ${i}`] });
            if (res.status === 200) ok++;
            else failed++;
          } catch {
            failed++;
            stop = true;
          }
        }
      }),
    );
    // Kill it once the calls flow, while six are in flight.
    for (let i = 0; i < 400 && ok < 60; i++) await new Promise((r) => setTimeout(r, 25));
    expect(ok).toBeGreaterThanOrEqual(60);
    expect(await api.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await Promise.all(streams);
    up.behaviour = { kind: 'ok', reportUsage: true };
    expect(failed).toBeGreaterThan(0);
    // Postgres ends the dead process's sessions (and rolls back what they had open) once their sockets close.
    await new Promise((r) => setTimeout(r, 1_000));

    const after = await ledger(ids);
    let rowsTotal = 0;
    after.forEach((a, i) => {
      const b = before[i]!;
      expect(a.used - b.used, `user ${a.id}: used_quota growth vs consume rows`).toBe(a.logged - b.logged);
      expect(a.requests - b.requests, `user ${a.id}: request_count growth vs consume rows`).toBe(a.loggedCalls - b.loggedCalls);
      rowsTotal += a.loggedCalls;
    });
    // Every answered call was charged and logged (calls cut off by the kill may or may not have been).
    expect(rowsTotal).toBeGreaterThanOrEqual(ok);

    // The calls the kill cut off between their reservation and its settlement left quota held, with no row yet.
    const held = await t.platform.db('quota_reservations').whereIn('user_id', ids).select('user_id', 'amount');
    expect(held.length, 'calls the kill cut off while they held a reservation').toBeGreaterThan(0);
    after.forEach((a, i) => {
      const heldForUser = held.filter((r) => r.user_id === a.id).reduce((n, r) => n + Number(r.amount), 0);
      expect(before[i]!.quota - a.quota, `user ${a.id}: quota taken = consume rows + reservations held`).toBe(a.logged - before[i]!.logged + heldForUser);
    });
    // Once they expire, a sweep (every API process runs one every 30 s) gives them back, each with an error row.
    await new Promise((r) => setTimeout(r, 9_000));
    expect(await t.platform.ledger.sweep()).toBe(held.length);
    const swept = await ledger(ids);
    swept.forEach((a, i) => expect(before[i]!.quota - a.quota, `user ${a.id}: quota taken = consume rows`).toBe(a.logged - before[i]!.logged));
    const returned = await t.platform
      .db('logs')
      .whereIn('user_id', ids)
      .where('type', 5)
      .where('content', 'like', 'A call stopped before it was settled%')
      .count<{ n: string }[]>('* as n');
    expect(Number(returned[0]!.n)).toBe(held.length);
  }, 60_000);
});

describe('a charge whose consume row cannot be written', () => {
  it('is not made: used_quota and request_count stay, the reservation goes back, an error row says why, and the call fails', async () => {
    const db = t.platform.db;
    // A refusal only this model's consume rows meet: the row insert fails inside the settling transaction.
    await db.raw(
      `create function refuse_consume_row() returns trigger language plpgsql as $$ begin raise exception 'consume rows refused for this test'; end $$`,
    );
    await db.raw(
      `create trigger refuse_consume_row before insert on logs for each row when (new.type = 2 and new.model_name = 'atomic-model') execute function refuse_consume_row()`,
    );
    try {
      const ch = await t.root.post('/api/channel/', {
        type: 'openai',
        name: 'atomic',
        key: 'sk-atomic-upstream-key',
        base_url: up.url,
        models: 'atomic-model',
        price: 1000,
      });
      expect(ch.status, ch.text).toBe(201);
      const p = await payer('atomic', 1_000);
      const [before] = await ledger([p.id]);
      const res = await t.anon.post('/v1/embeddings', { model: 'atomic-model', input: 'charge me' }, { authorization: `Bearer ${p.key}` });
      expect(res.status).toBe(500);
      const [after] = await ledger([p.id]);
      expect(after).toEqual(before);
      const rows = await db('logs').where({ user_id: p.id, model_name: 'atomic-model' }).select('type', 'quota', 'status_code');
      expect(rows).toEqual([{ type: 5, quota: 0, status_code: 500 }]);
    } finally {
      await db.raw('drop trigger refuse_consume_row on logs');
      await db.raw('drop function refuse_consume_row()');
    }
  });
});
