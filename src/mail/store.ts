// Knex queries of mail: accounts (secrets sealed with SECRET_KEY), stored messages, send records.
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { ownOrBelow, type Viewer } from '../accounts/store.js';
import { ROLE } from '../accounts/schema.js';
import { escapeLike, type Db } from '../db.js';
import { AppError } from '../errors.js';
import type { Secrets } from '../secrets.js';
import type { z } from 'zod';
import type { accountView, Address, CreateAccountInput, MailAuth, MailboxName, MailMessage } from './schema.js';

export interface AccountRow {
  id: number;
  owner_id: number;
  email: string;
  auth_type: 'password' | 'oauth2';
  client_id: string | null;
  secret_enc: string;
  imap_host: string;
  imap_port: number;
  imap_secure: boolean;
  smtp_host: string;
  smtp_port: number;
  smtp_secure: boolean;
  last_error: string | null;
  last_used_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** An account with its secret opened, for the worker that talks to the mail server. */
export interface MailAccount {
  id: number;
  email: string;
  auth: MailAuth;
  imap: { host: string; port: number; secure: boolean };
  smtp: { host: string; port: number; secure: boolean };
}

/** What the API shows: never a password or refresh token. */
export function publicAccount(a: AccountRow): z.infer<typeof accountView> {
  return {
    id: a.id,
    owner_id: a.owner_id,
    email: a.email,
    auth_type: a.auth_type,
    client_id: a.client_id,
    imap: { host: a.imap_host, port: a.imap_port, secure: a.imap_secure },
    smtp: { host: a.smtp_host, port: a.smtp_port, secure: a.smtp_secure },
    last_error: a.last_error,
    last_used_at: a.last_used_at ? new Date(a.last_used_at).toISOString() : null,
    created_at: new Date(a.created_at).toISOString(),
    updated_at: new Date(a.updated_at).toISOString(),
  };
}

function sealAuth(secrets: Secrets, auth: MailAuth): { client_id: string | null; secret_enc: string } {
  return auth.type === 'password'
    ? { client_id: null, secret_enc: secrets.encrypt(JSON.stringify({ password: auth.password })) }
    : { client_id: auth.client_id, secret_enc: secrets.encrypt(JSON.stringify({ refresh_token: auth.refresh_token })) };
}

export function openAccount(secrets: Secrets, a: AccountRow): MailAccount {
  const secret = JSON.parse(secrets.decrypt(a.secret_enc)) as { password?: string; refresh_token?: string };
  const auth: MailAuth =
    a.auth_type === 'password'
      ? { type: 'password', password: secret.password ?? '' }
      : { type: 'oauth2', client_id: a.client_id ?? '', refresh_token: secret.refresh_token ?? '' };
  return {
    id: a.id,
    email: a.email,
    auth,
    imap: { host: a.imap_host, port: a.imap_port, secure: a.imap_secure },
    smtp: { host: a.smtp_host, port: a.smtp_port, secure: a.smtp_secure },
  };
}

/** The advisory lock class of "one user's mail accounts" (the second key is the user's id): "SwMA". */
const ACCOUNTS_LOCK_CLASS = 0x5377_4d41;

/**
 * Adds accounts for their owner, or replaces those with the same address, all or none: when the addresses that are new
 * would take the owner past `maxAccounts`, nothing is written and it throws 429. One writer of a user's accounts at a
 * time (an advisory lock held to the end of the transaction), so concurrent imports cannot each see room and overshoot.
 */
export async function saveAccounts(
  db: Db,
  secrets: Secrets,
  ownerId: number,
  inputs: CreateAccountInput[],
  maxAccounts: number,
): Promise<{ row: AccountRow; created: boolean }[]> {
  if (inputs.length === 0) return [];
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?, ?)', [ACCOUNTS_LOCK_CLASS, ownerId]);
    const emails = [...new Set(inputs.map((i) => i.email))];
    const existing = new Set<string>(await trx('mail_accounts').where({ owner_id: ownerId }).whereIn('email', emails).pluck('email'));
    const adding = emails.filter((e) => !existing.has(e)).length;
    if (adding > 0) {
      const [{ n } = { n: 0 }] = await trx('mail_accounts').where({ owner_id: ownerId }).count<{ n: string | number }[]>({ n: '*' });
      const have = Number(n);
      if (have + adding > maxAccounts) {
        throw new AppError(
          429,
          `Mail account limit reached: you have ${have} and this would add ${adding}, past the ${maxAccounts} one user may keep (MAIL_ACCOUNTS_PER_USER); nothing was saved. Delete accounts you no longer use, or ask an operator`,
          { code: 'mail_accounts_limit' },
        );
      }
    }
    const saved: { row: AccountRow; created: boolean }[] = [];
    for (const input of inputs) saved.push(await upsertAccount(trx, secrets, ownerId, input));
    return saved;
  });
}

