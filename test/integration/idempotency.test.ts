// Idempotency-Key (docs/jobs.md#idempotent-requests), against the real services: one mail at a real SMTP sink for 20
// concurrent sends with one key, 422 for the key reused on another request, 409 while the first runs, replays that
// answer the same job, keys per user, one content row, nothing of a mail in Redis, and the job id that survives a lost
// record.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { HttpClient } from '../helpers/http.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { freePort, PrivateRedis } from '../helpers/redis-server.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';
import { item } from '../shared/content-suite.js';

const stamp = Date.now();
const SENDERS = [`idem-a-${stamp}@example.test`, `idem-b-${stamp}@example.test`];
/** A sender the SMTP sink does not know: its sends fail (535 at AUTH). */
const REFUSED = `idem-refused-${stamp}@example.test`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dovecot: DovecotServer;
let smtp: SmtpTestServer;
let t: TestApp;
let bob: HttpClient;
let alice: HttpClient;

async function user(name: string): Promise<HttpClient> {
  expect((await t.root.post('/api/user/', { username: name, password: `${name}-password` })).status).toBe(201);
  const c = new HttpClient(t.url);
  await c.login(name, `${name}-password`);
  return c;
}

const key = (label: string) => `${label}-${stamp}-${Math.random().toString(36).slice(2)}`;
const mailsWith = (subject: string) => smtp.received.filter((m) => m.parsed.subject === subject);
/** Every idempotency record in this app's Redis. */
const records = async () => {
  const found: string[] = [];
  for (const k of await t.platform.redis.keys(`${t.platform.keyPrefix}:idempotency:*`)) found.push((await t.platform.redis.get(k)) ?? '');
  return found;
};
const jobsOf = async (client: HttpClient, name: string) => (await client.get(`/api/jobs?name=${name}&limit=100`)).body.jobs as { id: string }[];

async function settled(client: HttpClient, statusUrl: string) {
  for (let i = 0; i < 400; i++) {
    const s = (await client.get(statusUrl)).body;
    if (s.state === 'completed' || s.state === 'failed') return s;
    await sleep(50);
  }
  throw new Error(`${statusUrl} did not finish`);
}

beforeAll(async () => {
  dovecot = await startDovecot();
  smtp = await startSmtp({ users: Object.fromEntries(SENDERS.map((s) => [s, 'imap-password'])) });
  // Built-in models priced, so that a charge shows (quota per 1K tokens).
  t = await startTestApp({ env: { MAIL_TIMEOUT_MS: '5000', LOCAL_MODEL_PRICE: '1000' } });
  bob = await user('bob');
  const bobId = (await bob.get('/api/user/self')).body.data.id;
  expect((await t.root.put(`/api/user/${bobId}`, { quota: 100_000_000 })).status).toBe(200);
  alice = await user('alice');
  await addPasswordAccount(bob, dovecot, SENDERS[0]!, smtp);
  await addPasswordAccount(alice, dovecot, SENDERS[1]!, smtp);
  await addPasswordAccount(bob, dovecot, REFUSED, smtp);
});

afterAll(async () => {
  await t?.close();
  await Promise.all([dovecot?.stop(), smtp?.stop()]);
});

