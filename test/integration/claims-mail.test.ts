// docs/mail.md claims of the mail area that had no test: hung servers (lock released, session closed), the
// mailbox lock's lease after a worker dies, the Message-ID and send record across a kill mid-send,
// STARTTLS with certificate verification, and the OAuth2 access-token expiry margin.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailFetch, mailSend } from '../../src/mail/jobs.js';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { FakeMicrosoftOAuth } from '../helpers/oauth.js';
import { within } from '../helpers/pace.js';
import { startTestApp, tempDir, type TestApp } from '../helpers/services.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';
import { spawnEntry, type Spawned } from '../helpers/spawn.js';

const CLIENT_ID = '9e5f94bc-e8a4-4e73-b8be-63364c29d753';
const PASSWORD = 'mail-password';
const stamp = Date.now();
/** Password accounts the SMTP sink knows (it takes its users at start). */
const SMTP_USERS = Array.from({ length: 12 }, (_, i) => `claims-${stamp}-${i}@example.test`);
let nextUser = 0;

let oauth: FakeMicrosoftOAuth;
let dovecot: DovecotServer;
let smtp: SmtpTestServer;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  oauth = await new FakeMicrosoftOAuth().start();
  dovecot = await startDovecot();
  smtp = await startSmtp({
    users: Object.fromEntries(SMTP_USERS.map((u) => [u, PASSWORD])),
    verifyToken: (email, token) => oauth.isValidAccessToken(email, token),
  });
  for (const u of SMTP_USERS) await dovecot.addUser(u, PASSWORD);
});

afterAll(async () => {
  await Promise.all([dovecot?.stop(), smtp?.stop(), oauth?.stop()]);
});

type Server = { host: string; port: number; secure?: boolean };

/** A password account (known to Dovecot and the SMTP sink), on the servers given. */
async function account(t: TestApp, servers: { imap?: Server; smtp?: Server } = {}) {
  const email = SMTP_USERS[nextUser++]!;
  const res = await t.root.post('/api/mail/accounts', {
    email,
    auth: { type: 'password', password: PASSWORD },
    imap: { secure: false, ...(servers.imap ?? { host: dovecot.host, port: dovecot.port }) },
    smtp: { secure: false, ...(servers.smtp ?? { host: smtp.host, port: smtp.port }) },
  });
  expect(res.status, res.text).toBe(201);
  const { id } = await t.platform.db('mail_accounts').where({ email }).first('id');
  return { email, id: id as number };
}

/** Points an existing account at other servers (same account, same id). */
async function repoint(t: TestApp, email: string, servers: { imap?: Server; smtp?: Server }) {
  const res = await t.root.post('/api/mail/accounts', {
    email,
    auth: { type: 'password', password: PASSWORD },
    imap: { secure: false, ...(servers.imap ?? { host: dovecot.host, port: dovecot.port }) },
    smtp: { secure: false, ...(servers.smtp ?? { host: smtp.host, port: smtp.port }) },
  });
  expect(res.status, res.text).toBe(200);
}

const lockKey = (t: TestApp, accountId: number) => `${t.platform.keyPrefix}:mailbox-lock:${accountId}`;

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function finished(t: TestApp, jobId: string, timeoutMs = 40_000) {
  return until(
    `job ${jobId} to finish`,
    async () => {
      const job = (await t.root.get(`/api/jobs/${jobId}`)).body;
      return job.state === 'completed' || job.state === 'failed' ? job : undefined;
    },
    timeoutMs,
  );
}

/** A TCP server that accepts connections and never sends a byte (or only `greeting`), and never closes one. */
async function hungServer(greeting?: string) {
  const sockets: { closed: boolean; received: string }[] = [];
  const server = net.createServer((s) => {
    const entry = { closed: false, received: '' };
    sockets.push(entry);
    if (greeting) s.write(greeting);
    s.on('data', (d) => {
      entry.received += d.toString();
    });
    s.on('error', () => {});
    // The server never ends or destroys a socket: a close seen here is the client's doing.
    s.on('close', () => {
      entry.closed = true;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    sockets,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        // server.close waits for open sockets; the clients we test are meant to have closed them already.
        setTimeout(r, 1000);
      }),
  };
}

/** A self-signed certificate for 127.0.0.1 and localhost, written to a temp dir. */
function certificate(label: string) {
  const dir = tempDir(`claims-${label}`);
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${label}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert), certPath: cert, dir };
}

