// A real SMTP submission server (smtp-server) on a free loopback port that records what authenticated clients send.
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerAuthentication } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  parsed: ParsedMail;
  auth: { method: string; username: string; accessToken?: string };
}

export interface SmtpTestServer {
  host: string;
  port: number;
  received: ReceivedMail[];
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  stop(): Promise<void>;
}

export interface StartSmtpOptions {
  /** email → password for PLAIN/LOGIN. */
  users?: Record<string, string>;
  /** Decides XOAUTH2 logins, e.g. `(email, token) => oauth.isValidAccessToken(email, token)`. */
  verifyToken?: (email: string, accessToken: string) => boolean;
  /** Recipients refused at RCPT TO with 550, like a mailbox that does not exist. */
  rejectRecipients?: string[];
  /** Offer STARTTLS with smtp-server's built-in self-signed certificate (clients need tls.rejectUnauthorized=false). */
  tls?: boolean;
}

type AuthInfo = ReceivedMail['auth'];

function smtpError(message: string, responseCode: number): Error {
  return Object.assign(new Error(message), { responseCode });
}

export function startSmtp(opts: StartSmtpOptions = {}): Promise<SmtpTestServer> {
  const users = new Map(Object.entries(opts.users ?? {}).map(([u, p]) => [u.toLowerCase(), p]));
  const rejected = new Set((opts.rejectRecipients ?? []).map((r) => r.toLowerCase()));
  const received: ReceivedMail[] = [];
  const waiters = new Set<() => void>();

  const server = new SMTPServer({
    secure: false,
    allowInsecureAuth: true,
    disabledCommands: opts.tls ? [] : ['STARTTLS'],
    authMethods: ['PLAIN', 'LOGIN', 'XOAUTH2'],
    // Like smtp.office365.com, nothing is accepted before AUTH.
    authOptional: false,
    logger: false,
    // Clients that pool connections would otherwise hold stop() for smtp-server's default 30s.
    closeTimeout: 1000,
    onAuth(auth: SMTPServerAuthentication, _session, callback) {
      const username = auth.username ?? '';
      if (auth.method === 'XOAUTH2') {
        const token = auth.accessToken ?? '';
        if (opts.verifyToken?.(username, token)) {
          const user: AuthInfo = { method: 'XOAUTH2', username, accessToken: token };
          return callback(null, { user });
        }
        // The SASL error challenge makes the client send an empty line, after which smtp-server answers 535.
        return callback(null, { data: { status: '401', schemes: 'bearer', scope: 'https://outlook.office.com/SMTP.Send' } });
      }
      const expected = users.get(username.toLowerCase());
      if (expected !== undefined && expected === auth.password) {
        const user: AuthInfo = { method: auth.method, username };
        return callback(null, { user });
      }
      callback(smtpError('5.7.3 Authentication unsuccessful', 535));
    },
    onRcptTo(address, _session, callback) {
      if (rejected.has(address.address.toLowerCase())) {
        return callback(smtpError(`5.1.1 <${address.address}>: Recipient address rejected: User unknown`, 550));
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', (err: Error) => callback(err));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const envelope = session.envelope;
        simpleParser(raw)
          .then((parsed) => {
            received.push({
              from: envelope.mailFrom ? envelope.mailFrom.address : '',
              to: envelope.rcptTo.map((r) => r.address),
              raw,
              parsed,
              auth: session.user as AuthInfo,
            });
            for (const w of [...waiters]) w();
            callback();
          })
          .catch((err: Error) => callback(err));
      });
    },
  });

  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.server.address() as AddressInfo;
      resolve({
        host: '127.0.0.1',
        port,
        received,
        waitFor(n, timeoutMs = 10_000) {
          if (received.length >= n) return Promise.resolve(received.slice(0, n));
          return new Promise((res, rej) => {
            const check = () => {
              if (received.length < n) return;
              clearTimeout(timer);
              waiters.delete(check);
              res(received.slice(0, n));
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              rej(new Error(`smtp: waited ${timeoutMs}ms for ${n} messages, got ${received.length}`));
            }, timeoutMs);
            waiters.add(check);
          });
        },
        stop: () => new Promise<void>((res) => server.close(() => res())),
      });
    });
  });
}