/** Adds an account for its owner, or replaces the one with the same address (no cap: see saveAccounts). */
export async function upsertAccount(db: Db, secrets: Secrets, ownerId: number, input: CreateAccountInput): Promise<{ row: AccountRow; created: boolean }> {
  const values = {
    owner_id: ownerId,
    email: input.email,
    auth_type: input.auth.type,
    ...sealAuth(secrets, input.auth),
    imap_host: input.imap.host,
    imap_port: input.imap.port,
    imap_secure: input.imap.secure,
    smtp_host: input.smtp.host,
    smtp_port: input.smtp.port,
    smtp_secure: input.smtp.secure,
    last_error: null,
    updated_at: new Date(),
  };
  const [row] = await db('mail_accounts')
    .insert(values)
    .onConflict(['owner_id', 'email'])
    .merge()
    .returning(['*', db.raw('(xmax = 0) as inserted')]);
  const { inserted, ...rest } = row as AccountRow & { inserted: boolean };
  return { row: rest, created: inserted };
}

/** Saves a refresh token Microsoft rotated (it answers every grant with a new one). */
export async function saveRefreshToken(db: Db, secrets: Secrets, accountId: number, clientId: string, refreshToken: string): Promise<void> {
  await db('mail_accounts')
    .where({ id: accountId })
    .update({ ...sealAuth(secrets, { type: 'oauth2', client_id: clientId, refresh_token: refreshToken }), updated_at: new Date() });
}

export async function recordUse(db: Db, accountId: number, error: string | null): Promise<void> {
  await db('mail_accounts')
    .where({ id: accountId })
    .update({ last_used_at: new Date(), last_error: error?.slice(0, 1000) ?? null });
}

export const getAccountRow = (db: Db, id: number) => db<AccountRow>('mail_accounts').where({ id }).first();

/** Who is asking: accounts follow the role rule. */
export type { Viewer };

/** Own accounts; for admins also those of users below their role. */
function visibleTo(db: Db, q: Knex.QueryBuilder, viewer: Viewer): Knex.QueryBuilder {
  if (viewer.role < ROLE.admin) return q.where({ owner_id: viewer.id });
  return q.where(ownOrBelow(db, 'owner_id', viewer));
}

/** The caller's account for an address, or (admins) one of a user below them; their own first. */
export async function findAccount(db: Db, email: string, viewer: Viewer): Promise<AccountRow | undefined> {
  const q = db<AccountRow>('mail_accounts').where({ email: email.toLowerCase() });
  return visibleTo(db, q, viewer).orderByRaw('(owner_id = ?) desc, id asc', [viewer.id]).first();
}

export async function listAccounts(db: Db, viewer: Viewer, page: { offset: number; limit: number }): Promise<{ rows: AccountRow[]; total: number }> {
  const [rows, counted] = await Promise.all([
    visibleTo(db, db<AccountRow>('mail_accounts').orderBy('id'), viewer).offset(page.offset).limit(page.limit),
    visibleTo(db, db('mail_accounts'), viewer).count<{ n: string }[]>({ n: '*' }),
  ]);
  return { rows, total: Number(counted[0]?.n ?? 0) };
}

export async function deleteAccount(db: Db, id: number): Promise<void> {
  await db('mail_accounts').where({ id }).delete();
}

// ---- messages --------------------------------------------------------------------------------

export interface MessageRow {
  id: string;
  account_id: number;
  mailbox: MailboxName;
  uidvalidity: number;
  uid: number;
  message_id: string | null;
  from_name: string | null;
  from_address: string | null;
  to_json: string;
  subject: string | null;
  date: Date | null;
  received_at: Date | null;
  text: string | null;
  html: string | null;
}

export type NewMessage = Omit<MessageRow, 'id' | 'account_id' | 'mailbox' | 'uidvalidity'>;

