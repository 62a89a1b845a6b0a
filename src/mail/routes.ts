// HTTP routes of area D: mail accounts and msOauth2api's operations (GET or POST), each run as a mail job.
import { Router } from '@koa/router';
import type { Context } from 'koa';
import type { z } from 'zod';
import type { Platform } from '../platform.js';
import { ROLE } from '../accounts/schema.js';
import type { Principal } from '../accounts/auth.js';
import { authorize, SESSION_COOKIE } from '../http/auth.js';
import { badRequest, notFound } from '../errors.js';
import { runJobForRequest } from '../http/jobs.js';
import { parse } from '../validate.js';
import { MAIL_PAGE_CSP, renderMessagesPage } from './html.js';
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

export function mailRouter(p: Platform): Router {
  const router = new Router();

  /**
   * Any credential of the platform. msOauth2api's clients send their protection password as a
   * `password` parameter: when nothing else is sent, it is taken as an access token or API key.
   */
  async function caller(ctx: Context, all: Record<string, unknown>): Promise<Principal> {
    if (!ctx.get('authorization') && !ctx.cookies.get(SESSION_COOKIE) && typeof all.password === 'string' && all.password) {
      ctx.request.headers.authorization = `Bearer ${all.password}`;
    }
    return authorize(ctx, p);
  }
  const viewer = (principal: Principal) => ({ id: principal.user.id, isAdmin: principal.user.role >= ROLE.admin });

  /** The account an operation is for: inline OAuth2 credentials update (or create) the caller's own. */
  async function accountFor(principal: Principal, req: { email: string; client_id?: string; refresh_token?: string }): Promise<store.AccountRow> {
    if (req.client_id && req.refresh_token) {
      const existing = await store.findAccount(p.db, req.email, { id: principal.user.id, isAdmin: false });
      const { row } = await store.upsertAccount(p.db, p.secrets, principal.user.id, {
        email: req.email,
        auth: { type: 'oauth2', client_id: req.client_id, refresh_token: req.refresh_token },
        imap: existing ? { host: existing.imap_host, port: existing.imap_port, secure: existing.imap_secure } : s.OUTLOOK_IMAP,
        smtp: existing ? { host: existing.smtp_host, port: existing.smtp_port, secure: existing.smtp_secure } : s.OUTLOOK_SMTP,
      });
      return row;
    }
    if (req.client_id || req.refresh_token) throw badRequest('client_id and refresh_token go together: send both, or neither to use a stored account');
    const row = await store.findAccount(p.db, req.email, viewer(principal));
    if (!row) throw notFound(`Unknown mail account: ${req.email} (add it with POST /api/mail/accounts, or send client_id and refresh_token)`, { code: 'unknown_account' });
    return row;
  }

  // ---- accounts --------------------------------------------------------------------------------

  router.post('/api/mail/accounts', async (ctx) => {
    const principal = await authorize(ctx, p);
    const body = parse(s.createAccountBody, ctx.request.body ?? {});
    const { row, created } = await store.upsertAccount(p.db, p.secrets, principal.user.id, body);
    ctx.status = created ? 201 : 200;
    ctx.body = store.publicAccount(row);
  });

  router.get('/api/mail/accounts', async (ctx) => {
    const principal = await authorize(ctx, p);
    ctx.body = (await store.listAccounts(p.db, viewer(principal))).map(store.publicAccount);
  });

  router.delete('/api/mail/accounts/:email', async (ctx) => {
    const principal = await authorize(ctx, p);
    const email = String(ctx.params.email).toLowerCase();
    const row = await store.findAccount(p.db, email, viewer(principal));
    if (!row) throw notFound(`Unknown mail account: ${email}`, { code: 'unknown_account' });
    await store.deleteAccount(p.db, row.id);
    ctx.body = { success: true };
  });

  /** Lines `email----password----client_id----refresh_token` (the last two may come swapped). */
  router.post('/api/mail/accounts/import', async (ctx) => {
    const principal = await authorize(ctx, p);
    const body = parse(s.importBody, ctx.request.body ?? '');
    const raw = typeof body === 'string' ? body : body.lines;
    const lines = Array.isArray(raw) ? raw : raw.split(/\r?\n/);
    const servers = typeof body === 'string' ? {} : { imap: body.imap, smtp: body.smtp };
    const results: { line: number; email?: string; ok: boolean; created?: boolean; auth_type?: string; error?: string }[] = [];
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
        results.push({ line: i + 1, email: email || undefined, ok: false, error: fields.length < 2 ? 'expected email----password----client_id----refresh_token' : why });
        continue;
      }
      const { row, created } = await store.upsertAccount(p.db, p.secrets, principal.user.id, check.data);
      results.push({ line: i + 1, email: row.email, ok: true, created, auth_type: row.auth_type });
    }
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

  function answerMessages(ctx: Context, email: string, mailbox: string, responseType: 'json' | 'html', messages: s.MailMessage[], single: boolean) {
    if (responseType === 'html') {
      ctx.set('Content-Security-Policy', MAIL_PAGE_CSP);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = renderMessagesPage(email, mailbox, messages);
      return;
    }
    ctx.body = single ? { email, mailbox, message: messages[0] ?? null } : { email, mailbox, messages };
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
        { accountId: account.id, mailbox: r.mailbox, mode, limit: single ? 1 : r.limit, since: r.since, from: r.from, subject: r.subject },
        principal,
      );
      if (result) answerMessages(ctx, account.email, result.mailbox, r.response_type, result.messages, single);
    };

  const route = (path: string, handler: (ctx: Context) => Promise<void>) => {
    router.get(path, handler);
    router.post(path, handler);
  };

  route('/api/mail-new', read(s.mailNewParams, 'live', true));
  route('/api/mail-all', read(s.mailAllParams, 'live', false));
  route('/api/vendor-email', read(s.vendorParams, 'live', false));
  route('/api/vendor-email/fast', read(s.vendorParams, 'fast', false));
  route('/api/vendor-email/preview', read(s.vendorParams, 'preview', false));

  const purge = (mailbox: s.MailboxName) => async (ctx: Context) => {
    const { principal, account } = await prepare(ctx, s.purgeParams);
    const result = await runJobForRequest(ctx, p, 'mail.purge', { accountId: account.id, mailbox }, principal);
    if (result) ctx.body = { email: account.email, mailbox: result.mailbox, deleted: result.deleted };
  };
  route('/api/process-inbox', purge('INBOX'));
  route('/api/process-junk', purge('Junk'));

  route('/api/send-mail', async (ctx) => {
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

  route('/api/vendor-email/extract-code', async (ctx) => {
    const { principal, req, account } = await prepare(ctx, s.codeParams);
    const result = await runJobForRequest(
      ctx,
      p,
      'mail.code',
      { accountId: account.id, from: req.from, subject: req.subject, since: req.since, wait: req.wait },
      principal,
      { minWaitMs: req.wait * 1000 + p.config.MAIL_TIMEOUT_MS },
    );
    if (!result) return;
    if (!result.code) throw notFound('No verification code found', { code: 'no_code' });
    ctx.body = { email: account.email, code: result.code, message: result.message };
  });

  return router;
}
