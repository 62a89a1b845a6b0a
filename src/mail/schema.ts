// The mail area's request rules (msOauth2api's field names kept), job payloads, and the message object.
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { parse } from '../validate.js';

export const OUTLOOK_IMAP = { host: 'outlook.office365.com', port: 993, secure: true } as const;
export const OUTLOOK_SMTP = { host: 'smtp.office365.com', port: 587, secure: false } as const;

export const emailAddress = z
  .string({ error: 'must be an email address' })
  .trim()
  .max(254, 'must be at most 254 characters')
  .pipe(z.email('must be an email address'))
  .transform((v) => v.toLowerCase());

const server = (defaults: { host: string; port: number; secure: boolean }) =>
  z
    .object({
      host: z
        .string({ error: 'must be a host name' })
        .trim()
        .min(1)
        .max(253)
        .regex(/^[A-Za-z0-9.:[\]-]+$/, 'must be a host name')
        .default(defaults.host),
      port: z.coerce
        .number({ error: 'must be a port number' })
        .int()
        .min(1, 'must be a port number')
        .max(65535, 'must be a port number')
        .default(defaults.port),
      secure: z.boolean({ error: 'must be true (TLS) or false (plain, or STARTTLS when offered)' }).default(defaults.secure),
    })
    .default(defaults);

export const passwordAuth = z.object({ type: z.literal('password'), password: z.string({ error: 'is required' }).min(1, 'is required').max(1000) });
export const oauthAuth = z.object({
  type: z.literal('oauth2'),
  client_id: z.string({ error: 'is required' }).trim().min(1, 'is required').max(200),
  refresh_token: z.string({ error: 'is required' }).trim().min(1, 'is required').max(20_000),
});
const auth = z.discriminatedUnion('type', [passwordAuth, oauthAuth], {
  error: 'must be {type:"password", password} or {type:"oauth2", client_id, refresh_token}',
});
export type MailAuth = z.output<typeof auth>;

export const createAccountBody = z.object({
  email: emailAddress,
  auth,
  imap: server(OUTLOOK_IMAP),
  smtp: server(OUTLOOK_SMTP),
});
export type CreateAccountInput = z.output<typeof createAccountBody>;

/** Lines in one import, whichever form they come in (each is an upsert: ~1 ms). */
export const MAX_IMPORT_LINES = 10_000;

export const importBody = z.union(
  [
    z.string().max(5_000_000),
    z.object({
      lines: z.union([z.string().max(5_000_000), z.array(z.string().max(50_000)).max(MAX_IMPORT_LINES)], {
        error: `must be a string or an array of at most ${MAX_IMPORT_LINES} lines`,
      }),
      imap: server(OUTLOOK_IMAP).optional(),
      smtp: server(OUTLOOK_SMTP).optional(),
    }),
  ],
  { error: `send the lines as text/plain, or as JSON {lines}: at most ${MAX_IMPORT_LINES} lines, 5,000,000 characters` },
);

/** What an import brings: its lines, and (JSON only) the servers of every account it makes. */
export interface ImportInput {
  lines: string[];
  servers: { imap?: z.output<typeof createAccountBody>['imap']; smtp?: z.output<typeof createAccountBody>['smtp'] };
}

/**
 * POST /api/mail/accounts/import's body (src/mail/routes.ts declares it): text/plain, or JSON {lines, imap?, smtp?}
 * (lines a string or an array), an absent body read as ''; at most MAX_IMPORT_LINES lines, else 400 naming `lines`.
 */
export function parseImportBody(raw: unknown): ImportInput {
  const body = parse(importBody, raw ?? '');
  const text = typeof body === 'string' ? body : body.lines;
  const lines = Array.isArray(text) ? text : text.split(/\r?\n/);
  if (lines.length > MAX_IMPORT_LINES)
    throw badRequest(`lines: at most ${MAX_IMPORT_LINES} lines per import (this has ${lines.length}); send the rest in another request`, {
      param: 'lines',
    });
  return { lines, servers: typeof body === 'string' ? {} : { imap: body.imap, smtp: body.smtp } };
}

