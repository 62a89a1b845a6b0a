// IMAP sessions with imapflow: connect (password or XOAUTH2), find folders, fetch, delete; errors as 502/504.
import { ImapFlow, type FetchMessageObject, type ImapFlowOptions, type MailboxObject } from 'imapflow';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';
import { isCancelled, stopIfCancelled } from '../jobs/cancel.js';
import { OutboundRefusedError, outboundPolicy, type Vetted } from '../outbound.js';
import { inSpan } from '../telemetry.js';
import { accessToken, forgetAccessToken } from './oauth.js';
import type { Address, MailboxName } from './schema.js';
import type { MailAccount, NewMessage } from './store.js';

const MAX_STORED_HTML = 2 * 1024 * 1024;
/**
 * Of each message, at most this much of its source is fetched and parsed: a 5 MB mail would
 * otherwise keep the event loop busy for seconds (parsing, then scanning for codes). Larger
 * messages are read from their first 512 KiB; their text and HTML end there.
 */
export const MAX_PARSED_SOURCE = 512 * 1024;

/** imapflow and socket errors, as the API's answer: 502 refused or unreachable, 504 timed out. */
export function mailServerError(err: unknown, what = 'mail server'): AppError {
  if (err instanceof AppError) return err;
  const e = err as { code?: string; authenticationFailed?: boolean; responseText?: string; message?: string; response?: unknown; responseCode?: number };
  const reason = (e.responseText || (typeof e.response === 'string' ? e.response : '') || e.message || 'unknown error').toString().slice(0, 300);
  if ((err as { tlsFailed?: boolean }).tlsFailed) {
    return new AppError(502, `The ${what} does not offer STARTTLS, and credentials are only sent over TLS: use secure: true (port 993/465)`, {
      code: 'mail_tls_required',
      retriable: false,
    });
  }
  if (e.authenticationFailed || e.code === 'EAUTH') {
    return new AppError(502, `The ${what} refused authentication: ${reason}`, { code: 'mail_auth_failed', retriable: false });
  }
  if (['CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'UPGRADE_TIMEOUT', 'ETIMEOUT', 'ETIMEDOUT'].includes(e.code ?? '') || /timed? ?out/i.test(e.message ?? '')) {
    return new AppError(504, `The ${what} did not answer in time`, { code: 'mail_timeout', retriable: true });
  }
  if (
    [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EHOSTUNREACH',
      'ECONNRESET',
      'EPIPE',
      'EAI_AGAIN',
      'NoConnection',
      'EConnectionClosed',
      'ECONNECTION',
      'ESOCKET',
      'ClosedAfterConnectText',
      'ClosedAfterConnectTLS',
    ].includes(e.code ?? '')
  ) {
    return new AppError(502, `Could not talk to the ${what}: ${reason}`, { code: 'mail_unreachable', retriable: true });
  }
  return new AppError(502, `The ${what} refused the request: ${reason}`, { code: 'mail_refused', retriable: false });
}

/**
 * The connect-time outbound check: resolves the account's host and vets the address it resolves
 * to (src/outbound.ts). The connection then goes to that address, with the host name kept for TLS.
 */
export async function mailTarget(p: Platform, field: 'imap.host' | 'smtp.host', host: string): Promise<Vetted> {
  try {
    return await outboundPolicy(p.config.OUTBOUND_ALLOWLIST).resolve(host, Math.min(p.config.MAIL_TIMEOUT_MS, 10_000));
  } catch (err) {
    if (err instanceof OutboundRefusedError) {
      throw new AppError(400, `${field}: "${host}" is refused by the outbound policy (${err.reason})`, { code: 'outbound_refused', retriable: false });
    }
    if ((err as { code?: string }).code === 'ETIMEDOUT') {
      throw new AppError(504, `The ${field} "${host}" did not resolve in time`, { code: 'mail_timeout', retriable: true });
    }
    throw new AppError(502, `Could not resolve the ${field} "${host}"`, { code: 'mail_unreachable', retriable: true });
  }
}

/**
 * ImapFlow's connection options for a vetted target. Without implicit TLS, STARTTLS is required
 * (no plaintext LOGIN) unless the operator allow-listed the server (OUTBOUND_ALLOWLIST).
 */
export function imapConnectOptions(account: Pick<MailAccount, 'imap'>, target: Vetted, timeout: number): ImapFlowOptions {
  return {
    host: target.address,
    servername: target.servername,
    port: account.imap.port,
    secure: account.imap.secure,
    doSTARTTLS: account.imap.secure || target.allowListed ? undefined : true,
    connectionTimeout: timeout,
    greetingTimeout: Math.min(timeout, 16_000),
    socketTimeout: timeout * 2,
    tls: { rejectUnauthorized: true },
  };
}

/**
 * An imapflow logger that watches what the server says before its greeting: anything but an
 * IMAP greeting (* OK, * PREAUTH, * BYE) means the peer is not an IMAP server. `onAlien` is called
 * once; nothing the peer sent is kept.
 */
function greetingWatch(onAlien: () => void) {
  let state: 'waiting' | 'greeted' | 'alien' = 'waiting';
  const see = (entry: unknown) => {
    if (state !== 'waiting') return;
    const e = entry as { src?: string; msg?: unknown } | null;
    if (e?.src !== 's') return;
    if (typeof e.msg === 'string' && /^\* (OK|PREAUTH|BYE)\b/i.test(e.msg)) state = 'greeted';
    else {
      state = 'alien';
      onAlien();
    }
  };
  return { trace: see, debug: see, info: see, warn: see, error: see, fatal: see };
}

async function login(p: Platform, account: MailAccount, fresh: boolean, signal?: AbortSignal): Promise<ImapFlow> {
  const target = await mailTarget(p, 'imap.host', account.imap.host);
  let auth: { user: string; pass?: string; accessToken?: string };
  if (account.auth.type === 'password') auth = { user: account.email, pass: account.auth.password };
  else {
    const creds = { id: account.id, clientId: account.auth.client_id, refreshToken: account.auth.refresh_token };
    if (fresh) await forgetAccessToken(p, creds);
    auth = { user: account.email, accessToken: await accessToken(p, creds) };
  }
  let alien = false;
  const client: ImapFlow = new ImapFlow({
    ...imapConnectOptions(account, target, p.config.MAIL_TIMEOUT_MS),
    auth,
    logger: greetingWatch(() => {
      alien = true;
      setImmediate(() => client.close());
    }),
  });
  // A cancelled job (src/jobs/cancel.ts) drops its connection wherever it is: connecting, or waiting on a slow server.
  signal?.addEventListener('abort', () => isCancelled(signal) && client.close(), { once: true });
  // Without a listener an 'error' event after connect would crash the process.
  client.on('error', (err: Error) => p.log.debug({ err, account: account.id }, 'imap connection error'));
  try {
    await client.connect();
  } catch (err) {
    if (alien) throw notImapServer(account);
    throw err;
  }
  if (alien) {
    client.close();
    throw notImapServer(account);
  }
  return client;
}

const notImapServer = (account: MailAccount) =>
  new AppError(502, `imap.host ${account.imap.host}:${account.imap.port} is not an IMAP server (it did not greet as one)`, {
    code: 'mail_not_imap',
    retriable: false,
  });

/**
 * Runs `fn` in one IMAP session and always logs out (or drops the socket). An OAuth2 account
 * whose cached access token is refused gets one retry with a freshly granted token.
 */
export function withImap<T>(p: Platform, account: MailAccount, fn: (client: ImapFlow) => Promise<T>, signal?: AbortSignal): Promise<T> {
  // Traces on: the session, its connection and each command group are spans (server and account id, never a credential).
  const session = { 'server.address': account.imap.host, 'server.port': account.imap.port, 'switchyard.mail.account_id': account.id };
  return inSpan('imap.session', session, () => imapSession(p, account, fn, signal));
}

async function imapSession<T>(p: Platform, account: MailAccount, fn: (client: ImapFlow) => Promise<T>, signal?: AbortSignal): Promise<T> {
  let client: ImapFlow;
  stopIfCancelled(signal);
  const connect = (fresh: boolean) => inSpan('imap.connect', { 'switchyard.mail.auth': account.auth.type }, () => login(p, account, fresh, signal));
  try {
    client = await connect(false);
  } catch (err) {
    if (account.auth.type !== 'oauth2' || !(err as { authenticationFailed?: boolean }).authenticationFailed) throw mailServerError(err, 'IMAP server');
    try {
      client = await connect(true);
    } catch (again) {
      throw mailServerError(again, 'IMAP server');
    }
  }
  try {
    return await fn(client);
  } catch (err) {
    throw mailServerError(err, 'IMAP server');
  } finally {
    await inSpan('imap.logout', {}, () => client.logout()).catch(() => client.close());
  }
}

const JUNK_NAMES = ['junk', 'junk email', 'junk e-mail', 'spam', 'bulk mail', '垃圾邮件', '垃圾郵件', 'courrier indésirable', 'spam-verdacht'];

/** The server's path for INBOX or Junk (Junk by its \Junk flag, in any language); null if it has none. */
export async function mailboxPath(client: ImapFlow, name: MailboxName): Promise<string | null> {
  if (name === 'INBOX') return 'INBOX';
  const list = await client.list();
  const flagged = list.find((m) => m.specialUse === '\\Junk' && m.specialUseSource !== 'name');
  if (flagged) return flagged.path;
  const byName = list.find((m) => m.specialUse === '\\Junk' || JUNK_NAMES.includes(m.name.toLowerCase()));
  return byName?.path ?? null;
}

function address(a: AddressObject | AddressObject[] | undefined): Address[] {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return list.flatMap((o) => o.value.map((v) => ({ name: v.name ?? '', address: (v.address ?? '').toLowerCase() })));
}

/** A parsed message as a row to store. */
export function toNewMessage(uid: number, parsed: ParsedMail, internalDate?: Date | string): NewMessage {
  const from = address(parsed.from)[0];
  const html = typeof parsed.html === 'string' ? parsed.html.slice(0, MAX_STORED_HTML) : null;
  return {
    uid,
    message_id: parsed.messageId ?? null,
    from_name: from?.name || null,
    from_address: from?.address || null,
    to_json: JSON.stringify(address(parsed.to)),
    subject: parsed.subject ?? '',
    date: parsed.date ?? null,
    received_at: internalDate ? new Date(internalDate) : (parsed.date ?? null),
    text: parsed.text ?? null,
    html,
  };
}

export interface FetchFilter {
  limit: number;
  since?: string;
  from?: string;
  subject?: string;
  /** Only UIDs above this one (for "what is new since"). */
  afterUid?: number;
  /** Headers and the first part of the body only. */
  preview?: boolean;
}

export interface Fetched {
  uidValidity: number;
  uidNext: number;
  messages: NewMessage[];
}

/**
 * The newest messages of a folder that pass the filter, newest first. An empty folder is an
 * empty answer (imapflow would reject "1:*" there). IMAP's SINCE is by day, so the exact time
 * is checked here too.
 */
export function fetchMessages(client: ImapFlow, path: string, f: FetchFilter): Promise<Fetched> {
  return inSpan('imap.fetch', { 'switchyard.mail.mailbox': path, 'switchyard.mail.limit': f.limit }, async (span) => {
    const fetched = await fetchFrom(client, path, f);
    span?.set({ 'switchyard.mail.messages': fetched.messages.length });
    return fetched;
  });
}

async function fetchFrom(client: ImapFlow, path: string, f: FetchFilter): Promise<Fetched> {
  const lock = await client.getMailboxLock(path, { readOnly: true });
  const raw: FetchMessageObject[] = [];
  let box: MailboxObject;
  try {
    box = client.mailbox as MailboxObject;
    if (!box.exists) return { uidValidity: Number(box.uidValidity), uidNext: box.uidNext, messages: [] };
    const criteria: Record<string, unknown> = {};
    if (f.since) criteria.since = new Date(f.since);
    if (f.from) criteria.from = f.from;
    if (f.subject) criteria.subject = f.subject;
    if (f.afterUid !== undefined) criteria.uid = `${f.afterUid + 1}:*`;
    const found = Object.keys(criteria).length
      ? (await client.search(criteria, { uid: true })) || []
      : (await client.search({ all: true }, { uid: true })) || [];
    // "n:*" also matches the highest UID when none is >= n: filter again.
    const uids = found
      .filter((u) => f.afterUid === undefined || u > f.afterUid)
      .sort((a, b) => b - a)
      .slice(0, f.limit);
    if (uids.length === 0) return { uidValidity: Number(box.uidValidity), uidNext: box.uidNext, messages: [] };
    const query = { uid: true, internalDate: true, source: { start: 0, maxLength: f.preview ? 16_384 : MAX_PARSED_SOURCE } };
    // Nothing but collecting inside the fetch loop: other commands there would deadlock imapflow.
    for await (const m of client.fetch(uids.join(','), query, { uid: true })) raw.push(m);
  } finally {
    lock.release();
  }
  const since = f.since ? Date.parse(f.since) : undefined;
  const messages: NewMessage[] = [];
  for (const m of raw) {
    if (!m.source) continue;
    const parsed = await simpleParser(m.source, { skipImageLinks: true, skipTextToHtml: true });
    const row = toNewMessage(m.uid, parsed, m.internalDate);
    const when = (row.received_at ?? row.date)?.getTime();
    if (since !== undefined && when !== undefined && when < since) continue;
    messages.push(row);
  }
  messages.sort((a, b) => b.uid - a.uid);
  return { uidValidity: Number(box.uidValidity), uidNext: box.uidNext, messages };
}

/** All UIDs of a folder (for syncing the stored copy), with its UIDVALIDITY. */
export function listUids(client: ImapFlow, path: string): Promise<{ uidValidity: number; uids: number[] }> {
  return inSpan('imap.search', { 'switchyard.mail.mailbox': path }, async () => {
    const lock = await client.getMailboxLock(path, { readOnly: true });
    try {
      const box = client.mailbox as MailboxObject;
      const uids = box.exists ? (await client.search({ all: true }, { uid: true })) || [] : [];
      return { uidValidity: Number(box.uidValidity), uids };
    } finally {
      lock.release();
    }
  });
}

/** Flags every message \Deleted and expunges exactly those (UID EXPUNGE where supported). */
export function deleteAll(client: ImapFlow, path: string): Promise<number> {
  return inSpan('imap.delete', { 'switchyard.mail.mailbox': path }, async () => {
    const lock = await client.getMailboxLock(path);
    try {
      const box = client.mailbox as MailboxObject;
      if (!box.exists) return 0;
      const uids = (await client.search({ all: true }, { uid: true })) || [];
      if (uids.length === 0) return 0;
      await client.messageDelete(uids.join(','), { uid: true });
      return uids.length;
    } finally {
      lock.release();
    }
  });
}

/** The next UID of a folder without selecting it. */
export function uidNextOf(client: ImapFlow, path: string): Promise<number> {
  return inSpan('imap.status', { 'switchyard.mail.mailbox': path }, async () => {
    const s = await client.status(path, { uidNext: true });
    return s ? Number(s.uidNext ?? 0) : 0;
  });
}

/**
 * Waits up to `ms` for something to change in INBOX: IDLE on INBOX wakes at once on new mail;
 * the caller polls other folders between waits.
 */
export function waitForInbox(client: ImapFlow, ms: number): Promise<void> {
  return inSpan('imap.idle', { 'switchyard.mail.wait_ms': ms }, () => idleOnInbox(client, ms));
}

async function idleOnInbox(client: ImapFlow, ms: number): Promise<void> {
  const lock = await client.getMailboxLock('INBOX');
  let onExists: () => void = () => {};
  const woke = new Promise<void>((resolve) => (onExists = resolve));
  client.on('exists', onExists);
  try {
    const idle = client.idle().catch(() => undefined);
    await Promise.race([woke, new Promise((r) => setTimeout(r, ms))]);
    void idle;
  } finally {
    client.off('exists', onExists);
    lock.release();
  }
}
