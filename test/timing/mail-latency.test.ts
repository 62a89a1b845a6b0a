// Mail latency under attack (issue 10): a huge mail must not stall the process, nor one user's flood the others. In test/timing/: run alone, after the rest, since it measures milliseconds.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMessage, type DovecotServer, startDovecot } from '../helpers/dovecot.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let dovecot: DovecotServer;
let t: TestApp;
let me: HttpClient;
let n = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function account(label: string): Promise<string> {
  const email = `${label}-${Date.now()}-${++n}@example.test`;
  return (await addPasswordAccount(me, dovecot, email, { host: dovecot.host, port: 25 })).email;
}

beforeAll(async () => {
  dovecot = await startDovecot();
  t = await startTestApp({ env: { MAIL_TIMEOUT_MS: '20000' } });
  await t.root.post('/api/user/', { username: 'big-mail', password: 'big-mail-password' });
  me = new HttpClient(t.url);
  await me.login('big-mail', 'big-mail-password');
});

afterAll(async () => {
  await t?.close();
  await dovecot?.stop();
});

describe('a 5 MB mail', () => {
  it('is read for its code while /healthz stays under 100 ms (p99) in the same process', async () => {
    const email = await account('huge');
    const filler = 'Lorem ipsum dolor sit amet, 12345 consectetur adipiscing elit. Your order 998877 shipped.\n'.repeat(55_000);
    const raw = buildMessage({
      from: 'Service <no-reply@service.example>',
      to: email,
      subject: 'Your sign-in code',
      text: `Your verification code is 482913.\n${filler}`,
    });
    expect(raw.length).toBeGreaterThan(5_000_000);
    await dovecot.deliver(email, 'INBOX', raw);

    // One prober, back to back, while the job runs: p99 of its samples, and no single stall past 500 ms
    // (the unbounded parse and scan of this mail stalled the process 3.5 s in one piece).
    const latencies: number[] = [];
    let running = true;
    const probe = (async () => {
      while (running) {
        const started = performance.now();
        const res = await fetch(`${t.url}/healthz`);
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
        await sleep(2);
      }
    })();
    const res = await me.post('/api/vendor-email/extract-code', { email });
    running = false;
    await probe;

    expect(res.status, res.text).toBe(200);
    expect(res.body.code).toBe('482913');
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.ceil(latencies.length * 0.99) - 1]!;
    const worst = latencies.at(-1)!;
    const shown = `slowest (ms): ${latencies.slice(-5).map(Math.round).join(', ')} of ${latencies.length}`;
    expect(p99, shown).toBeLessThanOrEqual(100);
    expect(worst, shown).toBeLessThanOrEqual(500);
  });

  it('is listed with its text cut where the first 512 KiB of its source end, not dropped', async () => {
    const email = await account('listed');
    const filler = `${'x'.repeat(99)}\n`;
    await dovecot.deliver(email, 'INBOX', buildMessage({ from: 'a@service.example', to: email, subject: 'Big', text: `START\n${filler.repeat(40_000)}END` }));
    const res = await me.post('/api/mail-new', { email });
    expect(res.status, res.text).toBe(200);
    const text = res.body.message.text as string;
    expect(text.startsWith('START')).toBe(true);
    expect(text).not.toContain('END');
    expect(text.length).toBeLessThanOrEqual(512 * 1024);
    expect(text.length).toBeGreaterThan(256 * 1024);
  });
});

describe('one user flooding the mail queue', () => {
  let app: TestApp;
  let silent: net.Server;
  const hung = new Set<net.Socket>();

  beforeAll(async () => {
    // A server that accepts and never says a word: every job aimed at it holds a worker until MAIL_TIMEOUT_MS.
    silent = net.createServer((socket) => hung.add(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    app = await startTestApp({ env: { MAIL_CONCURRENCY: '8', MAIL_USER_CONCURRENCY: '4', MAIL_TIMEOUT_MS: '6000' } });
  });
  afterAll(async () => {
    for (const s of hung) s.destroy();
    silent?.close();
    await app?.close();
  });

  async function client(username: string): Promise<HttpClient> {
    await app.root.post('/api/user/', { username, password: `${username}-password` });
    const c = new HttpClient(app.url);
    await c.login(username, `${username}-password`);
    return c;
  }

  it("cannot more than double another user's mail-new latency", async () => {
    const victim = await client('patient');
    const email = `patient-${Date.now()}@example.test`;
    await dovecot.addUser(email, 'imap-password');
    await dovecot.deliver(email, 'INBOX', buildMessage({ from: 'a@service.example', to: email, subject: 'Hello', text: 'Hi there' }));
    const added = await victim.post('/api/mail/accounts', {
      email,
      auth: { type: 'password', password: 'imap-password' },
      imap: { host: dovecot.host, port: dovecot.port, secure: false },
      smtp: { host: dovecot.host, port: 25, secure: false },
    });
    expect(added.status, added.text).toBe(201);
    const timed = async () => {
      const started = performance.now();
      const res = await victim.post('/api/mail-new', { email });
      expect(res.status, res.text).toBe(200);
      return performance.now() - started;
    };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    await timed(); // warm up the IMAP path
    const before: number[] = [];
    for (let i = 0; i < 9; i++) before.push(await timed());

    const flooder = await client('flooder');
    const boxes = Array.from({ length: 24 }, (_, i) => `flood-${i}-${Date.now()}@example.test`);
    const port = (silent.address() as net.AddressInfo).port;
    for (const box of boxes) {
      const res = await flooder.post('/api/mail/accounts', {
        email: box,
        auth: { type: 'password', password: 'x' },
        imap: { host: '127.0.0.1', port, secure: false },
        smtp: { host: '127.0.0.1', port, secure: false },
      });
      expect(res.status, res.text).toBe(201);
    }
    for (const box of boxes) expect((await flooder.post('/api/mail-new', { email: box }, { prefer: 'respond-async' })).status).toBe(202);
    await sleep(300); // the flood has taken what it may

    const during: number[] = [];
    for (let i = 0; i < 9; i++) during.push(await timed());
    expect(hung.size, 'the flood reached the silent server').toBeGreaterThan(0);
    expect(hung.size, `at most MAIL_USER_CONCURRENCY of the flood run at once (saw ${hung.size})`).toBeLessThanOrEqual(4);
    expect(median(during), `before ${before.map(Math.round)} ms, during ${during.map(Math.round)} ms`).toBeLessThanOrEqual(2 * median(before));
  });
});