export function toMessage(r: MessageRow): MailMessage {
  const from: Address | null = r.from_address || r.from_name ? { name: r.from_name ?? '', address: r.from_address ?? '' } : null;
  return {
    id: r.id,
    uid: Number(r.uid),
    mailbox: r.mailbox,
    messageId: r.message_id,
    from,
    to: JSON.parse(r.to_json) as Address[],
    subject: r.subject ?? '',
    date: r.date ? new Date(r.date).toISOString() : r.received_at ? new Date(r.received_at).toISOString() : null,
    text: r.text,
    html: r.html,
    send: from?.address || null,
  };
}

/**
 * A message's id: derived from where it lives (account, folder, UIDVALIDITY, UID), so every read
 * mode — live, fast, preview — gives the same message the same id, stored or not.
 */
export function messageKey(accountId: number, mailbox: MailboxName, uidvalidity: number, uid: number): string {
  const h = crypto.createHash('sha256').update(`${accountId}/${mailbox}/${uidvalidity}/${uid}`).digest('hex');
  // Shaped as a UUID (version 8, "custom") so it fits the uuid column.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Stores fetched messages once per (account, mailbox, UIDVALIDITY, UID) and returns the stored
 * rows (existing ones keep their id), in the order given.
 */
export async function storeMessages(db: Db, accountId: number, mailbox: MailboxName, uidvalidity: number, messages: NewMessage[]): Promise<MessageRow[]> {
  if (messages.length === 0) return [];
  const rows = messages.map((m) => ({ id: messageKey(accountId, mailbox, uidvalidity, m.uid), account_id: accountId, mailbox, uidvalidity, ...m }));
  await db('mail_messages').insert(rows).onConflict(['account_id', 'mailbox', 'uidvalidity', 'uid']).ignore();
  const stored = await db<MessageRow>('mail_messages')
    .where({ account_id: accountId, mailbox, uidvalidity })
    .whereIn(
      'uid',
      messages.map((m) => m.uid),
    );
  const byUid = new Map(stored.map((r) => [Number(r.uid), r]));
  return messages.map((m) => byUid.get(Number(m.uid))!).filter(Boolean);
}

export async function storedUids(db: Db, accountId: number, mailbox: MailboxName, uidvalidity: number): Promise<number[]> {
  const rows = await db('mail_messages').where({ account_id: accountId, mailbox, uidvalidity }).select<{ uid: number }[]>('uid');
  return rows.map((r) => Number(r.uid));
}

/** Forgets stored messages the server no longer has (deleted, or from an older UIDVALIDITY). */
export async function dropVanished(db: Db, accountId: number, mailbox: MailboxName, uidvalidity: number, keep: number[]): Promise<void> {
  const q = db('mail_messages').where({ account_id: accountId, mailbox });
  if (keep.length === 0) await q.delete();
  // One array parameter, not one per UID: a mailbox can hold more UIDs than a statement has parameters.
  else await q.andWhere((w) => w.whereNot({ uidvalidity }).orWhereRaw('not (uid = any(?::bigint[]))', [keep])).delete();
}

export async function queryStored(
  db: Db,
  accountId: number,
  mailbox: MailboxName,
  uidvalidity: number,
  f: { since?: string; from?: string; subject?: string; limit: number },
): Promise<MessageRow[]> {
  const q = db<MessageRow>('mail_messages').where({ account_id: accountId, mailbox, uidvalidity });
  if (f.since) q.andWhereRaw('coalesce(received_at, date) >= ?', [f.since]);
  if (f.from) {
    const like = `%${escapeLike(f.from)}%`;
    q.andWhere((w) => w.whereILike('from_address', like).orWhereILike('from_name', like));
  }
  if (f.subject) q.andWhereILike('subject', `%${escapeLike(f.subject)}%`);
  return q.orderBy([{ column: 'uid', order: 'desc' }]).limit(f.limit);
}

// ---- sends -----------------------------------------------------------------------------------

export interface SendRow {
  job_id: string;
  status: 'sending' | 'sent';
  message_id: string;
  result_json: string | null;
}

/** The send record of a job, created on its first attempt: a retry finds it and does not send twice. */
export async function beginSend(db: Db, jobId: string, accountId: number, messageId: string): Promise<SendRow> {
  await db('mail_sends').insert({ job_id: jobId, account_id: accountId, status: 'sending', message_id: messageId }).onConflict('job_id').ignore();
  return (await db<SendRow>('mail_sends').where({ job_id: jobId }).first())!;
}

export async function finishSend(db: Db, jobId: string, result: unknown): Promise<void> {
  await db('mail_sends')
    .where({ job_id: jobId })
    .update({ status: 'sent', result_json: JSON.stringify(result), sent_at: new Date() });
}
