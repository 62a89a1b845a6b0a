// HTTP routes of mail: accounts and msOauth2api's operations (GET or POST), each run as a mail job.
// Each endpoint is declared (src/http/route.ts): auth and parsing are enforced before its handler runs. The accounts'
// work is in accounts-service.ts; an operation's is its job's (operations.ts, in a worker).
import type { Context } from 'koa';
import { z } from 'zod';
import type { Principal } from '../accounts/auth.js';
import type { Platform } from '../platform.js';
import { notFound } from '../errors.js';
import { runJobForRequest } from '../http/jobs.js';
import { ApiRouter, type Declared, endpoint, idempotent, ok, plainError, type RouteSpec } from '../http/route.js';
import * as accounts from './accounts-service.js';
import { MAIL_PAGE_CSP, renderMessagesPage } from './html.js';
import * as s from './schema.js';
import type { AccountRow } from './store.js';

// ---- accounts --------------------------------------------------------------------------------

const create = endpoint(
  {
    method: 'post',
    path: '/api/mail/accounts',
    summary: 'Add (or replace) a mail account',
    auth: 'user',
    body: s.createAccountBody,
    idempotent: true,
    responses: { 201: ok('created', s.accountView), 200: ok('replaced', s.accountView), 400: ok('invalid', plainError) },
  },
  async (ctx, { p, principal, body }) => {
    const { account, created } = await accounts.createAccount(p, accounts.viewerOf(principal.user), body);
    ctx.status = created ? 201 : 200;
    return account;
  },
);

const list = endpoint(
  {
    method: 'get',
    path: '/api/mail/accounts',
    summary: 'Your accounts (admins: also those of users below them), never their secrets; pages of up to 1,000 (p, page_size), X-Total-Count',
    auth: 'user',
    query: s.accountsPage,
    responses: { 200: ok('accounts; X-Total-Count', z.array(s.accountView)), 400: ok('invalid page', plainError) },
  },
  async (ctx, { p, principal, query }) => {
    const page = await accounts.listAccounts(p, accounts.viewerOf(principal.user), query);
    ctx.set('X-Total-Count', String(page.total));
    return page.accounts;
  },
);

const remove = endpoint(
  {
    method: 'delete',
    path: '/api/mail/accounts/:email',
    summary: 'Delete an account',
    auth: 'user',
    pathParams: { email: s.emailAddress },
    responses: { 200: '{success:true}', 404: ok('unknown account', plainError) },
  },
  async (_ctx, { p, principal, path }) => {
    await accounts.deleteAccount(p, accounts.viewerOf(principal.user), path.email);
    return { success: true };
  },
);

/** Lines `email----password----client_id----refresh_token` (the last two may come swapped). */
const importLines = endpoint(
  {
    method: 'post',
    path: '/api/mail/accounts/import',
    summary: 'Import email----password----client_id----refresh_token lines',
    auth: 'user',
    body: 'text',
    parseBody: s.parseImportBody,
    idempotent: true,
    responses: { 200: 'per-line outcome' },
  },
  (_ctx, { p, principal, body }) => accounts.importAccounts(p, accounts.viewerOf(principal.user), body),
);

// ---- operations ------------------------------------------------------------------------------

/** The parameters every operation takes (msOauth2api's included). */
type OperationParams = accounts.AccountRequest & { response_type: 'json' | 'html' };
/** What an operation's handler is handed: the caller, its parameters, and the account they name. */
interface Operation<P> {
  p: Platform;
  principal: Principal;
  req: P;
  account: AccountRow;
}

/**
 * msOauth2api's operations answer GET and POST alike, as jobs, with the same errors. The caller is authenticated (their
 * protection password sent as `password` is a credential too), then the parameters parsed, then the account resolved.
 */
function operation<P extends z.ZodObject & z.ZodType<OperationParams>>(
  path: string,
  summary: string,
  params: P,
  answer: z.ZodType,
  run: (ctx: Context, op: Operation<z.output<P>>) => Promise<unknown>,
): Declared {
  const spec = {
    method: ['get', 'post'],
    path,
    summary,
    auth: 'user',
    job: true,
    params: params as z.ZodObject,
    paramCredential: 'password',
    // Every operation acts on a mailbox (or stores inline credentials): GETs included, same-origin for cookies.
    changesState: true,
    responses: {
      200: ok('answer', answer),
      400: ok('bad parameters', plainError),
      404: ok('unknown account (or no code found)', plainError),
      502: ok('the mail server or Microsoft refused (reason given)', plainError),
      504: ok('the mail server timed out', plainError),
    },
  } satisfies RouteSpec;
  return endpoint(spec, async (ctx, { p, principal, params: parsed }) => {
    const req = parsed as z.output<P>;
    const account = await accounts.accountFor(p, accounts.viewerOf(principal.user), req);
    return run(ctx, { p, principal, req, account });
  });
}