describe('Idempotency-Key on send-mail', () => {
  it('20 concurrent identical sends with one key: one mail at the SMTP server, one job; the others 409 or the same answer replayed', async () => {
    const subject = `twenty at once ${stamp}`;
    const k = key('twenty');
    const before = (await jobsOf(bob, 'mail.send')).length;
    const send = { email: SENDERS[0], to: 'friend@example.test', subject, text: 'only once' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => bob.post('/api/send-mail', send, { 'idempotency-key': k })));
    const firsts = answers.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
    expect(firsts, answers.map((r) => `${r.status} ${r.text}`).join('\n')).toHaveLength(1);
    for (const r of answers) {
      if (r.status === 409) {
        expect(r.headers.get('retry-after')).toBe('1');
        expect(r.body.error).toMatch(/still running/);
      } else {
        expect(r.status, r.text).toBe(200);
        expect(r.body).toEqual(firsts[0]!.body);
      }
    }
    await sleep(500);
    expect(mailsWith(subject)).toHaveLength(1);
    expect((await jobsOf(bob, 'mail.send')).length).toBe(before + 1);

    // Sent again later: the first answer (the same Message-ID), marked replayed; still one mail.
    const again = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(firsts[0]!.body);
    expect(mailsWith(subject)[0]!.parsed.messageId).toBe(again.body.messageId);
    await sleep(300);
    expect(mailsWith(subject)).toHaveLength(1);
  });

  it('the same key with another body answers 422 naming the problem, and sends nothing', async () => {
    const k = key('other-body');
    const first = await bob.post(
      '/api/send-mail',
      { email: SENDERS[0], to: 'friend@example.test', subject: `first ${stamp}`, text: 'a' },
      { 'idempotency-key': k },
    );
    expect(first.status, first.text).toBe(200);
    const other = await bob.post(
      '/api/send-mail',
      { email: SENDERS[0], to: 'friend@example.test', subject: `second ${stamp}`, text: 'b' },
      { 'idempotency-key': k },
    );
    expect(other.status).toBe(422);
    expect(other.body.error).toMatch(/Idempotency-Key was used for another request/);
    // Another path with the key is another request too.
    const elsewhere = await bob.post('/api/content', item(), { 'idempotency-key': k });
    expect(elsewhere.status).toBe(422);
    await sleep(300);
    expect(mailsWith(`second ${stamp}`)).toHaveLength(0);
    expect(mailsWith(`first ${stamp}`)).toHaveLength(1);
  });

  it('a request still running answers 409 with Retry-After; once it is done, its answer is replayed', async () => {
    const subject = `held ${stamp}`;
    const k = key('held');
    const send = { email: SENDERS[0], to: 'friend@example.test', subject, text: 'wait for it' };
    const { id } = await t.platform.db('mail_accounts').where({ email: SENDERS[0] }).first('id');
    const lock = t.platform.keys.of('mailbox-lock', id);
    // The mailbox is busy: the first request's job waits, and so does the request.
    await t.platform.redis.set(lock, 'held-by-the-test', 'PX', 30_000);
    const first = bob.post('/api/send-mail', send, { 'idempotency-key': k });
    for (let i = 0; i < 100 && (await records()).every((r) => !r.includes('"f"') || r.includes('"d"')); i++) await sleep(20);
    const second = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(second.status).toBe(409);
    expect(second.headers.get('retry-after')).toBe('1');
    await t.platform.redis.del(lock);
    const answered = await first;
    expect(answered.status, answered.text).toBe(200);
    const third = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(third.status).toBe(200);
    expect(third.headers.get('idempotent-replayed')).toBe('true');
    expect(third.body).toEqual(answered.body);
    expect(mailsWith(subject)).toHaveLength(1);
  });

  it('a mail is not kept in Redis: the record of a send holds its job id, and the replay reads the answer from the job', async () => {
    const subject = `secret subject ${stamp}`;
    const k = key('no-mail-in-redis');
    const send = { email: SENDERS[0], to: 'hidden-recipient@example.test', subject, text: 'the secret body' };
    const first = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(first.status).toBe(200);
    const all = await records();
    expect(all.join('\n')).not.toMatch(/hidden-recipient|secret/);
    const mine = all.map((r) => JSON.parse(r)).filter((r) => typeof r.j === 'string' && r.j.startsWith('mail-'));
    expect(mine.length).toBeGreaterThan(0);
    for (const r of mine) expect(r.b).toBeUndefined();
    const replay = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(replay.body).toEqual(first.body);
    expect(replay.body.accepted).toEqual(['hidden-recipient@example.test']);
  });

  it("the record lost between claim and answer: the retry finds the first request's job (its id derives from the key) and sends nothing more", async () => {
    const subject = `record lost ${stamp}`;
    const k = key('lost');
    const send = { email: SENDERS[0], to: 'friend@example.test', subject, text: 'once' };
    const first = await bob.post('/api/send-mail', send, { 'idempotency-key': k, prefer: 'respond-async' });
    expect(first.status).toBe(202);
    for (const name of await t.platform.redis.keys(`${t.platform.keyPrefix}:idempotency:*`)) await t.platform.redis.del(name);
    const retry = await bob.post('/api/send-mail', send, { 'idempotency-key': k, prefer: 'respond-async' });
    expect([200, 202]).toContain(retry.status);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    if (retry.status === 202) expect(retry.body.jobId).toBe(first.body.jobId);
    expect((await settled(bob, first.body.statusUrl)).state).toBe('completed');
    await sleep(500);
    expect(mailsWith(subject)).toHaveLength(1);
    expect((await jobsOf(bob, 'mail.send')).filter((j) => j.id === first.body.jobId)).toHaveLength(1);
  });

  it('a 5xx answer is not kept, and its retry with the key finds the same failed job: no second attempt at the server', async () => {
    const k = key('refused');
    const send = { email: REFUSED, to: 'friend@example.test', subject: `refused ${stamp}`, text: 'x' };
    const before = (await jobsOf(bob, 'mail.send')).length;
    const first = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(first.status, first.text).toBeGreaterThanOrEqual(500);
    // Released: no record answers the retry; it runs, and finds the job its key names.
    const retry = await bob.post('/api/send-mail', send, { 'idempotency-key': k });
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.status).toBe(first.status);
    expect(retry.body).toEqual(first.body);
    expect((await jobsOf(bob, 'mail.send')).length).toBe(before + 1);
    const [job] = await jobsOf(bob, 'mail.send');
    expect((await bob.get(`/api/jobs/${job!.id}`)).body.attempts).toBe(1);
  });

  it('a replay whose job is no longer kept answers 410 and does nothing again', async () => {
    const subject = `gone ${stamp}`;
    const k = key('gone');
    const send = { email: SENDERS[0], to: 'friend@example.test', subject, text: 'x' };
    const first = await bob.post('/api/send-mail', send, { 'idempotency-key': k, prefer: 'respond-async' });
    expect((await settled(bob, first.body.statusUrl)).state).toBe('completed');
    await (await t.platform.jobs.getJob(first.body.jobId))!.remove();
    const replay = await bob.post('/api/send-mail', send, { 'idempotency-key': k, prefer: 'respond-async' });
    expect(replay.status).toBe(410);
    expect(replay.body.error).toContain(first.body.jobId);
    await sleep(300);
    expect(mailsWith(subject)).toHaveLength(1);
  });

  it('keys are per user: the same key from two users makes two sends, neither answered with the other one', async () => {
    const k = key('shared');
    const subject = `per user ${stamp}`;
    const a = await bob.post('/api/send-mail', { email: SENDERS[0], to: 'friend@example.test', subject, text: 'bob' }, { 'idempotency-key': k });
    const b = await alice.post('/api/send-mail', { email: SENDERS[1], to: 'friend@example.test', subject, text: 'alice' }, { 'idempotency-key': k });
    expect(a.status, a.text).toBe(200);
    expect(b.status, b.text).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.messageId).not.toBe(a.body.messageId);
    // The same request body from both (alice names bob's account, which she cannot use): alice gets her own answer.
    const same = { email: SENDERS[0], to: 'friend@example.test', subject, text: 'bob' };
    const c = await alice.post('/api/send-mail', same, { 'idempotency-key': key('same-body') });
    const d = await bob.post('/api/send-mail', same, { 'idempotency-key': k });
    expect(d.headers.get('idempotent-replayed')).toBe('true');
    expect(c.status).toBe(404);
    await sleep(300);
    expect(
      mailsWith(subject)
        .map((m) => m.from)
        .sort(),
    ).toEqual([...SENDERS].sort());
  });
});