/** GET /api/mail/accounts: pages of up to 1,000 accounts (by default the first 1,000). */
export const accountsPage = z.object({
  p: z.coerce.number({ error: 'must be a whole number from 0' }).int('must be a whole number from 0').min(0, 'must be a whole number from 0').default(0),
  page_size: z.coerce.number({ error: 'must be 1-1000' }).int('must be 1-1000').min(1, 'must be 1-1000').max(1_000, 'must be 1-1000').default(1_000),
});

/** INBOX, or the junk folder whatever the server calls it (found by its \Junk special-use flag). */
export const mailboxName = z
  .string({ error: 'must be INBOX or Junk' })
  .trim()
  .transform((v, ctx) => {
    const k = v.toLowerCase().replace(/[\s_-]/g, '');
    if (k === 'inbox') return 'INBOX' as const;
    if (['junk', 'junkemail', 'spam'].includes(k)) return 'Junk' as const;
    ctx.addIssue({ code: 'custom', message: 'must be INBOX or Junk' });
    return z.NEVER;
  });
export type MailboxName = 'INBOX' | 'Junk';

const optionalDate = z
  .union([z.string(), z.number()], { error: 'must be an ISO 8601 date or Unix milliseconds' })
  .transform((v, ctx) => {
    const d = new Date(typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date or Unix milliseconds' });
      return z.NEVER;
    }
    return d.toISOString();
  })
  .optional();

const filterText = z.string({ error: 'must be a string' }).trim().max(500, 'must be at most 500 characters').optional();

/** The fields every operation takes, msOauth2api's included (client_id and refresh_token inline). */
const common = {
  email: emailAddress,
  client_id: z.string().trim().max(200).optional(),
  refresh_token: z.string().trim().max(20_000).optional(),
  response_type: z.enum(['json', 'html'], { error: 'must be json or html' }).default('json'),
};

const limit = (def: number, max: number) =>
  z.coerce
    .number({ error: `must be an integer from 1 to ${max}` })
    .int(`must be an integer from 1 to ${max}`)
    .min(1, `must be an integer from 1 to ${max}`)
    .max(max, `must be an integer from 1 to ${max}`)
    .default(def);

export const mailNewParams = z.object({ ...common, mailbox: mailboxName.default('INBOX') });
export const mailAllParams = z.object({ ...common, mailbox: mailboxName.default('INBOX'), limit: limit(50, 500), since: optionalDate });
export const vendorParams = z.object({
  ...common,
  mailbox: mailboxName.default('INBOX'),
  from: filterText,
  subject: filterText,
  since: optionalDate,
  limit: limit(50, 500),
});
export const purgeParams = z.object(common);
export const codeParams = z.object({
  ...common,
  from: filterText,
  subject: filterText,
  since: optionalDate,
  wait: z.coerce
    .number({ error: 'must be a number of seconds from 0 to 120' })
    .min(0, 'must be a number of seconds from 0 to 120')
    .max(120, 'must be a number of seconds from 0 to 120')
    .default(0),
});

const recipients = z.union([z.string(), z.array(z.string())], { error: 'must be an email address or a list of them' }).transform((v, ctx) => {
  const list = (Array.isArray(v) ? v : v.split(/[,;]/)).map((s) => s.trim()).filter(Boolean);
  for (const a of list) {
    if (!z.email().safeParse(a.replace(/^.*<([^>]+)>\s*$/, '$1')).success) {
      ctx.addIssue({ code: 'custom', message: `"${a}" is not an email address` });
      return z.NEVER;
    }
  }
  if (list.length > 100) {
    ctx.addIssue({ code: 'custom', message: 'at most 100 addresses' });
    return z.NEVER;
  }
  return list;
});

export const sendParams = z
  .object({
    ...common,
    to: recipients,
    cc: recipients.optional(),
    bcc: recipients.optional(),
    subject: z.string({ error: 'is required' }).max(998, 'must be at most 998 characters'),
    text: z.string().max(5_000_000).optional(),
    html: z.string().max(5_000_000).optional(),
  })
  .refine((v) => (v.text ?? '') !== '' || (v.html ?? '') !== '', { message: 'text or html is required', path: ['text'] })
  .refine((v) => v.to.length > 0, { message: 'at least one recipient is required', path: ['to'] });

