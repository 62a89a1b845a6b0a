// Issue 10 items 1 and 15: the outbound policy (SSRF through mail hosts and channel base_url), no peer bytes in errors, TLS before credentials.
// Real Postgres, Redis, and real TCP/IMAP/SMTP/HTTP peers on loopback. `open` runs with an EMPTY
// OUTBOUND_ALLOWLIST (a fresh install); `trusting` allow-lists 127.0.0.1 (the test default).
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { ImapFlow } from 'imapflow';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as channelStore from '../../src/channels/store.js';
import { imapConnectOptions } from '../../src/mail/imap.js';
import { smtpConnectOptions } from '../../src/mail/smtp.js';
import * as mailStore from '../../src/mail/store.js';
import { blockedAddressReason, type Vetted } from '../../src/outbound.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

const BANNER = 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5';

let open: TestApp;
let trusting: TestApp;
let n = 0;
const address = (label: string) => `${label}-${Date.now()}-${++n}@example.test`;

/** A TCP server on loopback that counts connections and runs `onConnection` on each. */
async function tcpServer(onConnection: (s: net.Socket) => void = () => {}) {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    onConnection(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

async function rootId(t: TestApp): Promise<number> {
  return (await t.root.get('/api/user/self')).body.data.id;
}

async function apiKey(t: TestApp): Promise<string> {
  const res = await t.root.post('/api/token/', { name: `k${++n}`, unlimited_quota: true, expired_time: -1 });
  expect(res.status, res.text).toBe(201);
  return res.body.data.key;
}

beforeAll(async () => {
  const env = { MAIL_TIMEOUT_MS: '3000', JOB_BACKOFF_MS: '50' };
  [open, trusting] = await Promise.all([startTestApp({ env: { ...env, OUTBOUND_ALLOWLIST: '' } }), startTestApp({ env })]);
});
afterAll(async () => {
  await Promise.all([open?.close(), trusting?.close()]);
});

describe('save time: mail account hosts', () => {
  const blocked = [
    'localhost',
    'LOCALHOST.',
    'mail.localhost',
    '[::1]',
    '::1',
    '0.0.0.0',
    '169.254.169.254',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    'fe80::1',
    'fd00::1',
    '2130706433',
    '0x7f000001',
    '0177.0.0.1',
    '127.1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    'metadata.google.internal',
  ];

  it.each(blocked)('%s is refused with 400 naming imap.host or smtp.host', async (host) => {
    const imap = await open.root.post('/api/mail/accounts', { email: address('ssrf'), auth: { type: 'password', password: 'x' }, imap: { host, port: 22 } });
    expect(imap.status, imap.text).toBe(400);
    expect(imap.body.error).toMatch(/^imap\.host: .*refused by the outbound policy/);
    const smtp = await open.root.post('/api/mail/accounts', {
      email: address('ssrf'),
      auth: { type: 'password', password: 'x' },
      imap: { host: 'imap.example.com' },
      smtp: { host, port: 25 },
    });
    expect(smtp.status, smtp.text).toBe(400);
    expect(smtp.body.error).toMatch(/^smtp\.host: .*refused by the outbound policy/);
  });

  it('a name whose DNS answer is a blocked address is refused when DNS answers', async () => {
    const name = os.hostname();
    const answer = await dns.promises.lookup(name, { all: true });
    expect(
      answer.every((a) => blockedAddressReason(a.address)),
      `${name} should resolve to loopback or a private address here`,
    ).toBe(true);
    const res = await open.root.post('/api/mail/accounts', { email: address('dns'), auth: { type: 'password', password: 'x' }, imap: { host: name } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toMatch(/^imap\.host: .*resolves to/);
  });

  it('import refuses blocked servers naming the field, and stores nothing', async () => {
    const email = address('imp');
    const res = await open.root.post('/api/mail/accounts/import', { lines: [`${email}----pw`], imap: { host: '169.254.169.254', port: 143, secure: false } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toMatch(/^imap\.host: /);
    expect(await open.platform.db('mail_accounts').where({ email }).first()).toBeUndefined();
  });

  it('inline OAuth2 credentials do not revive an account whose stored host is refused', async () => {
    const email = address('inline');
    await mailStore.upsertAccount(open.platform.db, open.platform.secrets, await rootId(open), {
      email,
      auth: { type: 'password', password: 'x' },
      imap: { host: '127.0.0.1', port: 143, secure: false },
      smtp: { host: 'smtp.example.com', port: 587, secure: false },
    });
    const res = await open.root.post('/api/mail-new', { email, client_id: '9e5f94bc-e8a4-4e73-b8be-63364c29d753', refresh_token: 'M.R3_BAY.x' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toMatch(/^imap\.host: .*outbound policy/);
    // Refused before anything was saved: the stored account keeps its password login.
    expect((await open.platform.db('mail_accounts').where({ email }).first()).auth_type).toBe('password');
  });

  it('a public server is accepted (offline: DNS failure defers the decision to connect time)', async () => {
    const res = await open.root.post('/api/mail/accounts', {
      email: address('pub'),
      auth: { type: 'password', password: 'x' },
      imap: { host: 'imap.example.com' },
    });
    expect(res.status, res.text).toBe(201);
  });
});

describe('save time: channel base_url', () => {
  it.each([
    ['http://127.0.0.1:9/internal?x=', /query/],
    ['http://127.0.0.1:9/internal#x', /fragment/],
    ['https://user:pass@api.example.com', /user name or password/],
    ['http://127.0.0.1:9', /outbound policy/],
    ['http://[::1]:9', /outbound policy/],
    ['http://localhost:9', /outbound policy/],
    ['http://0x7f000001/', /outbound policy/],
    ['http://2130706433/', /outbound policy/],
    ['http://169.254.169.254/latest/meta-data', /outbound policy/],
    ['http://[::ffff:127.0.0.1]:9', /outbound policy/],
    ['http://metadata.google.internal', /outbound policy/],
  ])('%s is refused with 400 naming base_url', async (base_url, why) => {
    const res = await open.root.post('/api/channel/', { name: 'evil', key: 'sk-x', models: 'm', base_url, price: 0 });
    expect(res.status, res.text).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/^base_url: /);
    expect(res.body.message).toMatch(why);
  });

  it('changing base_url needs the key again; the same base_url, or a new one with the key, is fine', async () => {
    const created = await open.root.post('/api/channel/', {
      name: 'main',
      key: 'sk-root-upstream-key',
      models: 'm-main',
      base_url: 'https://api.openai.com',
      price: 0,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as number;
    const moved = await open.root.put('/api/channel/', { id, base_url: 'https://collector.example.net' });
    expect(moved.status, moved.text).toBe(400);
    expect(moved.body.message).toMatch(/^base_url: .*key/);
    expect((await open.root.put(`/api/channel/${id}`, { base_url: 'https://collector.example.net', key: '' })).status).toBe(400);
    expect((await open.platform.db('channels').where({ id }).first()).base_url).toBe('https://api.openai.com');
    expect((await open.root.put('/api/channel/', { id, base_url: 'https://api.openai.com/', name: 'renamed' })).status).toBe(200);
    const withKey = await open.root.put('/api/channel/', { id, base_url: 'https://upstream.example.net/v1', key: 'sk-new-key' });
    expect(withKey.status, withKey.text).toBe(200);
    expect(withKey.body.data.base_url).toBe('https://upstream.example.net/v1');
    const internal = await open.root.put('/api/channel/', { id, base_url: 'http://10.0.0.8:8080', key: 'sk-new-key' });
    expect(internal.status).toBe(400);
    expect(internal.body.message).toMatch(/^base_url: .*outbound policy/);
  });
});

describe('connect time: checked after DNS, on the address connected to', () => {
  it('an account whose host name resolves to loopback is refused when connecting, although it was stored', async () => {
    const name = os.hostname();
    expect((await dns.promises.lookup(name, { all: true })).every((a) => blockedAddressReason(a.address))).toBe(true);
    const target = await tcpServer((s) => s.write('* OK IMAP4rev1 ready\r\n'));
    try {
      const email = address('rebind');
      // Stored directly: as if the name had pointed elsewhere (or DNS had failed) at save time.
      await mailStore.upsertAccount(open.platform.db, open.platform.secrets, await rootId(open), {
        email,
        auth: { type: 'password', password: 'imap-secret' },
        imap: { host: name, port: target.port, secure: false },
        smtp: { host: name, port: target.port, secure: false },
      });
      const read = await open.root.post('/api/mail-new', { email });
      expect(read.status, read.text).toBe(400);
      expect(read.body.error).toMatch(/^imap\.host: .*refused by the outbound policy \(it resolves to a (loopback|private) address\)/);
      const send = await open.root.post('/api/send-mail', { email, to: 'x@example.test', subject: 's', text: 't' });
      expect(send.status, send.text).toBe(400);
      expect(send.body.error).toMatch(/^smtp\.host: .*refused by the outbound policy/);
      expect(target.connections()).toBe(0);
      const row = await open.platform.db('mail_accounts').where({ email }).first();
      expect(row.last_error).toMatch(/outbound policy/);
    } finally {
      await target.close();
    }
  });

  it('a channel whose base_url resolves to (or is) loopback is never called', async () => {
    const upstream = await new FakeOpenAI().start();
    try {
      const port = new URL(upstream.url).port;
      for (const [model, base_url] of [
        ['rebind-model', `http://${os.hostname()}:${port}`],
        ['literal-model', `http://127.0.0.1:${port}`],
      ] as const) {
        await channelStore.createChannel(open.platform.db, open.platform.secrets, {
          type: 'openai',
          name: model,
          base_url,
          config: {},
          group: 'default',
          key: 'sk-upstream',
          models: model,
          model_mapping: '{}',
          priority: 0,
          weight: 1,
          price: 0,
          status: 1,
        });
      }
      open.platform.channels.invalidate();
      const key = await apiKey(open);
      for (const model of ['rebind-model', 'literal-model']) {
        const res = await open.anon.withAuth(`Bearer ${key}`).post('/v1/embeddings', { model, input: 'x' });
        expect(res.status, res.text).toBe(502);
        expect(res.body.error.message).toMatch(/outbound policy/);
      }
      expect(upstream.calls).toHaveLength(0);
    } finally {
      await upstream.stop();
    }
  });
});

describe('peers that do not speak the protocol (127.0.0.1 allow-listed)', () => {
  it('an SSH-like banner is "not an IMAP server" / "not an SMTP server", and the banner is neither answered nor stored', async () => {
    const ssh = await tcpServer((s) => {
      s.write(`${BANNER}\r\n`);
      s.on('data', () => s.end('Invalid SSH identification string.\r\n'));
    });
    try {
      const email = address('ssh');
      const created = await trusting.root.post('/api/mail/accounts', {
        email,
        auth: { type: 'password', password: 'x' },
        imap: { host: '127.0.0.1', port: ssh.port, secure: false },
        smtp: { host: '127.0.0.1', port: ssh.port, secure: false },
      });
      expect(created.status, created.text).toBe(201);
      const read = await trusting.root.post('/api/mail-new', { email });
      expect(read.status, read.text).toBe(502);
      expect(read.body.error).toMatch(/not an IMAP server/);
      const send = await trusting.root.post('/api/send-mail', { email, to: 'x@example.test', subject: 's', text: 't' });
      expect(send.status, send.text).toBe(502);
      expect(send.body.error).toMatch(/not an SMTP server/);
      const row = await trusting.platform.db('mail_accounts').where({ email }).first();
      expect(row.last_error).toMatch(/not an SMTP server/);
      const listed = await trusting.root.get('/api/mail/accounts');
      for (const text of [read.text, send.text, row.last_error, listed.text]) {
        expect(text).not.toContain('SSH-2.0');
        expect(text).not.toContain('OpenSSH');
      }
    } finally {
      await ssh.close();
    }
  });

  it("a channel upstream that answers something else than OpenAI's JSON is not echoed", async () => {
    const secret = 'SECRET-INTERNAL-PAGE admin=1 token=abc';
    const server = http.createServer((req, res) => {
      const status = Number(req.url?.split('/')[1]);
      res.writeHead(status, { 'content-type': 'text/html' });
      res.end(secret);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      const key = await apiKey(trusting);
      for (const status of [200, 500, 400, 401]) {
        const model = `html-${status}`;
        const c = await trusting.root.post('/api/channel/', { name: model, key: 'sk-up', models: model, base_url: `${base}/${status}`, price: 0 });
        expect(c.status, c.text).toBe(201);
        const res = await trusting.anon.withAuth(`Bearer ${key}`).post('/v1/embeddings', { model, input: 'x' });
        expect(res.status, `${status}: ${res.text}`).toBeGreaterThanOrEqual(400);
        expect(res.text).not.toContain('SECRET');
        const row = await trusting.platform.db('channels').where({ id: c.body.data.id }).first();
        expect(String(row.status_reason)).not.toContain('SECRET');
      }
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('TLS before credentials for servers that are not allow-listed (item 15)', () => {
  const remote = (host: string): Vetted => ({ host, address: '127.0.0.1', family: 4, servername: host, allowListed: false });

  it('IMAP without STARTTLS on offer: no plaintext LOGIN', async () => {
    const seen: string[] = [];
    const imap = await tcpServer((s) => {
      s.write('* OK IMAP4rev1 plaintext only\r\n');
      let buf = '';
      s.on('data', (d) => {
        buf += d.toString();
        for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 2);
          seen.push(line);
          const [tag, cmd = ''] = line.split(' ');
          if (/^capability$/i.test(cmd)) s.write(`* CAPABILITY IMAP4rev1\r\n${tag} OK done\r\n`);
          else if (/^logout$/i.test(cmd)) s.end(`* BYE\r\n${tag} OK bye\r\n`);
          else s.write(`${tag} OK done\r\n`);
        }
      });
    });
    const account = { imap: { host: 'imap.example.com', port: imap.port, secure: false } };
    const attempt = async (target: Vetted) => {
      const client = new ImapFlow({ ...imapConnectOptions(account, target, 3000), auth: { user: 'u@example.com', pass: 'imap-plain-secret' }, logger: false });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.logout();
        return 'connected';
      } catch (err) {
        return (err as Error).message;
      }
    };
    try {
      expect(await attempt(remote('imap.example.com'))).toMatch(/STARTTLS/);
      expect(seen.some((l) => l.includes('imap-plain-secret'))).toBe(false);
      // The same server, allow-listed by the operator, gets the login (the fake server does work).
      expect(await attempt({ ...remote('imap.example.com'), allowListed: true })).toBe('connected');
      expect(seen.some((l) => l.includes('imap-plain-secret'))).toBe(true);
    } finally {
      await imap.close();
    }
  });

  it('SMTP: a name that merely looks like loopback (127.example.com) still requires STARTTLS before AUTH', async () => {
    const auths: string[] = [];
    const server = new SMTPServer({
      secure: false,
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      authOptional: false,
      logger: false,
      closeTimeout: 500,
      onAuth(auth, _session, callback) {
        auths.push(auth.username ?? '');
        callback(null, { user: auth.username });
      },
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => callback());
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.server.address() as net.AddressInfo).port;
    const send = async (target: Vetted) => {
      const transport = nodemailer.createTransport({
        ...smtpConnectOptions({ smtp: { host: '127.example.com', port, secure: false } }, target, 3000),
        auth: { user: 'u@example.com', pass: 'smtp-plain-secret' },
      });
      try {
        await transport.sendMail({ from: 'u@example.com', to: 'x@example.test', subject: 's', text: 't' });
        return 'sent';
      } catch (err) {
        return (err as Error).message;
      } finally {
        transport.close();
      }
    };
    try {
      expect(await send(remote('127.example.com'))).not.toBe('sent');
      expect(auths).toEqual([]);
      expect(await send({ ...remote('127.example.com'), allowListed: true })).toBe('sent');
      expect(auths).toEqual(['u@example.com']);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
