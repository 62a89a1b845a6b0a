// A private, real Dovecot IMAP server per test file (temp dir, free port, optional OAuth2 via an introspection URL).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { stopWatched } from './spawn.js';
import { freePort } from './redis-server.js';

const DOVECOT_BIN = '/usr/sbin/dovecot';

export interface DovecotServer {
  host: string;
  port: number;
  junkName: string;
  /** The instance's temp dir (config, logs, maildirs); gone after stop(). */
  dir: string;
  addUser(email: string, password: string): Promise<void>;
  /** Puts a message into a mailbox over IMAP APPEND and returns its UID; a missing mailbox other than INBOX is created. */
  deliver(email: string, mailbox: string, raw: string | Buffer, opts?: { date?: Date; seen?: boolean }): Promise<number>;
  count(email: string, mailbox: string): Promise<number>;
  /** Dovecot's own log so far, for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

export interface StartDovecotOptions {
  oauth?: { introspectionUrl: string };
  /** Name of the \Junk special-use folder for every user of this instance. */
  junkName?: string;
  /**
   * SASL mechanisms offered for tokens. imapflow prefers OAUTHBEARER when it is offered, so a test that must
   * exercise XOAUTH2 (what outlook.office365.com offers) passes ['xoauth2'].
   */
  oauthMechanisms?: ('xoauth2' | 'oauthbearer')[];
}

interface Accounts {
  mailUid: number;
  mailGid: number;
  internalUser: string;
  loginUser: string;
  internalGid: number;
}

function getpwnam(name: string): string[] | undefined {
  try {
    return execFileSync('getent', ['passwd', name], { encoding: 'utf8' }).trim().split(':');
  } catch {
    return undefined;
  }
}

// Dovecot refuses uid 0 for mail and wants unprivileged users for its own processes, so borrow Debian's system users.
function systemAccounts(): Accounts {
  if (process.getuid?.() !== 0) {
    throw new Error('startDovecot needs root: Dovecot switches to the mail/dovecot/dovenull users');
  }
  const mail = getpwnam('mail');
  const internal = getpwnam('dovecot') ?? getpwnam('nobody');
  const login = getpwnam('dovenull') ?? getpwnam('nobody');
  if (!mail || !internal || !login) throw new Error('startDovecot: missing system users mail/dovecot/dovenull');
  return { mailUid: Number(mail[2]), mailGid: Number(mail[3]), internalUser: internal[0]!, internalGid: Number(internal[3]), loginUser: login[0]! };
}

// Values go into dovecot.conf verbatim (the junk name inside quotes), so refuse what would break its syntax.
function assertConfigSafe(what: string, value: string, forbidden: RegExp): void {
  if (!value || forbidden.test(value)) throw new Error(`startDovecot: ${what} ${JSON.stringify(value)} cannot be used in a dovecot config`);
}

// The name becomes a passwd-file line and, for Dovecot, a file name under users/.
function assertUserName(email: string): void {
  if (!email || /[:/\s]/.test(email) || email.startsWith('.')) throw new Error(`dovecot addUser: invalid user name ${JSON.stringify(email)}`);
}

// Base64 keeps any password (colons included) safe inside the colon-separated passwd-file.
function passwdLine(user: string, password: string): string {
  return `${user}:{PLAIN.b64}${Buffer.from(password, 'utf8').toString('base64')}::::::\n`;
}

function writeAtomic(file: string, content: string, gid: number, mtimeSec: number): void {
  const tmp = `${file}.${randomUUID()}.tmp`;
  fs.writeFileSync(tmp, content, { mode: 0o640 });
  // The auth process runs as the internal dovecot user and must be able to read the passwd-files.
  fs.chownSync(tmp, 0, gid);
  fs.utimesSync(tmp, mtimeSec, mtimeSec);
  fs.renameSync(tmp, file);
}