/** The job's answer as JSON, or (response_type=html) as a readable page. */
function answerMessages(ctx: Context, responseType: 'json' | 'html', answer: s.FetchResult) {
  if (responseType !== 'html') return answer;
  ctx.set('Content-Security-Policy', MAIL_PAGE_CSP);
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = renderMessagesPage(answer.email, answer.mailbox, s.messagesOf(answer));
  return undefined;
}

type ReadParams = typeof s.mailNewParams | typeof s.mailAllParams | typeof s.vendorParams;

/** A read of messages (mail-new's `single`: the newest alone), answered as JSON or as a page. */
const read =
  (mode: 'live' | 'fast' | 'preview', single: boolean) =>
  async (ctx: Context, { p, principal, req, account }: Operation<z.output<ReadParams>>) => {
    const r = req as z.output<typeof s.vendorParams>;
    const payload = {
      accountId: account.id,
      mailbox: r.mailbox,
      mode,
      limit: single ? 1 : r.limit,
      newest: single,
      since: r.since,
      from: r.from,
      subject: r.subject,
    };
    const result = await runJobForRequest(ctx, p, 'mail.fetch', payload, principal);
    return result && answerMessages(ctx, r.response_type, result);
  };

const messages = z.object({ email: z.string(), mailbox: z.string(), messages: z.array(s.messageView) });
const newest = z.object({ email: z.string(), mailbox: z.string(), message: s.messageView.nullable() });
const purged = z.object({ email: z.string(), mailbox: z.string(), deleted: z.number() });

const mailNew = operation('/api/mail-new', 'The newest message of INBOX or Junk (message: null when empty)', s.mailNewParams, newest, read('live', true));
const mailAll = operation('/api/mail-all', 'Messages, newest first', s.mailAllParams, messages, read('live', false));
const vendor = operation('/api/vendor-email', 'Messages matching from/subject/since, read from the server now', s.vendorParams, messages, read('live', false));
const fast = 'The same, from the stored copy after fetching only newer UIDs';
const vendorFast = operation('/api/vendor-email/fast', fast, s.vendorParams, messages, read('fast', false));
const vendorPreview = operation('/api/vendor-email/preview', 'Headers and a 200-character snippet', s.vendorParams, messages, read('preview', false));

const purge =
  (mailbox: s.MailboxName) =>
  (ctx: Context, { p, principal, account }: Operation<unknown>) =>
    runJobForRequest(ctx, p, 'mail.purge', { accountId: account.id, mailbox }, principal);
const processInbox = idempotent(operation('/api/process-inbox', 'Empty INBOX', s.purgeParams, purged, purge('INBOX')));
const processJunk = idempotent(operation('/api/process-junk', 'Empty Junk', s.purgeParams, purged, purge('Junk')));

const sendMail = idempotent(
  operation('/api/send-mail', 'Send through the account', s.sendParams, s.sendResultView, (ctx, { p, principal, req, account }) => {
    const payload = { accountId: account.id, to: req.to, cc: req.cc ?? [], bcc: req.bcc ?? [], subject: req.subject, text: req.text, html: req.html };
    return runJobForRequest(ctx, p, 'mail.send', payload, principal);
  }),
);

// msOauth2api's {email, code, message} as it was; `source` and `keyword` (where and why) are added beside it.
const code = z.object({ email: z.string(), code: z.string(), message: s.codeMessageView, ...s.codeFoundView.shape });
const codeSummary = 'The verification code of the newest matching message in INBOX and Junk; wait up to 120 s for one';
const extractCode = operation('/api/vendor-email/extract-code', codeSummary, s.codeParams, code, async (ctx, { p, principal, req, account }) => {
  const payload = { accountId: account.id, from: req.from, subject: req.subject, since: req.since, wait: req.wait };
  const result = await runJobForRequest(ctx, p, 'mail.code', payload, principal, { minWaitMs: req.wait * 1000 + p.config.MAIL_TIMEOUT_MS });
  // None found: the job fails with 404 no_code, which runJobForRequest throws (a job from a worker older than that
  // answers {code: null}, the same 404).
  if (result && !result.code) throw notFound('No verification code found', { code: 'no_code' });
  return result;
});

export const mailRouter = (p: Platform): ApiRouter =>
  new ApiRouter('Mail', p).add(
    create,
    list,
    remove,
    importLines,
    mailNew,
    mailAll,
    vendor,
    vendorFast,
    vendorPreview,
    processInbox,
    processJunk,
    sendMail,
    extractCode,
  );
