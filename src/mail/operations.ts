// What the mail jobs do: read (live, fast, preview), purge, send, find a code; one at a time per mailbox.
import type { z } from 'zod';
import type { Platform } from '../platform.js';
import { getUser } from '../accounts/store.js';
import { ROLE, USER_STATUS } from '../accounts/schema.js';
import { AppError, forbidden, toAppError } from '../errors.js';
import { stopIfCancelled } from '../jobs/cancel.js';
import { extractCode, extractCodeAsync } from './codes.js';
import { deleteAll, fetchMessages, listUids, mailboxPath, uidNextOf, waitForInbox, withImap } from './imap.js';
import { withMailboxLock } from './lock.js';
import type { codePayload, fetchPayload, purgePayload, sendPayload } from './schema.js';
import type { CodeResult, FetchResult, MailboxName, MailMessage, PurgeResult, SendResult } from './schema.js';
import { sendMail } from './smtp.js';
import * as store from './store.js';

/** How long a job waits for another job on the same mailbox before giving up (503, retried). */
const LOCK_WAIT_MS = 150_000;
/** The newest messages looked at for a code, per folder. */
const CODE_SCAN = 20;
/** New messages fetched per fast read at most. */
const FAST_FETCH_MAX = 500;

async function loadAccount(p: Platform, accountId: number, owner: number | null): Promise<store.MailAccount> {
  const row = await store.getAccountRow(p.db, accountId);
  if (!row) throw new AppError(404, 'The mail account was deleted', { code: 'unknown_account', retriable: false });
  await checkMayUse(p, owner, row.owner_id);
  return store.openAccount(p.secrets, row);
}

const notYours = () => forbidden("The job's owner may not use this mail account", { code: 'account_not_yours', retriable: false });

/**
 * The role rule again, with today's roles, before a job touches an account: its owner's own accounts, and for an admin
 * those of users below them. The API checked it when it made the job; this holds if that check ever misses.
 */
async function checkMayUse(p: Platform, owner: number | null, accountOwner: number): Promise<void> {
  if (owner === null) throw notYours();
  const user = await getUser(p.db, owner);
  if (!user || user.status !== USER_STATUS.enabled)
    throw forbidden('The user who submitted this job is disabled or gone', { code: 'user_disabled', retriable: false });
  if (owner === accountOwner || user.role >= ROLE.root) return;
  if (user.role < ROLE.admin) throw notYours();
  const holder = await getUser(p.db, accountOwner);
  if (holder && holder.role >= user.role) throw notYours();
}

/** Runs an operation on an account, under its lock, noting success or the error on the account. */
async function onAccount<T>(
  p: Platform,
  owner: number | null,
  accountId: number,
  lockWaitMs: number,
  fn: (account: store.MailAccount) => Promise<T>,
): Promise<T> {
  const account = await loadAccount(p, accountId, owner);
  try {
    const result = await withMailboxLock(p, accountId, lockWaitMs, () => fn(account));
    await store.recordUse(p.db, accountId, null);
    return result;
  } catch (err) {
    const e = toAppError(err);
    if (e.code !== 'mailbox_busy') await store.recordUse(p.db, accountId, e.message).catch(() => {});
    throw e;
  }
}

function snippet(text: string | null): string {
  return (text ?? '').replace(/\s+/g, ' ').trim().slice(0, 200);
}

export async function fetchOp(p: Platform, owner: number | null, job: z.output<typeof fetchPayload>, signal?: AbortSignal): Promise<FetchResult> {
  const { accountId, mailbox } = job;
  let email = '';
  const messages = await onAccount(p, owner, accountId, LOCK_WAIT_MS, (account) => {
    email = account.email;
    return readMessages(p, account, job, signal);
  });
  return job.newest ? { email, mailbox, message: messages[0] ?? null } : { email, mailbox, messages };
}

/** Read only: a cancel (signal) closes the IMAP connection wherever it is, and nothing is stored after it. */
async function readMessages(p: Platform, account: store.MailAccount, job: z.output<typeof fetchPayload>, signal?: AbortSignal): Promise<MailMessage[]> {
  const { accountId, mailbox } = job;
  return withImap(
    p,
    account,
    async (client) => {
      const path = await mailboxPath(client, mailbox);
      stopIfCancelled(signal);
      if (!path) return [];
      const filter = { limit: job.limit, since: job.since, from: job.from, subject: job.subject };

      if (job.mode === 'preview') {
        const f = await fetchMessages(client, path, { ...filter, preview: true });
        const messages = f.messages.map((m): MailMessage => {
          const row = { ...m, id: store.messageKey(accountId, mailbox, f.uidValidity, m.uid), account_id: accountId, mailbox, uidvalidity: f.uidValidity };
          return { ...store.toMessage(row), text: null, html: null, snippet: snippet(m.text) };
        });
        return messages;
      }

      if (job.mode === 'fast') {
        // Bring the stored copy up to date (drop what vanished, add what is new), then answer from it.
        const { uidValidity, uids } = await listUids(client, path);
        await store.dropVanished(p.db, accountId, mailbox, uidValidity, uids);
        const stored = await store.storedUids(p.db, accountId, mailbox, uidValidity);
        const newest = stored.reduce((a, b) => Math.max(a, b), 0);
        const f = stored.length ? await fetchMessages(client, path, { limit: FAST_FETCH_MAX, afterUid: newest }) : await fetchMessages(client, path, filter);
        stopIfCancelled(signal);
        await store.storeMessages(p.db, accountId, mailbox, f.uidValidity, f.messages);
        const rows = await store.queryStored(p.db, accountId, mailbox, uidValidity, filter);
        return rows.map(store.toMessage);
      }

      const f = await fetchMessages(client, path, filter);
      stopIfCancelled(signal);
      const rows = await store.storeMessages(p.db, accountId, mailbox, f.uidValidity, f.messages);
      return rows.map(store.toMessage);
    },
    signal,
  );
}