/** One SASL PLAIN attempt on a fresh connection; true if Dovecot accepted it. */
function tryLogin(port: number, user: string, password: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = '';
    let sent = false;
    const done = (ok: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 5000);
    sock.on('data', (d: Buffer) => {
      buf += d.toString();
      if (!sent && buf.includes('\r\n')) {
        sent = true;
        const ir = Buffer.from(`\0${user}\0${password}`, 'utf8').toString('base64');
        sock.write(`a AUTHENTICATE PLAIN ${ir}\r\nb LOGOUT\r\n`);
      }
      const m = /^a (OK|NO|BAD)/m.exec(buf);
      if (m) done(m[1] === 'OK');
    });
    sock.on('error', () => done(false));
    sock.on('close', () => done(false));
  });
}

function dovecotConfig(o: { dir: string; port: number; accounts: Accounts; junkName: string; oauth: boolean; oauthMechanisms: string[] }): string {
  const { dir, accounts } = o;
  const mechs = ['plain', 'login', ...(o.oauth ? o.oauthMechanisms : [])];
  return `# Generated by test/helpers/dovecot.ts
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
debug_log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = ${mechs.join(' ')}
auth_verbose = yes
# Wrong-password tests would otherwise wait 2s per attempt (Dovecot still answers failures on a 0.5s tick).
auth_failure_delay = 0
default_internal_user = ${accounts.internalUser}
default_login_user = ${accounts.loginUser}
first_valid_uid = ${accounts.mailUid}
first_valid_gid = ${accounts.mailGid}
mail_location = maildir:~/Maildir

service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${o.port}
  }
  inet_listener imaps {
    port = 0
  }
  # One long-lived login process: a per-connection one spawned just before SIGTERM holds up shutdown for 5s.
  service_count = 0
  process_min_avail = 1
}
# Anvil's per-IP penalty would slow every later failed login from 127.0.0.1, up to 15s each.
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}

# The harness logs in as any user (oauth-only ones included) through this master user, via the SASL PLAIN authzid.
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/master-users
  master = yes
}
# One file per user: Dovecot stats a passwd-file at most once a second, and a file that did not exist before is read at once.
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/users/%u
  mechanisms = plain login
}
${
  o.oauth
    ? `passdb {
  driver = oauth2
  mechanisms = ${o.oauthMechanisms.join(' ')}
  args = ${dir}/dovecot-oauth2.conf.ext
}
`
    : ''
}# Static userdb: an oauth-only mailbox exists as soon as its token is accepted, as at Microsoft.
userdb {
  driver = static
  args = uid=${accounts.mailUid} gid=${accounts.mailGid} home=${dir}/mail/%u allow_all_users=yes
}

namespace inbox {
  inbox = yes
  separator = /
  mailbox "${o.junkName}" {
    special_use = \\Junk
    auto = subscribe
  }
  mailbox Sent {
    special_use = \\Sent
    auto = subscribe
  }
  mailbox Trash {
    special_use = \\Trash
    auto = subscribe
  }
}
`;
}

function oauth2Config(introspectionUrl: string): string {
  // No tokeninfo_url: Dovecot then goes straight to introspection, which alone knows whether the token is active.
  return `introspection_mode = post
introspection_url = ${introspectionUrl}
force_introspection = yes
username_attribute = username
active_attribute = active
active_value = true
timeout_msecs = 10000
`;
}

/** True if a connection gets an "* OK" greeting within timeoutMs. */
function greeting(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = '';
    const done = (ok: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    sock.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('* OK'));
    });
    sock.on('error', () => done(false));
    sock.on('close', () => done(false));
  });
}

// Dovecot runs under a small sh watchdog that holds a pipe from this process: when the pipe closes (stop(), or the
// test process dying, even by SIGKILL) it SIGTERMs Dovecot, and in the second case also removes the temp dir.
// $1 = dovecot binary, $2 = config, $3 = temp dir.
const WATCHDOG = `
exec 3<&0
"$1" -F -c "$2" </dev/null &
pid=$!
{ read _ <&3; : > "$3/.stopping"; kill -TERM "$pid" 2>/dev/null; } &
watcher=$!
wait "$pid"
code=$?
if [ -e "$3/.stopping" ]; then rm -rf "$3"; else kill "$watcher" 2>/dev/null; fi
exit $code
`;

// The watchdog and Dovecot share a process group (detached), so a stuck shutdown can be ended as a whole.
const stopChild = (child: ChildProcess) => stopWatched(child, 15_000);

