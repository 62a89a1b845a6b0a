// HTTP routes of mail: accounts and msOauth2api's operations (GET or POST), each run as a mail job.
import type { Context } from 'koa';
import { z } from 'zod';
import type { Platform } from '../platform.js';
import { ROLE } from '../accounts/schema.js';
import type { Principal } from '../accounts/auth.js';
import { authorize, SESSION_COOKIE } from '../http/auth.js';
import { badRequest, notFound } from '../errors.js';
import { runJobForRequest } from '../http/jobs.js';
import { ApiRouter, ok, plainError, type RouteSpec } from '../http/route.js';
import { parse } from '../validate.js';
import { refusedHostField } from '../outbound.js';
import { MAIL_PAGE_CSP, renderMessagesPage } from './html.js';
import { tryRefreshToken } from './oauth.js';
import { sha256Hex } from '../secrets.js';
import * as s from './schema.js';
import * as store from './store.js';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** msOauth2api reads GET parameters from the query and others from the body: take both, body wins. */
function params(ctx: Context): Record<string, unknown> {
  const body = ctx.request.body;
  const fromBody = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const query: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(ctx.query)) query[k] = Array.isArray(v) ? v[v.length - 1] : v;
  return { ...query, ...fromBody };
}

/** How long inline credentials, once tried for an account, are taken as tried (no grant per call). */
const INLINE_TRIED_SECONDS = 24 * 3600;