describe('mail servers that hang (API with in-process workers, MAIL_TIMEOUT_MS=1500)', () => {
  let t: TestApp;
  beforeAll(async () => {
    // SYNC_WAIT_MS: a lock left held would make the retry wait out its 30 s lease; the call then answers 202 instead of 504.
    t = await startTestApp({ env: { MAIL_TIMEOUT_MS: '1500', SYNC_WAIT_MS: '15000' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Runs a failing operation against a hung server, then the same operation on the same account against a real one. */
  async function hangThenRecover(opts: {
    hung: Awaited<ReturnType<typeof hungServer>>;
    side: 'imap' | 'smtp';
    call: (email: string) => Promise<{ status: number; body: any; text: string }>;
  }) {
    const { hung, side, call } = opts;
    const acct = await account(t, { [side]: hung });
    const started = Date.now();
    const res = await call(acct.email);
    const took = Date.now() - started;
    expect(res.status, res.text).toBe(504);
    expect(res.body.error).toMatch(/did not answer in time/);
    // The budget was used (not a refusal) and then honoured: two attempts of MAIL_TIMEOUT_MS (or twice that mid-session), 1 s backoff.
    expect(took).toBeGreaterThanOrEqual(1_500);
    expect(hung.sockets.length).toBeGreaterThanOrEqual(1);
    // Every connection was closed by us (the server never closes one)...
    await until('our sockets to close', async () => hung.sockets.every((s) => s.closed), 30_000).catch(() => {});
    expect(hung.sockets.map((s) => s.closed)).toEqual(hung.sockets.map(() => true));
    // ...and the mailbox lock was released, not left to its 30 s lease.
    expect(await t.platform.redis.exists(lockKey(t, acct.id))).toBe(0);
    // The next operation on that account takes the lock at once.
    await repoint(t, acct.email, {});
    const nextStarted = Date.now();
    const next = await call(acct.email);
    expect(next.status, next.text).toBe(200);
    // ...and the hung one's budget was honoured: its job's attempts, each at most 2 × MAIL_TIMEOUT_MS, and their
    // backoffs, plus the work of the healthy call just made (this run's pace), not SYNC_WAIT_MS (15 s) or more.
    const { attempts = 1, backoff } = (side === 'smtp' ? mailSend : mailFetch).options ?? {};
    const delay = typeof backoff === 'object' ? (backoff.delay ?? 0) : 0;
    const backoffs = delay * (2 ** (attempts - 1) - 1);
    expect(took).toBeLessThan(within(attempts * 2 * 1_500 + backoffs, Date.now() - nextStarted, 2));
    return acct;
  }

  it('an IMAP server that accepts and never answers: 504, our socket closed, the mailbox lock released for the next operation', async () => {
    const hung = await hungServer();
    try {
      await hangThenRecover({ hung, side: 'imap', call: (email) => t.root.post('/api/mail-new', { email }) });
    } finally {
      await hung.close();
    }
  });

  it('an IMAP server that greets and then never answers (mid-session): 504, our socket closed, the mailbox lock released', async () => {
    const hung = await hungServer('* OK [CAPABILITY IMAP4rev1] ready\r\n');
    try {
      await hangThenRecover({ hung, side: 'imap', call: (email) => t.root.post('/api/mail-new', { email }) });
      // It was a session (we spoke), not a connect timeout.
      expect(hung.sockets[0]!.received).toMatch(/^\S+ (CAPABILITY|LOGIN|ID)/m);
    } finally {
      await hung.close();
    }
  });

  it('an SMTP server that accepts and never answers: send-mail 504, our socket closed, the mailbox lock released for the next send', async () => {
    const hung = await hungServer();
    const before = smtp.received.length;
    try {
      await hangThenRecover({
        hung,
        side: 'smtp',
        call: (email) => t.root.post('/api/send-mail', { email, to: 'friend@example.test', subject: `hung ${email}`, text: 'x' }),
      });
      expect(smtp.received.length).toBe(before + 1);
    } finally {
      await hung.close();
    }
  });
});

describe('OAuth2 access tokens: cached until five minutes before they expire', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { MS_TOKEN_URL: oauth.tokenUrl, MAIL_TIMEOUT_MS: '5000' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function oauthAccount(label: string, expiresIn: number) {
    const email = `${label}-${stamp}@example.test`;
    const refreshToken = `M.R3_BAY.${label}-${stamp}`;
    oauth.addAccount({ email, clientId: CLIENT_ID, refreshToken, expiresIn });
    const res = await t.root.post('/api/mail/accounts', {
      email,
      auth: { type: 'oauth2', client_id: CLIENT_ID, refresh_token: refreshToken },
      imap: { host: dovecot.host, port: dovecot.port, secure: false },
      smtp: { host: smtp.host, port: smtp.port, secure: false },
    });
    expect(res.status, res.text).toBe(201);
    const cacheKey = `${t.platform.keyPrefix}:ms-token:${createHash('sha256').update(`${CLIENT_ID}\u0000${refreshToken}`).digest('hex')}`;
    return { email, refreshToken, cacheKey };
  }

  async function sendTwice(email: string) {
    const tokens: string[] = [];
    for (let i = 0; i < 2; i++) {
      const before = smtp.received.length;
      const res = await t.root.post('/api/send-mail', { email, to: 'friend@example.test', subject: `token ${i}`, text: 'x' });
      expect(res.status, res.text).toBe(200);
      const [got] = (await smtp.waitFor(before + 1)).slice(before);
      expect(got!.auth.method).toBe('XOAUTH2');
      tokens.push(got!.auth.accessToken!);
    }
    return tokens;
  }

  it('a token with expires_in 3600 is granted once, kept in Redis for 3600 − 300 s, and reused by the next send', async () => {
    const a = await oauthAccount('token-3600', 3600);
    const tokens = await sendTwice(a.email);
    expect(oauth.tokenRequests.filter((r) => r.refresh_token === a.refreshToken)).toHaveLength(1);
    expect(tokens[1]).toBe(tokens[0]);
    const ttl = await t.platform.redis.pttl(a.cacheKey);
    expect(ttl).toBeGreaterThan((3600 - 300 - 60) * 1000);
    expect(ttl).toBeLessThanOrEqual((3600 - 300) * 1000);
  });

  it('a token with expires_in 200 (inside the five-minute margin) is never cached: each send asks for a new one', async () => {
    const b = await oauthAccount('token-200', 200);
    const tokens = await sendTwice(b.email);
    expect(oauth.tokenRequests.filter((r) => r.refresh_token === b.refreshToken)).toHaveLength(2);
    expect(tokens[1]).not.toBe(tokens[0]);
    expect(await t.platform.redis.exists(b.cacheKey)).toBe(0);
  });
});

describe('STARTTLS (a spawned worker that trusts one self-signed certificate through NODE_EXTRA_CA_CERTS)', () => {
  let t: TestApp;
  let worker: Spawned;
  let trusted: ReturnType<typeof certificate>;
  let untrusted: ReturnType<typeof certificate>;

  beforeAll(async () => {
    trusted = certificate('trusted');
    untrusted = certificate('untrusted');
    t = await startTestApp({ workers: false, env: { MAIL_TIMEOUT_MS: '5000' } });
    worker = spawnEntry('worker', [], { ...t.testEnv.env, WORKER_QUEUES: 'mail', LOG_LEVEL: 'info', NODE_EXTRA_CA_CERTS: trusted.certPath });
    await worker.waitFor(/workers started/);
  });
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await t?.close();
    for (const c of [trusted, untrusted]) if (c) fs.rmSync(c.dir, { recursive: true, force: true });
  });

  /** An SMTP server offering STARTTLS with the given certificate; records whether AUTH and DATA came over TLS. */
  async function tlsSmtp(cert: ReturnType<typeof certificate>) {
    const auths: { user: string; secure: boolean }[] = [];
    const messages: { secure: boolean }[] = [];
    const server = new SMTPServer({
      secure: false,
      key: cert.key,
      cert: cert.cert,
      allowInsecureAuth: true,
      authOptional: false,
      logger: false,
      closeTimeout: 500,
      onAuth(auth, session, callback) {
        auths.push({ user: auth.username ?? '', secure: session.secure });
        callback(null, { user: auth.username });
      },
      onData(stream, session, callback) {
        stream.resume();
        stream.on('end', () => {
          messages.push({ secure: session.secure });
          callback();
        });
      },
    });
    server.on('error', () => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      host: '127.0.0.1',
      port: (server.server.address() as net.AddressInfo).port,
      auths,
      messages,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }

  /**
   * A minimal IMAP server that offers STARTTLS and records each command with whether it came over TLS
   * (LOGIN, an empty INBOX, LOGOUT: what mail-new needs).
   */
  async function tlsImap(cert: ReturnType<typeof certificate>) {
    const commands: { line: string; secure: boolean }[] = [];
    const serve = (sock: net.Socket | tls.TLSSocket, secure: boolean) => {
      let buf = '';
      const onData = (d: Buffer) => {
        buf += d.toString('latin1');
        for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 2);
          commands.push({ line, secure });
          const [tag = '*', cmd = ''] = line.split(' ');
          const caps = `IMAP4rev1${secure ? '' : ' STARTTLS'}`;
          switch (cmd.toUpperCase()) {
            case 'CAPABILITY':
              sock.write(`* CAPABILITY ${caps}\r\n${tag} OK done\r\n`);
              break;
            case 'STARTTLS': {
              sock.removeListener('data', onData);
              sock.write(`${tag} OK begin TLS\r\n`);
              const upgraded = new tls.TLSSocket(sock as net.Socket, { isServer: true, key: cert.key, cert: cert.cert });
              upgraded.on('error', () => {});
              serve(upgraded, true);
              return;
            }
            case 'LOGIN':
              sock.write(`${tag} OK [CAPABILITY IMAP4rev1] logged in\r\n`);
              break;
            case 'SELECT':
            case 'EXAMINE':
              sock.write(`* FLAGS ()\r\n* 0 EXISTS\r\n* 0 RECENT\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [UIDNEXT 1] ok\r\n${tag} OK [READ-ONLY] done\r\n`);
              break;
            case 'LOGOUT':
              sock.end(`* BYE bye\r\n${tag} OK bye\r\n`);
              break;
            default:
              sock.write(`${tag} OK done\r\n`);
          }
        }
      };
      sock.on('data', onData);
    };
    const server = net.createServer((s) => {
      s.on('error', () => {});
      s.write('* OK IMAP4rev1 ready\r\n');
      serve(s, false);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      host: '127.0.0.1',
      port: (server.address() as net.AddressInfo).port,
      commands,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }

  it('SMTP: an allow-listed server that offers STARTTLS is used over TLS (AUTH and the message both after the upgrade)', async () => {
    const server = await tlsSmtp(trusted);
    try {
      const acct = await account(t, { smtp: server });
      const res = await t.root.post('/api/send-mail', { email: acct.email, to: 'friend@example.test', subject: 'over tls', text: 'x' });
      expect(res.status, res.text).toBe(200);
      expect(server.auths).toEqual([{ user: acct.email, secure: true }]);
      expect(server.messages).toEqual([{ secure: true }]);
    } finally {
      await server.close();
    }
  });

  it('SMTP: the certificate is verified for allow-listed servers too: an untrusted one gets 502 and never sees AUTH or the message', async () => {
    const server = await tlsSmtp(untrusted);
    try {
      const acct = await account(t, { smtp: server });
      const res = await t.root.post('/api/send-mail', { email: acct.email, to: 'friend@example.test', subject: 'untrusted', text: 'x' });
      expect(res.status, res.text).toBe(502);
      expect(res.body.error).toMatch(/certificate/i);
      expect(server.auths).toEqual([]);
      expect(server.messages).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('IMAP: an allow-listed server that offers STARTTLS is used over TLS (LOGIN only after the upgrade)', async () => {
    const server = await tlsImap(trusted);
    try {
      const acct = await account(t, { imap: server });
      const res = await t.root.post('/api/mail-new', { email: acct.email });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ email: acct.email, mailbox: 'INBOX', message: null });
      const login = server.commands.filter((c) => / LOGIN /i.test(c.line));
      expect(login).toHaveLength(1);
      expect(login[0]!.secure).toBe(true);
      expect(server.commands.some((c) => /STARTTLS/i.test(c.line))).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('IMAP: the certificate is verified for allow-listed servers too: an untrusted one gets 502 and never sees LOGIN', async () => {
    const server = await tlsImap(untrusted);
    try {
      const acct = await account(t, { imap: server });
      const res = await t.root.post('/api/mail-new', { email: acct.email });
      expect(res.status, res.text).toBe(502);
      expect(server.commands.filter((c) => / LOGIN /i.test(c.line))).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('workers killed (SIGKILL) holding a mailbox or in the middle of a send', () => {
  let t: TestApp;
  let db: pg.Client;
  /** pg_stat_activity read outside `db`'s transactions: inside one it is a snapshot taken at its first read. */
  let watch: pg.Client;
  const procs: Spawned[] = [];

  async function worker(env: Record<string, string> = {}) {
    // A short BullMQ lock, so another worker re-runs a dead worker's job within seconds.
    const w = spawnEntry('worker', [], {
      ...t.testEnv.env,
      WORKER_QUEUES: 'mail',
      LOG_LEVEL: 'info',
      JOB_LOCK_MS: '2000',
      JOB_STALLED_INTERVAL_MS: '1000',
      ...env,
    });
    procs.push(w);
    await w.waitFor(/workers started/);
    return w;
  }
  async function kill(w: Spawned) {
    expect(await w.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  }
  /** Waits until a statement of the worker waits on a row lock of ours. */
  const blockedOn = (table: string) =>
    // Generous: on a loaded machine a worker process can take many seconds between two statements.
    until(
      `an update of ${table} to wait on our row lock`,
      async () => {
        const { rows } = await watch.query(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike $1`,
          [`update "${table}"%`],
        );
        return rows[0].n > 0;
      },
      45_000,
    ).catch(async (err: Error) => {
      // Say what the database and the workers were doing instead (this wait has timed out under load before).
      const { rows } = await watch.query(
        `select pid, state, wait_event_type, wait_event, left(query, 160) as query from pg_stat_activity where datname = current_database()`,
      );
      const workers = procs.map((w) => `worker ${w.proc.pid} (exit ${w.proc.exitCode}):\n${w.output().slice(-3_000)}`);
      throw new Error(`${err.message}\nsessions: ${JSON.stringify(rows)}\n${workers.join('\n')}`);
    });
  const sendsOf = (subject: string) => smtp.received.filter((m) => m.parsed.subject === subject);

  beforeAll(async () => {
    // A synchronous call may wait out a dead worker's lease (≤ 30 s) plus a worker's start.
    t = await startTestApp({ workers: false, env: { MAIL_TIMEOUT_MS: '5000', SYNC_WAIT_MS: '60000' } });
    db = new pg.Client({ connectionString: t.testEnv.dbUrl });
    await db.connect();
    watch = new pg.Client({ connectionString: t.testEnv.dbUrl });
    await watch.connect();
  });
  afterAll(async () => {
    await db?.end().catch(() => {});
    await watch?.end().catch(() => {});
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await t?.close();
  });

  it('a mailbox lock held by a killed worker lapses with its lease (≤ 30 s), and then the next operation on that account runs', async () => {
    const hung = await hungServer();
    try {
      const w1 = await worker({ MAIL_TIMEOUT_MS: '60000' });
      const acct = await account(t, { imap: hung });
      const first = await t.root.post('/api/mail-new', { email: acct.email }, { prefer: 'respond-async' });
      expect(first.status).toBe(202);
      // w1 holds the lock while it waits for the server's greeting.
      await until('w1 to connect', async () => hung.sockets.length > 0);
      expect(await t.platform.redis.exists(lockKey(t, acct.id))).toBe(1);
      await kill(w1);
      const killedAt = Date.now();
      const lease = await t.platform.redis.pttl(lockKey(t, acct.id));
      expect(lease, 'the dead worker’s lock has a lease (a TTL), not forever').toBeGreaterThan(0);
      expect(lease).toBeLessThanOrEqual(30_000);

      await dovecot.deliver(acct.email, 'INBOX', buildMessage({ from: 'a@service.example', to: acct.email, subject: 'after the lease', text: 'x' }));
      await repoint(t, acct.email, {});
      await worker();
      const res = await t.root.post('/api/mail-new', { email: acct.email });
      expect(res.status, res.text).toBe(200);
      expect(res.body.message.subject).toBe('after the lease');
      // It ran once the lease had run out, not before (the lock did hold until then).
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(lease - 1_000);
      // The killed job itself was re-run by the other worker and completed (it may run just after the
      // call above, on the same mailbox); once both are done the lock is free.
      expect((await finished(t, first.body.jobId)).state).toBe('completed');
      expect(await t.platform.redis.exists(lockKey(t, acct.id))).toBe(0);
    } finally {
      await hung.close();
    }
  }, 90_000);

  it('a send killed after the SMTP server accepted it, before its record was written: the retry sends it again with the same Message-ID', async () => {
    // The workers of earlier tests must not take this job: only w1 may run it.
    await Promise.all(procs.splice(0).map((p) => p.stop('SIGKILL')));
    const w1 = await worker();
    const acct = await account(t);
    const subject = `killed before the record ${stamp}`;
    // Hold the mailbox so the job stops after writing its 'sending' record, and lock that row before letting it go.
    await t.platform.redis.set(lockKey(t, acct.id), 'held-by-the-test', 'PX', 60_000);
    const res = await t.root.post('/api/send-mail', { email: acct.email, to: 'friend@example.test', subject, text: 'once?' }, { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    const jobId: string = res.body.jobId;
    const record = await until('the send record', async () => (await db.query('select * from mail_sends where job_id = $1', [jobId])).rows[0]);
    expect(record.status).toBe('sending');
    await db.query('begin');
    await db.query('select * from mail_sends where job_id = $1 for update', [jobId]);
    await t.platform.redis.del(lockKey(t, acct.id));
    // The server accepted the message; w1 now waits to mark it sent. Killed there.
    await until('the first copy', async () => sendsOf(subject).length === 1);
    await blockedOn('mail_sends');
    await kill(w1);
    // Its UPDATE already reached Postgres and would still commit once our lock goes: end it too, as if the
    // process had died before sending it.
    const { rows: ended } = await watch.query(
      `select pg_terminate_backend(pid) as ok from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ilike 'update "mail_sends"%'`,
    );
    expect(ended).toEqual([{ ok: true }]);
    await db.query('rollback');
    expect((await db.query('select status from mail_sends where job_id = $1', [jobId])).rows[0].status).toBe('sending');
    // w1 may have died holding the mailbox lock: its lease is the previous test's subject, so free it here instead of waiting.
    await t.platform.redis.del(lockKey(t, acct.id));

    await worker();
    const job = await finished(t, jobId);
    expect(job.state, JSON.stringify(job)).toBe('completed');
    const copies = sendsOf(subject);
    expect(copies).toHaveLength(2);
    const domain = acct.email.split('@')[1];
    expect(record.message_id).toBe(`<${jobId}@${domain}>`);
    expect(copies.map((c) => c.parsed.messageId)).toEqual([record.message_id, record.message_id]);
    expect(job.result.messageId).toBe(record.message_id);
    expect((await db.query('select status from mail_sends where job_id = $1', [jobId])).rows[0].status).toBe('sent');
  }, 90_000);

  it('a send killed after its record was written, before the job completed: the retry answers from the record and does not send again', async () => {
    // The workers of earlier tests must not take this job: only w1 may run it.
    await Promise.all(procs.splice(0).map((p) => p.stop('SIGKILL')));
    const w1 = await worker();
    const acct = await account(t);
    const subject = `killed after the record ${stamp}`;
    // After the send is recorded, the job notes the account's last use: that update waits on our row lock.
    await db.query('begin');
    await db.query('select * from mail_accounts where id = $1 for no key update', [acct.id]);
    const res = await t.root.post('/api/send-mail', { email: acct.email, to: 'friend@example.test', subject, text: 'once' }, { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    const jobId: string = res.body.jobId;
    await until('the record to say sent', async () => (await db.query('select status from mail_sends where job_id = $1', [jobId])).rows[0]?.status === 'sent');
    await blockedOn('mail_accounts');
    expect(sendsOf(subject)).toHaveLength(1);
    await kill(w1);
    await db.query('rollback');
    expect((await t.root.get(`/api/jobs/${jobId}`)).body.state).not.toBe('completed');

    await worker();
    const job = await finished(t, jobId);
    expect(job.state, JSON.stringify(job)).toBe('completed');
    await sleep(500);
    expect(sendsOf(subject)).toHaveLength(1);
    const { rows } = await db.query('select message_id, result_json from mail_sends where job_id = $1', [jobId]);
    expect(job.result).toEqual(JSON.parse(rows[0].result_json));
    expect(job.result.messageId).toBe(rows[0].message_id);
    expect(sendsOf(subject)[0]!.parsed.messageId).toBe(rows[0].message_id);
  }, 90_000);
});