export async function startDovecot(opts: StartDovecotOptions = {}): Promise<DovecotServer> {
  const accounts = systemAccounts();
  const junkName = opts.junkName ?? 'Junk';
  // "/" is the hierarchy separator, so it would make the junk folder a child of another folder.
  assertConfigSafe('junkName', junkName, /["\\/\r\n]/);
  if (opts.oauth) assertConfigSafe('introspectionUrl', opts.oauth.introspectionUrl, /\s/);

  // Unix socket paths are limited to ~108 bytes, so keep base_dir short even if TMPDIR is long.
  const tmpRoot = os.tmpdir().length > 40 ? '/tmp' : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(tmpRoot, 'switchyard-dovecot-'));
  fs.chmodSync(dir, 0o755);
  fs.mkdirSync(path.join(dir, 'state'));
  fs.mkdirSync(path.join(dir, 'mail'));
  fs.mkdirSync(path.join(dir, 'users'));
  fs.chownSync(path.join(dir, 'mail'), accounts.mailUid, accounts.mailGid);

  const master = { user: `harness-${randomBytes(4).toString('hex')}`, pass: randomBytes(18).toString('base64url') };
  // Dovecot notices a changed passwd-file only by its mtime (whole seconds) or size, so every rewrite gets a later mtime.
  const mtimes = new Map<string, number>();
  const writeUser = (user: string, password: string) => {
    const mtime = Math.max(Math.floor(Date.now() / 1000), (mtimes.get(user) ?? 0) + 1);
    mtimes.set(user, mtime);
    writeAtomic(path.join(dir, 'users', user), passwdLine(user, password), accounts.internalGid, mtime);
  };
  writeAtomic(path.join(dir, 'master-users'), passwdLine(master.user, master.pass), accounts.internalGid, Math.floor(Date.now() / 1000));
  if (opts.oauth) fs.writeFileSync(path.join(dir, 'dovecot-oauth2.conf.ext'), oauth2Config(opts.oauth.introspectionUrl), { mode: 0o644 });
  const logFile = path.join(dir, 'dovecot.log');
  const logs = () => {
    try {
      return fs.readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };

  let child: ChildProcess | undefined;
  let port = 0;
  let output = '';
  let failure = '';
  // Another process can take the free port before Dovecot binds it; a fresh port on retry covers that race.
  for (let attempt = 0; attempt < 3 && !child; attempt++) {
    port = await freePort();
    const conf = path.join(dir, 'dovecot.conf');
    fs.writeFileSync(
      conf,
      dovecotConfig({ dir, port, accounts, junkName, oauth: !!opts.oauth, oauthMechanisms: opts.oauthMechanisms ?? ['xoauth2', 'oauthbearer'] }),
    );
    const c = spawn('/bin/sh', ['-c', WATCHDOG, 'dovecot-watchdog', DOVECOT_BIN, conf, dir], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    c.stdin!.on('error', () => {});
    c.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    c.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 20_000;
    let ready = false;
    while (Date.now() < deadline && c.exitCode === null && c.signalCode === null) {
      if (await greeting(port, 2000)) {
        ready = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (ready) {
      child = c;
    } else {
      // Read the log now: stopping a Dovecot that is still running also removes the dir.
      failure = `${output}\n${logs()}`;
      const exitedByItself = c.exitCode !== null;
      await stopChild(c);
      if (!exitedByItself || !/Address already in use/i.test(failure)) break;
    }
  }
  if (!child) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`dovecot did not start:\n${failure}`);
  }
  const proc = child;

  // Every harness IMAP session authenticates as the master user on behalf of `email`, so no user password is needed.
  const withClient = async <T>(email: string, fn: (client: ImapFlow) => Promise<T>): Promise<T> => {
    const client = new ImapFlow({
      host: '127.0.0.1',
      port,
      secure: false,
      auth: { user: master.user, pass: master.pass, authzid: email, loginMethod: 'AUTH=PLAIN' },
      logger: false,
    });
    client.on('error', () => {});
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.logout().catch(() => client.close());
    }
  };

  let stopped = false;
  return {
    host: '127.0.0.1',
    port,
    junkName,
    dir,
    logs,
    async addUser(email, password) {
      assertUserName(email);
      // Dovecot lower-cases login names (auth_username_format = %Lu) before it opens users/%u.
      writeUser(email.toLowerCase(), password);
      // A changed password can take Dovecot up to a second to see; return only once it accepts the new one.
      const deadline = Date.now() + 5000;
      while (!(await tryLogin(port, email, password))) {
        if (Date.now() > deadline) throw new Error(`dovecot addUser: ${email} cannot log in after 5s:\n${logs()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async deliver(email, mailbox, raw, o = {}) {
      return withClient(email, async (client) => {
        const flags = o.seen ? ['\\Seen'] : [];
        let res = await client.append(mailbox, raw, flags, o.date).catch((err: unknown) => err as Error);
        if ((res instanceof Error || res === false) && mailbox.toUpperCase() !== 'INBOX') {
          await client.mailboxCreate(mailbox).catch(() => undefined);
          res = await client.append(mailbox, raw, flags, o.date);
        }
        if (res instanceof Error) throw res;
        if (!res || typeof res.uid !== 'number') throw new Error(`dovecot deliver: APPEND to ${mailbox} returned no UID`);
        return res.uid;
      });
    },
    async count(email, mailbox) {
      return withClient(email, async (client) => {
        const status = await client.status(mailbox, { messages: true });
        if (!status) throw new Error(`dovecot count: STATUS ${mailbox} failed`);
        return status.messages ?? 0;
      });
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopChild(proc);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function encodeWord(value: string): string {
  // RFC 2047 words stay under 76 chars when each carries at most 45 bytes of UTF-8.
  if (!/[^\x20-\x7e]/.test(value)) return value;
  const words: string[] = [];
  let chunk = '';
  for (const ch of value) {
    if (Buffer.byteLength(chunk + ch) > 45) {
      words.push(chunk);
      chunk = '';
    }
    chunk += ch;
  }
  if (chunk) words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w, 'utf8').toString('base64')}?=`).join('\r\n ');
}

function encodeAddress(addr: string): string {
  const m = /^\s*(.*?)\s*<([^>]+)>\s*$/.exec(addr);
  if (!m) return addr;
  const name = m[1]!.replace(/^"(.*)"$/, '$1');
  if (!name) return `<${m[2]}>`;
  return /[^\x20-\x7e]/.test(name) ? `${encodeWord(name)} <${m[2]}>` : `"${name.replace(/(["\\])/g, '\\$1')}" <${m[2]}>`;
}

function rfc5322Date(d: Date): string {
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${days[d.getUTCDay()]}, ${d.getUTCDate()} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

function base64Body(s: string): string {
  return (
    Buffer.from(s, 'utf8')
      .toString('base64')
      .match(/.{1,76}/g) ?? ['']
  ).join('\r\n');
}

function part(type: 'plain' | 'html', body: string): string {
  return `Content-Type: text/${type}; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Body(body)}\r\n`;
}

export function buildMessage(m: { from: string; to: string; subject: string; text?: string; html?: string; date?: Date; messageId?: string }): string {
  const messageId = m.messageId ?? `<${randomUUID()}@switchyard.test>`;
  const headers = [
    `From: ${encodeAddress(m.from)}`,
    `To: ${m.to.split(',').map(encodeAddress).join(', ')}`,
    `Subject: ${encodeWord(m.subject)}`,
    `Date: ${rfc5322Date(m.date ?? new Date())}`,
    `Message-ID: ${messageId.startsWith('<') ? messageId : `<${messageId}>`}`,
    'MIME-Version: 1.0',
  ].join('\r\n');
  if (m.text !== undefined && m.html !== undefined) {
    const boundary = `----=_switchyard_${randomBytes(8).toString('hex')}`;
    return (
      `${headers}\r\nContent-Type: multipart/alternative; boundary="${boundary}"\r\n\r\n` +
      `--${boundary}\r\n${part('plain', m.text)}--${boundary}\r\n${part('html', m.html)}--${boundary}--\r\n`
    );
  }
  return `${headers}\r\n${m.html !== undefined ? part('html', m.html) : part('plain', m.text ?? '')}`;
}
