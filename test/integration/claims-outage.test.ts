// docs/jobs.md "Redis unreachable" for the mail and embeddings areas (content is in redis-outage.test.ts):
// job-backed mail endpoints and /v1 embeddings answer 503 JSON within 2 s while a private redis-server
// is killed, and the same process serves them again once it is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { within } from '../helpers/pace.js';
import { freePort, PrivateRedis } from '../helpers/redis-server.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';

let redis: PrivateRedis;
let dovecot: DovecotServer;
let smtp: SmtpTestServer;
let t: TestApp;
let key: string;
const email = `outage-${Date.now()}@example.test`;

beforeAll(async () => {
  redis = new PrivateRedis(await freePort());
  await redis.start();
  dovecot = await startDovecot();
  smtp = await startSmtp({ users: { [email]: 'imap-password' } });
  t = await startTestApp({ env: { REDIS_URL: redis.url, MAIL_TIMEOUT_MS: '5000' } });
  await dovecot.addUser(email, 'imap-password');
  await dovecot.deliver(email, 'INBOX', buildMessage({ from: 'a@service.example', to: email, subject: 'before the outage', text: 'hello' }));
  const acct = await t.root.post('/api/mail/accounts', {
    email,
    auth: { type: 'password', password: 'imap-password' },
    imap: { host: dovecot.host, port: dovecot.port, secure: false },
    smtp: { host: smtp.host, port: smtp.port, secure: false },
  });
  expect(acct.status, acct.text).toBe(201);
  key = (await t.root.post('/api/token/', { name: 'outage', unlimited_quota: true })).body.data.key;
});

afterAll(async () => {
  await redis?.start().catch(() => {});
  await t?.close();
  await Promise.all([dovecot?.stop(), smtp?.stop()]);
  await redis?.stop();
});

type Call = () => Promise<{ status: number; body: any; headers: Headers }>;

describe('Redis outage: mail and embeddings', () => {
  it('job-backed mail endpoints and /v1 embeddings answer 503 JSON at once (within 20 × their healthy time) while Redis is down, and work again when it is back', async () => {
    const embeddings =
      (path: string): Call =>
      () =>
        t.anon.post(path, { model: 'local-hash-v1', input: ['outage text'] }, { authorization: `Bearer ${key}` });
    const calls: [string, Call, (b: any) => boolean, (b: any) => boolean][] = [
      [
        'POST /api/mail-new',
        () => t.root.post('/api/mail-new', { email }),
        (b) => Object.keys(b).join() === 'error' && /unavailable/i.test(b.error),
        (b) => b.message?.subject === 'before the outage',
      ],
      [
        'GET /api/mail-all',
        () => t.root.get(`/api/mail-all?email=${encodeURIComponent(email)}`),
        (b) => Object.keys(b).join() === 'error' && /unavailable/i.test(b.error),
        (b) => b.messages?.length === 1,
      ],
      [
        'POST /api/send-mail',
        () => t.root.post('/api/send-mail', { email, to: 'friend@example.test', subject: 'outage', text: 'x' }),
        (b) => Object.keys(b).join() === 'error' && /unavailable/i.test(b.error),
        (b) => typeof b.messageId === 'string' && b.accepted?.[0] === 'friend@example.test',
      ],
      [
        'POST /v1/embeddings',
        embeddings('/v1/embeddings'),
        (b) => typeof b.error?.message === 'string' && typeof b.error?.type === 'string' && /unavailable/i.test(b.error.message),
        (b) => b.object === 'list' && b.data?.[0]?.embedding?.length === 384,
      ],
      [
        'POST /v1/engines/{model}/embeddings',
        embeddings('/v1/engines/local-hash-v1/embeddings'),
        (b) => typeof b.error?.message === 'string' && /unavailable/i.test(b.error.message),
        (b) => b.object === 'list' && b.data?.[0]?.embedding?.length === 384,
      ],
    ];
    // Everything works before the outage (so the 503s below are the outage's doing).
    // Each call's healthy time, this run: the bound below on its outage answer (20 ×) grows with the machine's load.
    const healthy = new Map<string, number>();
    for (const [label, call, , works] of calls) {
      const started = performance.now();
      const res = await call();
      healthy.set(label, performance.now() - started);
      expect(res.status, `${label} before: ${JSON.stringify(res.body)}`).toBe(200);
      expect(works(res.body), `${label} before: ${JSON.stringify(res.body)}`).toBe(true);
    }

    await redis.stop();
    for (const [label, call, unavailable] of calls) {
      const started = Date.now();
      const res = await call();
      const took = Date.now() - started;
      expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(503);
      expect(took, label).toBeLessThan(within(0, healthy.get(label)!));
      expect(res.headers.get('content-type'), label).toMatch(/^application\/json/);
      expect(unavailable(res.body), `${label}: ${JSON.stringify(res.body)}`).toBe(true);
      expect(Number(res.headers.get('retry-after')), label).toBeGreaterThan(0);
    }
    const sentDuringOutage = smtp.received.length;

    await redis.start();
    for (const [label, call, , works] of calls) {
      let res = await call();
      for (let i = 0; i < 100 && res.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 200));
        res = await call();
      }
      expect(res.status, `${label} after: ${JSON.stringify(res.body)}`).toBe(200);
      expect(works(res.body), `${label} after: ${JSON.stringify(res.body)}`).toBe(true);
    }
    // The send refused during the outage was not sent later behind the caller's back: one before, one after.
    expect(sentDuringOutage).toBe(1);
    expect(smtp.received.length).toBe(2);
    // The refused send's payload (kept in Postgres) was dropped, and the completed ones' too.
    const { n } = (await t.platform.db('job_payloads').count({ n: '*' }).first()) as { n: string | number };
    expect(Number(n)).toBe(0);
  });
});