export function mailRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Mail');

  /**
   * Any credential of the platform. msOauth2api's clients send their protection password as a
   * `password` parameter: when nothing else is sent, it is taken as an access token or API key.
   */
  async function caller(ctx: Context, all: Record<string, unknown>): Promise<Principal> {
    if (!ctx.get('authorization') && !ctx.cookies.get(SESSION_COOKIE) && typeof all.password === 'string' && all.password) {
      ctx.request.headers.authorization = `Bearer ${all.password}`;
    }
    // Every operation acts on a mailbox (or stores inline credentials): GETs included, same-origin for cookies.
    return authorize(ctx, p, ROLE.common, { changesState: true });
  }
  const viewer = (principal: Principal): store.Viewer => ({ id: principal.user.id, role: principal.user.role });

  /** The outbound policy's save-time check of an account's hosts (src/outbound.ts): 400 naming the field. */
  async function vetHosts(hosts: Record<string, string | undefined>, dns = true) {
    const refused = await refusedHostField(p.config.OUTBOUND_ALLOWLIST, hosts, { dns });
    if (refused) throw badRequest(refused.message, { param: refused.field });
  }

  /**
   * Inline credentials that differ from a stored account's are tried (one grant) before they replace it: a refused
   * refresh token answers 502 with Microsoft's reason and the stored credentials stay. The token to store: the one the
   * grant rotated to, else the one sent (the caller writes it, once, with the rest of the account).
   */
  async function triedRefreshToken(existing: store.AccountRow, clientId: string, refreshToken: string): Promise<string> {
    const before = store.openAccount(p.secrets, existing).auth;
    const stored = before.type === 'oauth2' && before.client_id === clientId ? before.refresh_token : undefined;
    if (stored === refreshToken) return refreshToken;
    // msOauth2api's clients send the same token on every call: once it was tried for this account, what was stored
    // then (it, or what the grant rotated it to) stays, with no grant per call (for a day after its last use).
    const tried = p.keys.of('ms-inline-tried', sha256Hex(`${existing.id}\u0000${clientId}\u0000${refreshToken}`));
    if (stored !== undefined && (await p.redis.expire(tried, INLINE_TRIED_SECONDS).catch(() => 0)) === 1) return stored;
    const keep = await tryRefreshToken(p, { clientId, refreshToken });
    await p.redis.set(tried, '1', 'EX', INLINE_TRIED_SECONDS).catch(() => {});
    return keep;
  }

  /** Every way in which accounts are made goes through here: at most MAIL_ACCOUNTS_PER_USER per user (429 past it). */
  const saveAccounts = (principal: Principal, inputs: s.CreateAccountInput[]) =>
    store.saveAccounts(p.db, p.secrets, principal.user.id, inputs, p.config.MAIL_ACCOUNTS_PER_USER);

  /** The account an operation is for: inline OAuth2 credentials update (or create) the caller's own. */
  async function accountFor(principal: Principal, req: { email: string; client_id?: string; refresh_token?: string }): Promise<store.AccountRow> {
    if (req.client_id && req.refresh_token) {
      const existing = await store.findAccount(p.db, req.email, { id: principal.user.id, role: ROLE.common });
      // The spelling only (no DNS on every call): connect time resolves and checks again anyway.
      if (existing) await vetHosts({ 'imap.host': existing.imap_host, 'smtp.host': existing.smtp_host }, false);
      const refreshToken = existing ? await triedRefreshToken(existing, req.client_id, req.refresh_token) : req.refresh_token;
      const [saved] = await saveAccounts(principal, [
        {
          email: req.email,
          auth: { type: 'oauth2', client_id: req.client_id, refresh_token: refreshToken },
          imap: existing ? { host: existing.imap_host, port: existing.imap_port, secure: existing.imap_secure } : s.OUTLOOK_IMAP,
          smtp: existing ? { host: existing.smtp_host, port: existing.smtp_port, secure: existing.smtp_secure } : s.OUTLOOK_SMTP,
        },
      ]);
      return saved!.row;
    }
    if (req.client_id || req.refresh_token) throw badRequest('client_id and refresh_token go together: send both, or neither to use a stored account');
    const row = await store.findAccount(p.db, req.email, viewer(principal));
    if (!row)
      throw notFound(`Unknown mail account: ${req.email} (add it with POST /api/mail/accounts, or send client_id and refresh_token)`, {
        code: 'unknown_account',
      });
    return row;
  }

  // ---- accounts --------------------------------------------------------------------------------

  const create = {
    method: 'post',
    path: '/api/mail/accounts',
    summary: 'Add (or replace) a mail account',
    auth: 'user',
    body: s.createAccountBody,
    responses: { 201: ok('created', s.accountView), 200: ok('replaced', s.accountView), 400: ok('invalid', plainError) },
  } as const;
  router.endpoint(create, async (ctx) => {
    const principal = await authorize(ctx, p);
    const body = parse(s.createAccountBody, ctx.request.body ?? {});
    await vetHosts({ 'imap.host': body.imap.host, 'smtp.host': body.smtp.host });
    const { row, created } = (await saveAccounts(principal, [body]))[0]!;
    ctx.status = created ? 201 : 200;
    ctx.body = store.publicAccount(row);
  });

  const list = {
    method: 'get',
    path: '/api/mail/accounts',
    summary: 'Your accounts (admins: also those of users below them), never their secrets; pages of up to 1,000 (p, page_size), X-Total-Count',
    auth: 'user',
    query: s.accountsPage,
    responses: { 200: ok('accounts; X-Total-Count', z.array(s.accountView)), 400: ok('invalid page', plainError) },
  } as const;
  router.endpoint(list, async (ctx) => {
    const principal = await authorize(ctx, p);
    const q = parse(s.accountsPage, ctx.query);
    const { rows, total } = await store.listAccounts(p.db, viewer(principal), { offset: q.p * q.page_size, limit: q.page_size });
    ctx.set('X-Total-Count', String(total));
    ctx.body = rows.map(store.publicAccount);
  });

  const remove = {
    method: 'delete',
    path: '/api/mail/accounts/:email',
    summary: 'Delete an account',
    auth: 'user',
    responses: { 200: '{success:true}', 404: ok('unknown account', plainError) },
  } as const;
  router.endpoint(remove, async (ctx) => {
    const principal = await authorize(ctx, p);
    const email = parse(s.emailAddress, ctx.params.email, { param: 'email' });
    const row = await store.findAccount(p.db, email, viewer(principal));
    if (!row) throw notFound(`Unknown mail account: ${email}`, { code: 'unknown_account' });
    await store.deleteAccount(p.db, row.id);
    ctx.body = { success: true };
  });

  /** Lines `email----password----client_id----refresh_token` (the last two may come swapped). */
  const importLines = {
    method: 'post',
    path: '/api/mail/accounts/import',
    summary: 'Import email----password----client_id----refresh_token lines',
    auth: 'user',
    body: 'text',
    responses: { 200: 'per-line outcome' },
  } as const;
  router.endpoint(importLines, async (ctx) => {
    const principal = await authorize(ctx, p);
    const body = parse(s.importBody, ctx.request.body ?? '');
    const raw = typeof body === 'string' ? body : body.lines;
    const lines = Array.isArray(raw) ? raw : raw.split(/\r?\n/);
    if (lines.length > s.MAX_IMPORT_LINES)
      throw badRequest(`lines: at most ${s.MAX_IMPORT_LINES} lines per import (this has ${lines.length}); send the rest in another request`, {
        param: 'lines',
      });
    const servers = typeof body === 'string' ? {} : { imap: body.imap, smtp: body.smtp };
    await vetHosts({ 'imap.host': servers.imap?.host, 'smtp.host': servers.smtp?.host });
    const results: { line: number; email?: string; ok: boolean; created?: boolean; auth_type?: string; error?: string }[] = [];
    const valid: { line: number; input: s.CreateAccountInput }[] = [];
    for (const [i, text] of lines.entries()) {
      const line = text.trim();
      if (!line || line.startsWith('#')) continue;
      const fields = line.split('----').map((f) => f.trim());
      const [email = '', password = '', a = '', b = ''] = fields;
      let clientId = a;
      let refreshToken = b;
      // The GUID is the client id, whichever side it is on; failing that, the refresh token is the long one.
      if (GUID.test(b) && !GUID.test(a)) [clientId, refreshToken] = [b, a];
      else if (!GUID.test(a) && !GUID.test(b) && a.length > b.length) [clientId, refreshToken] = [b, a];
      const auth = clientId && refreshToken ? { type: 'oauth2', client_id: clientId, refresh_token: refreshToken } : { type: 'password', password };
      const check = s.createAccountBody.safeParse({ email, auth, ...servers });
      if (!check.success) {
        const issue = check.error.issues[0]!;
        const field = issue.path.join('.');
        const why = field === 'auth.password' ? 'no password, and no client_id and refresh_token' : `${field}: ${issue.message}`;
        results.push({
          line: i + 1,
          email: email || undefined,
          ok: false,
          error: fields.length < 2 ? 'expected email----password----client_id----refresh_token' : why,
        });
        continue;
      }
      valid.push({ line: i + 1, input: check.data });
    }
    // All the valid lines at once, or none (429) when their new addresses would pass MAIL_ACCOUNTS_PER_USER.
    const saved = await saveAccounts(
      principal,
      valid.map((v) => v.input),
    );
    for (const [i, { row, created }] of saved.entries()) results.push({ line: valid[i]!.line, email: row.email, ok: true, created, auth_type: row.auth_type });
    results.sort((a, b) => a.line - b.line);
    ctx.body = { imported: results.filter((r) => r.ok).length, failed: results.filter((r) => !r.ok).length, results };
  });

  // ---- operations ------------------------------------------------------------------------------

  type Req = { email: string; client_id?: string; refresh_token?: string; response_type: 'json' | 'html' };

  /** Validates, resolves the account, and hands back what the job needs. */
  async function prepare<S extends z.ZodType<Req>>(ctx: Context, schema: S) {
    const all = params(ctx);
    const principal = await caller(ctx, all);
    const req = parse(schema, all) as z.output<S>;
    const account = await accountFor(principal, req);
    return { principal, req, account };
  }

  /** The job's answer as JSON, or (response_type=html) as a readable page. */
  function answerMessages(ctx: Context, responseType: 'json' | 'html', answer: s.FetchResult) {
    if (responseType === 'html') {
      ctx.set('Content-Security-Policy', MAIL_PAGE_CSP);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = renderMessagesPage(answer.email, answer.mailbox, s.messagesOf(answer));
      return;
    }
    ctx.body = answer;
  }

  const read =
    (schema: typeof s.mailNewParams | typeof s.mailAllParams | typeof s.vendorParams, mode: 'live' | 'fast' | 'preview', single: boolean) =>
    async (ctx: Context) => {
      const { principal, req, account } = await prepare(ctx, schema);
      const r = req as z.output<typeof s.vendorParams>;
      const result = await runJobForRequest(
        ctx,
        p,
        'mail.fetch',
        { accountId: account.id, mailbox: r.mailbox, mode, limit: single ? 1 : r.limit, newest: single, since: r.since, from: r.from, subject: r.subject },
        principal,
      );
      if (result) answerMessages(ctx, r.response_type, result);
    };

  /** msOauth2api's operations answer GET and POST alike, as jobs, with the same errors. */
  const operation = (path: string, summary: string, params: z.ZodObject, answer: z.ZodType, handler: (ctx: Context) => Promise<void>) => {
    const spec: RouteSpec = {
      method: ['get', 'post'],
      path,
      summary,
      auth: 'user',
      job: true,
      params,
      responses: {
        200: ok('answer', answer),
        400: ok('bad parameters', plainError),
        404: ok('unknown account (or no code found)', plainError),
        502: ok('the mail server or Microsoft refused (reason given)', plainError),
        504: ok('the mail server timed out', plainError),
      },
    };
    router.endpoint(spec, handler);
  };
  const messages = z.object({ email: z.string(), mailbox: z.string(), messages: z.array(s.messageView) });
  const purged = z.object({ email: z.string(), mailbox: z.string(), deleted: z.number() });

  const newest = z.object({ email: z.string(), mailbox: z.string(), message: s.messageView.nullable() });
  operation('/api/mail-new', 'The newest message of INBOX or Junk (message: null when empty)', s.mailNewParams, newest, read(s.mailNewParams, 'live', true));
  operation('/api/mail-all', 'Messages, newest first', s.mailAllParams, messages, read(s.mailAllParams, 'live', false));
  operation(
    '/api/vendor-email',
    'Messages matching from/subject/since, read from the server now',
    s.vendorParams,
    messages,
    read(s.vendorParams, 'live', false),
  );
  const fast = 'The same, from the stored copy after fetching only newer UIDs';
  operation('/api/vendor-email/fast', fast, s.vendorParams, messages, read(s.vendorParams, 'fast', false));
  operation('/api/vendor-email/preview', 'Headers and a 200-character snippet', s.vendorParams, messages, read(s.vendorParams, 'preview', false));

  const purge = (mailbox: s.MailboxName) => async (ctx: Context) => {
    const { principal, account } = await prepare(ctx, s.purgeParams);
    const result = await runJobForRequest(ctx, p, 'mail.purge', { accountId: account.id, mailbox }, principal);
    if (result) ctx.body = result;
  };
  operation('/api/process-inbox', 'Empty INBOX', s.purgeParams, purged, purge('INBOX'));
  operation('/api/process-junk', 'Empty Junk', s.purgeParams, purged, purge('Junk'));

  operation('/api/send-mail', 'Send through the account', s.sendParams, s.sendResultView, async (ctx) => {
    const { principal, req, account } = await prepare(ctx, s.sendParams);
    const result = await runJobForRequest(
      ctx,
      p,
      'mail.send',
      { accountId: account.id, to: req.to, cc: req.cc ?? [], bcc: req.bcc ?? [], subject: req.subject, text: req.text, html: req.html },
      principal,
    );
    if (result) ctx.body = result;
  });

  // msOauth2api's {email, code, message} as it was; `source` and `keyword` (where and why) are added beside it.
  const code = z.object({ email: z.string(), code: z.string(), message: s.codeMessageView, ...s.codeFoundView.shape });
  const codeSummary = 'The verification code of the newest matching message in INBOX and Junk; wait up to 120 s for one';
  operation('/api/vendor-email/extract-code', codeSummary, s.codeParams, code, async (ctx) => {
    const { principal, req, account } = await prepare(ctx, s.codeParams);
    const result = await runJobForRequest(
      ctx,
      p,
      'mail.code',
      { accountId: account.id, from: req.from, subject: req.subject, since: req.since, wait: req.wait },
      principal,
      { minWaitMs: req.wait * 1000 + p.config.MAIL_TIMEOUT_MS },
    );
    // None found: the job fails with 404 no_code, which runJobForRequest throws (a job from a worker older than that
    // answers {code: null}, the same 404).
    if (result && !result.code) throw notFound('No verification code found', { code: 'no_code' });
    if (result) ctx.body = result;
  });

  return router;
}