// ---- jobs -----------------------------------------------------------------------------------

const account = { accountId: z.number().int().positive() };
export const fetchPayload = z.object({
  ...account,
  mailbox: z.enum(['INBOX', 'Junk']),
  mode: z.enum(['live', 'fast', 'preview']),
  limit: z.number().int().min(1).max(500),
  /** mail-new: the answer is the newest message alone ({message}), not a list ({messages}). */
  newest: z.boolean().default(false),
  since: z.string().optional(),
  from: z.string().optional(),
  subject: z.string().optional(),
});
export const purgePayload = z.object({ ...account, mailbox: z.enum(['INBOX', 'Junk']) });
export const sendPayload = z.object({
  ...account,
  to: z.array(z.string()).min(1),
  cc: z.array(z.string()).default([]),
  bcc: z.array(z.string()).default([]),
  subject: z.string(),
  text: z.string().optional(),
  html: z.string().optional(),
});
export const codePayload = z.object({
  ...account,
  from: z.string().optional(),
  subject: z.string().optional(),
  since: z.string().optional(),
  wait: z.number().min(0).max(120),
});

export const addressView = z.object({ name: z.string(), address: z.string() });
export type Address = z.infer<typeof addressView>;

/** The message object of every read endpoint. `send` is the sender's address (msOauth2api's field). */
export const messageView = z.object({
  id: z.string(),
  uid: z.number(),
  mailbox: z.enum(['INBOX', 'Junk']),
  messageId: z.string().nullable(),
  from: addressView.nullable(),
  to: z.array(addressView),
  subject: z.string(),
  date: z.string().nullable(),
  text: z.string().nullable(),
  html: z.string().nullable(),
  send: z.string().nullable(),
  /** Only in previews: the first 200 characters of the text. */
  snippet: z.string().optional(),
});
export type MailMessage = z.infer<typeof messageView>;

/** A mail account as the API shows it: never its password or refresh token. */
export const accountView = z.object({
  id: z.number(),
  owner_id: z.number(),
  email: z.string(),
  auth_type: z.enum(['password', 'oauth2']),
  client_id: z.string().nullable(),
  imap: z.object({ host: z.string(), port: z.number(), secure: z.boolean() }),
  smtp: z.object({ host: z.string(), port: z.number(), secure: z.boolean() }),
  last_error: z.string().nullable(),
  last_used_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

// A job's result is the answer of the call that made it (what GET /api/jobs/{id} shows after a 202 is what the call
// would have answered).
/** mail-all, vendor-email and its fast and preview modes. */
export interface MessagesAnswer {
  email: string;
  mailbox: MailboxName;
  messages: MailMessage[];
}
/** mail-new: the newest message, or null for an empty folder. */
export interface NewestAnswer {
  email: string;
  mailbox: MailboxName;
  message: MailMessage | null;
}
export type FetchResult = MessagesAnswer | NewestAnswer;
/** The messages of either answer. */
export const messagesOf = (r: FetchResult): MailMessage[] => ('messages' in r ? r.messages : r.message ? [r.message] : []);
export interface PurgeResult {
  email: string;
  mailbox: MailboxName;
  deleted: number;
}
export const sendResultView = z.object({ messageId: z.string(), accepted: z.array(z.string()), rejected: z.array(z.string()) });
export type SendResult = z.infer<typeof sendResultView>;

export const codeMessageView = z.object({
  id: z.string(),
  mailbox: z.enum(['INBOX', 'Junk']),
  from: addressView.nullable(),
  subject: z.string(),
  date: z.string().nullable(),
});
/** Where the code was read: `source` is the part (`subject`, `text` or `html`), `keyword` the word that marked it. */
export const codeFoundView = z.object({ source: z.enum(['subject', 'text', 'html']), keyword: z.string() });
/** extract-code's answer (none found is the job failing with 404 no_code, as the call answers). */
export interface CodeResult extends z.infer<typeof codeFoundView> {
  email: string;
  code: string;
  message: z.infer<typeof codeMessageView>;
}
