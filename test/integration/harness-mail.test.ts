// Harness check, not a product test: the mail test harness (real Dovecot, real smtp-server, fake Microsoft OAuth in
// test/helpers/) works with imapflow and nodemailer, so mail.test.ts can rely on it. Nothing from src/ runs here.
import fs from 'node:fs';
import net from 'node:net';
import { ImapFlow, type ImapFlowOptions } from 'imapflow';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { FakeMicrosoftOAuth } from '../helpers/oauth.js';
import { startSmtp, type SmtpTestServer } from '../helpers/smtp.js';

const CLIENT_ID = '9e5f94bc-e8a4-4e73-b8be-63364c29d753';

let oauth: FakeMicrosoftOAuth;
let dovecot: DovecotServer;
// Outlook-like instance: XOAUTH2 only (imapflow would pick OAUTHBEARER if offered) and a localized junk folder.
let outlook: DovecotServer;
let smtp: SmtpTestServer;

beforeAll(async () => {
  oauth = await new FakeMicrosoftOAuth().start();
  [dovecot, outlook] = await Promise.all([
    startDovecot({ oauth: { introspectionUrl: oauth.introspectionUrl } }),
    startDovecot({ oauth: { introspectionUrl: oauth.introspectionUrl }, oauthMechanisms: ['xoauth2'], junkName: '垃圾邮件' }),
  ]);
  smtp = await startSmtp({
    users: { 'sender@example.com': 'smtp-secret' },
    verifyToken: (email, token) => oauth.isValidAccessToken(email, token),
    rejectRecipients: ['nobody@example.com'],
  });
});

afterAll(async () => {
  const dirs = [dovecot?.dir, outlook?.dir].filter((d): d is string => !!d);
  await Promise.all([dovecot?.stop(), outlook?.stop(), smtp?.stop(), oauth?.stop()]);
  for (const d of dirs) expect(fs.existsSync(d)).toBe(false);
});

function imap(server: DovecotServer, auth: ImapFlowOptions['auth']): ImapFlow {
  const client = new ImapFlow({ host: server.host, port: server.port, secure: false, auth, logger: false });
  client.on('error', () => {});
  return client;
}