export async function purgeOp(p: Platform, owner: number | null, job: z.output<typeof purgePayload>): Promise<PurgeResult> {
  const { accountId, mailbox } = job;
  return onAccount(p, owner, accountId, LOCK_WAIT_MS, (account) =>
    withImap(p, account, async (client) => {
      const path = await mailboxPath(client, mailbox);
      if (!path) return { email: account.email, mailbox, deleted: 0 };
      const deleted = await deleteAll(client, path);
      await store.dropVanished(p.db, accountId, mailbox, 0, []);
      return { email: account.email, mailbox, deleted };
    }),
  );
}

/**
 * Sends at most once per job: the send is recorded before it goes out and its result after, so
 * a retry after success answers from the record. A worker that dies mid-send leaves a 'sending'
 * record; the retry sends again with the same Message-ID (at least once, recognisable).
 */
export async function sendOp(p: Platform, owner: number | null, jobId: string, job: z.output<typeof sendPayload>, signal?: AbortSignal): Promise<SendResult> {
  const account = await loadAccount(p, job.accountId, owner);
  const domain = account.email.split('@')[1] ?? 'switchyard.local';
  const record = await store.beginSend(p.db, jobId, account.id, `<${jobId}@${domain}>`);
  if (record.status === 'sent' && record.result_json) return JSON.parse(record.result_json) as SendResult;
  return onAccount(p, owner, job.accountId, LOCK_WAIT_MS, async (acct) => {
    // The last safe point: a send once started is never cut half way.
    stopIfCancelled(signal);
    const result = await sendMail(p, acct, {
      to: job.to,
      cc: job.cc,
      bcc: job.bcc,
      subject: job.subject,
      text: job.text,
      html: job.html,
      messageId: record.message_id,
    });
    await store.finishSend(p.db, jobId, result);
    return result;
  });
}

/** Runs the code extractor once, so its regular expressions are compiled before the first job (see warmUpMail). */
export function warmUp(): void {
  extractCode({ subject: 'Your code', text: 'Your verification code is 482913. Order 998877. 验证码 7351，5分钟内有效。', html: '<p>Code <b>1234</b></p>' });
}

/**
 * The code of the newest matching message in INBOX and Junk. With `wait`, keeps watching — IDLE
 * on INBOX, a look at Junk every two seconds — until a new message with a code arrives.
 */
export async function codeOp(p: Platform, owner: number | null, job: z.output<typeof codePayload>, signal?: AbortSignal): Promise<CodeResult> {
  let email = '';
  const found = await onAccount(p, owner, job.accountId, LOCK_WAIT_MS, (account) => {
    email = account.email;
    return findCode(p, account, job, signal);
  });
  // None found is what the call answers (404), not a failure of the account: outside onAccount, so last_error keeps its meaning.
  if (!found) throw new AppError(404, 'No verification code found', { code: 'no_code', retriable: false });
  return { email, code: found.code, message: found.message, source: found.source, keyword: found.keyword };
}

type Found = Omit<CodeResult, 'email'> & { when: number };

async function findCode(p: Platform, account: store.MailAccount, job: z.output<typeof codePayload>, signal?: AbortSignal): Promise<Found | null> {
  const { accountId } = job;
  return withImap(
    p,
    account,
    async (client) => {
      const folders: { mailbox: MailboxName; path: string }[] = [{ mailbox: 'INBOX', path: 'INBOX' }];
      const junk = await mailboxPath(client, 'Junk');
      if (junk) folders.push({ mailbox: 'Junk', path: junk });
      // Read where each folder ends before looking, so nothing arriving meanwhile is missed.
      const next = new Map<string, number>();
      for (const f of folders) next.set(f.path, await uidNextOf(client, f.path));

      const scan = async (mailbox: MailboxName, path: string, afterUid?: number): Promise<Found | null> => {
        const f = await fetchMessages(client, path, { limit: CODE_SCAN, since: job.since, from: job.from, subject: job.subject, afterUid });
        const rows = await store.storeMessages(p.db, accountId, mailbox, f.uidValidity, f.messages);
        for (const r of rows.map(store.toMessage)) {
          const found = await extractCodeAsync({ subject: r.subject, text: r.text, html: r.html });
          if (found)
            return {
              code: found.code,
              message: { id: r.id, mailbox, from: r.from, subject: r.subject, date: r.date },
              source: found.source,
              keyword: found.keyword,
              when: r.date ? Date.parse(r.date) : 0,
            };
        }
        return null;
      };

      let best: Found | null = null;
      for (const f of folders) {
        const found = await scan(f.mailbox, f.path);
        if (found && (!best || found.when > best.when)) best = found;
      }
      if (best) return best;

      const deadline = Date.now() + job.wait * 1000;
      while (Date.now() < deadline) {
        stopIfCancelled(signal);
        await waitForInbox(client, Math.min(2_000, deadline - Date.now()));
        for (const f of folders) {
          const uidNext = await uidNextOf(client, f.path);
          if (uidNext <= next.get(f.path)!) continue;
          const found = await scan(f.mailbox, f.path, next.get(f.path)! - 1);
          next.set(f.path, uidNext);
          if (found) return found;
        }
      }
      return null;
    },
    signal,
  );
}