describe('Idempotency-Key elsewhere', () => {
  it('content create with one key, twice and 20 times at once: one row, created once, the first answer replayed', async () => {
    const body = item();
    const k = key('content');
    const answers = await Promise.all(Array.from({ length: 20 }, () => bob.post('/api/content', body, { 'idempotency-key': k })));
    const created = answers.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
    expect(created).toHaveLength(1);
    // Without the key the others would have updated the row (200): none did.
    expect(answers.filter((r) => r.status === 200)).toHaveLength(0);
    await sleep(50);
    const again = await bob.post('/api/content', body, { 'idempotency-key': k });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(created[0]!.body);
    const [{ n }] = await t.platform.db('content_items').where({ url: body.url }).count({ n: '*' });
    expect(Number(n)).toBe(1);
  });

  it('content create: the same key from another user with another body is a new request (not 422)', async () => {
    const k = key('content-users');
    const a = await bob.post('/api/content', item(), { 'idempotency-key': k });
    const b = await alice.post('/api/content', item(), { 'idempotency-key': k });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it('a batch replayed: 202 again with the same jobId and statusUrl, and the 200 of a finished batch rebuilt from its job', async () => {
    const k = key('batch');
    const body = [item(), item()];
    const first = await bob.post('/api/content/batch', body, { 'idempotency-key': k, prefer: 'respond-async' });
    expect(first.status).toBe(202);
    const again = await bob.post('/api/content/batch', body, { 'idempotency-key': k, prefer: 'respond-async' });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.body.statusUrl);
    expect({ ...again.body, state: 'x' }).toEqual({ ...first.body, state: 'x' });
    expect(first.body.jobId).toMatch(/^content-[0-9a-f-]{36}$/);
    await settled(bob, first.body.statusUrl);

    const k2 = key('batch-sync');
    const body2 = [item()];
    const sync = await bob.post('/api/content/batch', body2, { 'idempotency-key': k2 });
    expect(sync.status).toBe(200);
    const replay = await bob.post('/api/content/batch', body2, { 'idempotency-key': k2 });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(sync.body);
    expect((await jobsOf(bob, 'content.batch')).length).toBe(2);
  });

  it('a malformed key answers 400 and keeps nothing; a quoted key (RFC 8941 string) is the same key bare', async () => {
    for (const bad of ['', 'x'.repeat(256), 'clé', 'tab\there']) {
      const res = await bob.post('/api/content', item(), { 'idempotency-key': bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error).toMatch(/Idempotency-Key must be 1-255 printable ASCII characters/);
    }
    const body = item();
    const k = key('quoted');
    const bare = await bob.post('/api/content', body, { 'idempotency-key': k });
    const quoted = await bob.post('/api/content', body, { 'idempotency-key': `"${k}"` });
    expect(bare.status).toBe(201);
    expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    expect((await bob.post('/api/content', item(), { 'idempotency-key': 'x'.repeat(255) })).status).toBe(201);
  });

  it('a request refused by validation keeps nothing: the key then serves the corrected request', async () => {
    const k = key('invalid-first');
    const bad = await bob.post('/api/content', { source: 'x' }, { 'idempotency-key': k });
    expect(bad.status).toBe(400);
    const good = await bob.post('/api/content', item(), { 'idempotency-key': k });
    expect(good.status).toBe(201);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
  });

  it('without the header nothing is kept, and a 4xx answer with a key is kept and replayed', async () => {
    const before = (await records()).length;
    expect((await bob.post('/api/content', item())).status).toBe(201);
    expect((await records()).length).toBe(before);
    // Alice may not replace bob's item: 409, kept, and replayed as such.
    const mine = item();
    expect((await bob.post('/api/content', mine)).status).toBe(201);
    const k = key('conflict');
    const refused = await alice.post('/api/content', mine, { 'idempotency-key': k });
    expect(refused.status).toBe(409);
    const replayed = await alice.post('/api/content', mine, { 'idempotency-key': k });
    expect(replayed.status).toBe(409);
    expect(replayed.body).toEqual(refused.body);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  });

  it('API keys: creating one with a key twice makes one key, and the replay shows the same whole key', async () => {
    const k = key('token');
    const a = await bob.post('/api/token/', { name: `idem-${stamp}`, unlimited_quota: true }, { 'idempotency-key': k });
    const b = await bob.post('/api/token/', { name: `idem-${stamp}`, unlimited_quota: true }, { 'idempotency-key': k });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body).toEqual(a.body);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    // The answer (with the whole key) is sealed in Redis, never in clear.
    expect((await records()).join('\n')).not.toContain(a.body.data.key);
    const listed = (await bob.get('/api/token/?p=0&page_size=100')).body.data as { name: string }[];
    expect(listed.filter((x) => x.name === `idem-${stamp}`)).toHaveLength(1);
  });

  it('embeddings with a key: replayed from the sealed answer; an answer over 64 KiB is not kept and its replay is 410', async () => {
    const made = await bob.post('/api/token/', { name: `embed-${stamp}`, unlimited_quota: true });
    const sk = new HttpClient(t.url).withAuth(`Bearer ${made.body.data.key}`);
    const k = key('embed');
    const small = { model: 'local-hash-v1', input: ['hello'], dimensions: 8 };
    const a = await sk.post('/v1/embeddings', small, { 'idempotency-key': k });
    const b = await sk.post('/v1/embeddings', small, { 'idempotency-key': k });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.headers.get('content-type')).toMatch(/application\/json/);
    expect(b.text).toBe(a.text);
    const k2 = key('embed-big');
    const big = { model: 'local-hash-v1', input: Array.from({ length: 20 }, (_, i) => `text ${i}`), dimensions: 3072 };
    const c = await sk.post('/v1/embeddings', big, { 'idempotency-key': k2 });
    expect(c.status).toBe(200);
    expect(c.text.length).toBeGreaterThan(64 * 1024);
    const d = await sk.post('/v1/embeddings', big, { 'idempotency-key': k2 });
    expect(d.status).toBe(410);
    expect(d.body.error.code).toBe('idempotent_answer_gone');
  });

  it('20 concurrent embeddings calls with one key: one quota charge, the one a single call costs', async () => {
    const made = await bob.post('/api/token/', { name: `charge-${stamp}`, unlimited_quota: true });
    const sk = new HttpClient(t.url).withAuth(`Bearer ${made.body.data.key}`);
    const used = async () => (await bob.get('/api/user/self')).body.data.used_quota as number;
    const call = { model: 'local-hash-v1', input: ['a sentence that costs a few tokens'], dimensions: 8 };
    const before = await used();
    expect((await sk.post('/v1/embeddings', call)).status).toBe(200);
    const single = (await used()) - before;
    expect(single).toBeGreaterThan(0);
    const k = key('charge');
    const answers = await Promise.all(Array.from({ length: 20 }, () => sk.post('/v1/embeddings', call, { 'idempotency-key': k })));
    expect(answers.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const r of answers) expect([200, 409]).toContain(r.status);
    expect((await used()) - before).toBe(2 * single);
  });

  it('a record lasts IDEMPOTENCY_TTL_SECONDS (24 h), and the header does nothing on an endpoint that is not idempotent', async () => {
    const k = key('ttl');
    expect((await bob.post('/api/content', item(), { 'idempotency-key': k })).status).toBe(201);
    const names = await t.platform.redis.keys(`${t.platform.keyPrefix}:idempotency:*`);
    const ttls = await Promise.all(names.map((n) => t.platform.redis.ttl(n)));
    expect(Math.max(...ttls)).toBeGreaterThan(86_400 - 60);
    expect(Math.max(...ttls)).toBeLessThanOrEqual(86_400);
    const listed = await bob.get('/api/content?limit=1', { 'idempotency-key': k });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a user, redemption codes and a top-up, each made twice with a key: made once, the first answer replayed', async () => {
    const k = key('accounts');
    const name = `idem${String(stamp).slice(-6)}`;
    const u1 = await t.root.post('/api/user/', { username: name, password: 'a-password' }, { 'idempotency-key': k });
    const u2 = await t.root.post('/api/user/', { username: name, password: 'a-password' }, { 'idempotency-key': k });
    expect([u1.status, u2.status]).toEqual([201, 201]);
    expect(u2.headers.get('idempotent-replayed')).toBe('true');
    expect(Number((await t.platform.db('users').where({ username: name }).count({ n: '*' }))[0]!.n)).toBe(1);

    // Each request its own key (the same key on another endpoint would be 422).
    const kc = key('codes');
    const c1 = await t.root.post('/api/redemption/', { name: 'idem', quota: 1000, count: 2 }, { 'idempotency-key': kc });
    const c2 = await t.root.post('/api/redemption/', { name: 'idem', quota: 1000, count: 2 }, { 'idempotency-key': kc });
    expect(c1.status).toBe(201);
    expect(c2.body.data).toEqual(c1.body.data);
    expect(Number((await t.platform.db('redemptions').where({ name: 'idem' }).count({ n: '*' }))[0]!.n)).toBe(2);

    const quota = async () => (await bob.get('/api/user/self')).body.data.quota as number;
    const before = await quota();
    const top1 = await bob.post('/api/user/topup', { key: c1.body.data[0] }, { 'idempotency-key': k });
    const top2 = await bob.post('/api/user/topup', { key: c1.body.data[0] }, { 'idempotency-key': k });
    expect(top1.body).toEqual({ success: true, message: '', data: 1000 });
    expect(top2.body).toEqual(top1.body);
    expect(top2.headers.get('idempotent-replayed')).toBe('true');
    expect((await quota()) - before).toBe(1000);
  });

  it('a webhook endpoint and a schedule, each made twice with a key: made once, the same answer (the same secret) replayed', async () => {
    const k = key('webhook');
    const w1 = await bob.post('/api/webhooks', { url: 'http://127.0.0.1:9/idem-hook' }, { 'idempotency-key': k });
    const w2 = await bob.post('/api/webhooks', { url: 'http://127.0.0.1:9/idem-hook' }, { 'idempotency-key': k });
    expect(w1.status, w1.text).toBe(201);
    expect(w2.status).toBe(201);
    expect(w2.headers.get('idempotent-replayed')).toBe('true');
    expect(w2.body).toEqual(w1.body);
    const hooks = (await bob.get('/api/webhooks')).body as { url: string }[];
    expect(hooks.filter((h) => h.url === 'http://127.0.0.1:9/idem-hook')).toHaveLength(1);

    const ks = key('schedule');
    const plan = { name: `idem-${stamp}`, kind: 'mail.purge', params: { email: SENDERS[0], mailbox: 'Junk' }, cron: '0 3 * * *' };
    const s1 = await bob.post('/api/schedules', plan, { 'idempotency-key': ks });
    const s2 = await bob.post('/api/schedules', plan, { 'idempotency-key': ks });
    expect(s1.status, s1.text).toBe(201);
    expect(s2.body).toEqual(s1.body);
    const plans = (await bob.get('/api/schedules')).body as { name: string }[];
    expect(plans.filter((x) => x.name === `idem-${stamp}`)).toHaveLength(1);
  });

  it('/openapi.json documents the header, 409 and 422 on every idempotent endpoint', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    for (const [path, method] of [
      ['/api/send-mail', 'post'],
      ['/api/send-mail', 'get'],
      ['/api/content', 'post'],
      ['/api/content/batch', 'post'],
      ['/v1/embeddings', 'post'],
      ['/api/token/', 'post'],
      ['/api/webhooks', 'post'],
      ['/api/webhooks/{id}/rotate-secret', 'post'],
      ['/api/webhooks/{id}/deliveries/{deliveryId}/redeliver', 'post'],
      ['/api/schedules', 'post'],
    ] as const) {
      const op = doc.paths[path][method];
      expect(
        op.parameters.map((x: { name: string }) => x.name),
        `${method} ${path}`,
      ).toContain('Idempotency-Key');
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['409', '422']));
    }
    expect(doc.paths['/api/content'].get.parameters.map((x: { name: string }) => x.name)).not.toContain('Idempotency-Key');
  });
});

describe('Idempotency-Key with Redis away', () => {
  let redis: PrivateRedis;
  let app: TestApp;
  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    app = await startTestApp({ env: { REDIS_URL: redis.url }, workers: false });
  });
  afterAll(async () => {
    await redis.start().catch(() => {});
    // Closing waits for the connections, which reconnect by themselves first.
    for (let i = 0; i < 150 && app && (await app.root.get('/readyz')).status !== 200; i++) await sleep(200);
    await app?.close();
    await redis.stop();
  });

  it('an item sent with a key answers 503 (the key cannot be checked), and without one is stored as before', async () => {
    await redis.stop();
    const keyed = await app.root.post('/api/content', item(), { 'idempotency-key': key('away') });
    expect(keyed.status).toBe(503);
    expect(keyed.headers.get('retry-after')).toBeTruthy();
    expect((await app.root.post('/api/content', item())).status).toBe(201);
  });
});