async function refreshGrant(refreshToken: string, clientId = CLIENT_ID): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(oauth.tokenUrl, {
    method: 'POST',
    body: new URLSearchParams({
      client_id: clientId,
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      scope: 'https://outlook.office.com/IMAP.AccessAsUser.All offline_access',
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function accessTokenFor(email: string, refreshToken: string): Promise<string> {
  oauth.addAccount({ email, clientId: CLIENT_ID, refreshToken });
  const { status, body } = await refreshGrant(refreshToken);
  expect(status).toBe(200);
  return body.access_token as string;
}

// Dovecot writes the login line asynchronously, a moment after the client sees OK.
async function waitForLog(server: DovecotServer, re: RegExp): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const line = server
      .logs()
      .split('\n')
      .find((l) => re.test(l));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no log line ${re} in:\n${server.logs()}`);
}

function portAcceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('harness: dovecot: password logins', () => {
  it('accepts the right password and rejects a wrong one', async () => {
    await dovecot.addUser('alice@example.com', 'pa:ss wörd');
    const client = imap(dovecot, { user: 'alice@example.com', pass: 'pa:ss wörd' });
    await client.connect();
    expect(client.authenticated).toBeTruthy();
    await client.logout();

    const bad = imap(dovecot, { user: 'alice@example.com', pass: 'wrong' });
    await expect(bad.connect()).rejects.toMatchObject({ authenticationFailed: true, serverResponseCode: 'AUTHENTICATIONFAILED' });
  });

  it('picks up users added while it runs', async () => {
    await dovecot.addUser('late@example.com', 'first');
    const first = imap(dovecot, { user: 'late@example.com', pass: 'first' });
    await first.connect();
    await first.logout();
    // Same size as before, so only the mtime/inode tells Dovecot the file changed.
    await dovecot.addUser('late@example.com', 'secnd');
    await dovecot.addUser('later@example.com', 'x');
    const changed = imap(dovecot, { user: 'late@example.com', pass: 'secnd' });
    await changed.connect();
    await changed.logout();
    const added = imap(dovecot, { user: 'later@example.com', pass: 'x' });
    await added.connect();
    await added.logout();
  });
});

describe('harness: dovecot: OAuth2 logins through the introspection endpoint', () => {
  it('logs in with an access token from the fake token endpoint and rejects a bad one', async () => {
    const token = await accessTokenFor('bob@outlook.com', 'rt-bob');
    const client = imap(dovecot, { user: 'bob@outlook.com', accessToken: token });
    await client.connect();
    expect(client.authenticated).toBeTruthy();
    await client.logout();
    expect(oauth.introspectionRequests).toContain(token);
    await waitForLog(dovecot, /Login: user=<bob@outlook\.com>, method=OAUTHBEARER/);

    const bad = imap(dovecot, { user: 'bob@outlook.com', accessToken: 'EwA-not-a-token' });
    await expect(bad.connect()).rejects.toMatchObject({ authenticationFailed: true });
    // A valid token presented for another mailbox must not open it.
    const other = imap(dovecot, { user: 'alice@example.com', accessToken: token });
    await expect(other.connect()).rejects.toMatchObject({ authenticationFailed: true });
  });

  it('uses XOAUTH2 where only XOAUTH2 is offered, and refuses expired tokens', async () => {
    const token = await accessTokenFor('carol@outlook.com', 'rt-carol');
    const client = imap(outlook, { user: 'carol@outlook.com', accessToken: token });
    await client.connect();
    await client.logout();
    await waitForLog(outlook, /Login: user=<carol@outlook\.com>, method=XOAUTH2/);

    oauth.expireAccessTokens('carol@outlook.com');
    const expired = imap(outlook, { user: 'carol@outlook.com', accessToken: token });
    await expect(expired.connect()).rejects.toMatchObject({ authenticationFailed: true });
  });
});

describe('harness: dovecot: deliver, count and special-use folders', () => {
  it('delivers into INBOX and Junk, visible to a separate imapflow session', async () => {
    await dovecot.addUser('dave@example.com', 'dave-pw');
    const date = new Date('2024-03-01T10:00:00Z');
    const inboxUid = await dovecot.deliver(
      'dave@example.com',
      'INBOX',
      buildMessage({ from: 'Ann <ann@example.org>', to: 'dave@example.com', subject: 'Hello', text: 'hi there', date }),
    );
    const junkUid = await dovecot.deliver(
      'dave@example.com',
      'Junk',
      buildMessage({
        from: 'spam@example.net',
        to: 'dave@example.com',
        subject: 'Wïn a prize',
        text: 'plain',
        html: '<p>html</p>',
        messageId: '<junk-1@example.net>',
      }),
      { seen: true, date },
    );
    expect(inboxUid).toBeGreaterThan(0);
    expect(junkUid).toBeGreaterThan(0);
    expect(await dovecot.count('dave@example.com', 'INBOX')).toBe(1);
    expect(await dovecot.count('dave@example.com', 'Junk')).toBe(1);

    const client = imap(dovecot, { user: 'dave@example.com', pass: 'dave-pw' });
    await client.connect();
    try {
      const boxes = await client.list();
      expect(boxes.find((b) => b.specialUse === '\\Junk')?.path).toBe('Junk');
      expect(boxes.find((b) => b.specialUse === '\\Sent')?.path).toBe('Sent');
      expect(boxes.find((b) => b.specialUse === '\\Trash')?.path).toBe('Trash');

      const lock = await client.getMailboxLock('Junk');
      try {
        const msg = await client.fetchOne(String(junkUid), { envelope: true, flags: true, internalDate: true }, { uid: true });
        if (!msg) throw new Error(`message ${junkUid} not found in Junk`);
        expect(msg.envelope?.subject).toBe('Wïn a prize');
        expect(msg.envelope?.messageId).toBe('<junk-1@example.net>');
        expect(msg.flags?.has('\\Seen')).toBe(true);
        expect(msg && new Date(msg.internalDate!).toISOString()).toBe(date.toISOString());
      } finally {
        lock.release();
      }
    } finally {
      await client.logout();
    }
  });

  it('delivers to oauth-only mailboxes and serves a localized \\Junk folder', async () => {
    const token = await accessTokenFor('erin@outlook.com', 'rt-erin');
    await outlook.deliver('erin@outlook.com', '垃圾邮件', buildMessage({ from: 'x@example.net', to: 'erin@outlook.com', subject: 'spam', text: 'spam' }));
    expect(outlook.junkName).toBe('垃圾邮件');
    expect(await outlook.count('erin@outlook.com', '垃圾邮件')).toBe(1);

    const client = imap(outlook, { user: 'erin@outlook.com', accessToken: token });
    await client.connect();
    try {
      const junk = (await client.list()).find((b) => b.specialUse === '\\Junk');
      expect(junk?.path).toBe('垃圾邮件');
      expect(await client.status(junk!.path, { messages: true })).toMatchObject({ messages: 1 });
    } finally {
      await client.logout();
    }
  });
});

describe('harness: smtp-server: nodemailer submission', () => {
  it('accepts password auth and records the message with its auth info', async () => {
    const transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: false,
      auth: { user: 'sender@example.com', pass: 'smtp-secret' },
    });
    const before = smtp.received.length;
    await transport.sendMail({ from: 'sender@example.com', to: 'rcpt@example.com', subject: 'Password sent', text: 'body' });
    const [mail] = (await smtp.waitFor(before + 1)).slice(before);
    expect(mail!.auth).toEqual({ method: 'PLAIN', username: 'sender@example.com' });
    expect(mail!.from).toBe('sender@example.com');
    expect(mail!.to).toEqual(['rcpt@example.com']);
    expect(mail!.parsed.subject).toBe('Password sent');
    expect(mail!.raw).toContain('Subject: Password sent');
  });

  it('accepts XOAUTH2 with a token from the fake endpoint', async () => {
    const token = await accessTokenFor('frank@outlook.com', 'rt-frank');
    const transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: false,
      auth: { type: 'OAuth2', user: 'frank@outlook.com', accessToken: token },
    });
    const before = smtp.received.length;
    await transport.sendMail({ from: 'frank@outlook.com', to: ['a@example.com', 'b@example.com'], subject: 'OAuth sent', html: '<b>hi</b>' });
    const [mail] = (await smtp.waitFor(before + 1)).slice(before);
    expect(mail!.auth).toEqual({ method: 'XOAUTH2', username: 'frank@outlook.com', accessToken: token });
    expect(mail!.to).toEqual(['a@example.com', 'b@example.com']);
    expect(mail!.parsed.html).toContain('<b>hi</b>');
  });

  it('answers 535 to bad credentials and 550 to rejected recipients', async () => {
    const wrong = nodemailer.createTransport({ host: smtp.host, port: smtp.port, secure: false, auth: { user: 'sender@example.com', pass: 'nope' } });
    await expect(wrong.sendMail({ from: 'sender@example.com', to: 'rcpt@example.com', text: 'x' })).rejects.toMatchObject({ code: 'EAUTH', responseCode: 535 });

    const badToken = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: false,
      auth: { type: 'OAuth2', user: 'frank@outlook.com', accessToken: 'EwA-bogus' },
    });
    await expect(badToken.sendMail({ from: 'frank@outlook.com', to: 'rcpt@example.com', text: 'x' })).rejects.toMatchObject({
      code: 'EAUTH',
      responseCode: 535,
    });

    const ok = nodemailer.createTransport({ host: smtp.host, port: smtp.port, secure: false, auth: { user: 'sender@example.com', pass: 'smtp-secret' } });
    await expect(ok.sendMail({ from: 'sender@example.com', to: 'nobody@example.com', text: 'x' })).rejects.toMatchObject({ responseCode: 550 });
  });
});

describe('harness: fake Microsoft token endpoint', () => {
  it('rotates refresh tokens and refuses the old one, like Microsoft', async () => {
    oauth.addAccount({ email: 'gina@outlook.com', clientId: CLIENT_ID, refreshToken: 'rt-gina-0', rotate: true, expiresIn: 120 });
    const first = await refreshGrant('rt-gina-0');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ token_type: 'Bearer', expires_in: 120 });
    const next = first.body.refresh_token as string;
    expect(next).toBeTruthy();
    expect(next).not.toBe('rt-gina-0');
    expect(oauth.currentRefreshToken('gina@outlook.com')).toBe(next);
    expect(oauth.isValidAccessToken('gina@outlook.com', first.body.access_token as string)).toBe(true);

    const reused = await refreshGrant('rt-gina-0');
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    expect(reused.body.error_description).toMatch(/^AADSTS70000:/);

    const second = await refreshGrant(next);
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(next);
    expect(oauth.tokenRequests.at(-1)).toEqual({
      client_id: CLIENT_ID,
      grant_type: 'refresh_token',
      refresh_token: next,
      scope: 'https://outlook.office.com/IMAP.AccessAsUser.All offline_access',
    });
  });

  it("refuses revoked tokens and other apps' client ids with invalid_grant", async () => {
    oauth.addAccount({ email: 'hank@outlook.com', clientId: CLIENT_ID, refreshToken: 'rt-hank' });
    const fine = await refreshGrant('rt-hank');
    expect(fine.status).toBe(200);
    expect(fine.body.refresh_token).toBeUndefined();

    const otherApp = await refreshGrant('rt-hank', '00000000-0000-0000-0000-000000000000');
    expect(otherApp).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

    oauth.revoke('rt-hank', 'AADSTS700082');
    const revoked = await refreshGrant('rt-hank');
    expect(revoked).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_codes: [700082] } });
    expect(revoked.body.error_description).toMatch(/^AADSTS700082:/);
  });
});

describe('harness: cleanup', () => {
  it('stop() ends dovecot and removes its temp dir', async () => {
    const server = await startDovecot();
    expect(await portAcceptsConnections(server.port)).toBe(true);
    expect(fs.existsSync(server.dir)).toBe(true);
    await server.stop();
    expect(fs.existsSync(server.dir)).toBe(false);
    expect(await portAcceptsConnections(server.port)).toBe(false);
  });
});
