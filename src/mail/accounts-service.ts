// Mail accounts: adding, listing, deleting and importing them, and the account an msOauth2api operation is for (inline
// OAuth2 credentials tried once, then stored). No HTTP here: callers hand over what they parsed (src/mail/routes.ts) and
// get data back, or an AppError.
import type { z } from 'zod';
import type { Platform } from '../platform.js';
import { ROLE } from '../accounts/schema.js';
import { badRequest, notFound } from '../errors.js';
import { refusedHostField } from '../outbound.js';
import { sha256Hex } from '../secrets.js';
import { tryRefreshToken } from './oauth.js';
import * as s from './schema.js';
import * as store from './store.js';

/** Who acts: their own accounts, and for an admin those of users below them. */
export type Viewer = store.Viewer;
export const viewerOf = (user: { id: number; role: number }): Viewer => ({ id: user.id, role: user.role });

type AccountView = z.infer<typeof s.accountView>;

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How long inline credentials, once tried for an account, are taken as tried (no grant per call). */
const INLINE_TRIED_SECONDS = 24 * 3600;

/** The outbound policy's save-time check of an account's hosts (src/outbound.ts): 400 naming the field. */
async function vetHosts(p: Platform, hosts: Record<string, string | undefined>, dns = true): Promise<void> {
  const refused = await refusedHostField(p.config.OUTBOUND_ALLOWLIST, hosts, { dns });
  if (refused) throw badRequest(refused.message, { param: refused.field });
}

/**
 * Inline credentials that differ from a stored account's are tried (one grant) before they replace it: a refused
 * refresh token answers 502 with Microsoft's reason and the stored credentials stay. The token to store: the one the
 * grant rotated to, else the one sent (the caller writes it, once, with the rest of the account).
 */
async function triedRefreshToken(p: Platform, existing: store.AccountRow, clientId: string, refreshToken: string): Promise<string> {
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
const saveAccounts = (p: Platform, owner: Viewer, inputs: s.CreateAccountInput[]) =>
  store.saveAccounts(p.db, p.secrets, owner.id, inputs, p.config.MAIL_ACCOUNTS_PER_USER);

/** Adds an account, or replaces the caller's one of that address; its hosts are vetted first. */
export async function createAccount(p: Platform, viewer: Viewer, input: s.CreateAccountInput): Promise<{ account: AccountView; created: boolean }> {
  await vetHosts(p, { 'imap.host': input.imap.host, 'smtp.host': input.smtp.host });
  const { row, created } = (await saveAccounts(p, viewer, [input]))[0]!;
  return { account: store.publicAccount(row), created };
}

/** A page of the accounts the viewer sees, and how many there are in all. */
export async function listAccounts(p: Platform, viewer: Viewer, page: { p: number; page_size: number }): Promise<{ accounts: AccountView[]; total: number }> {
  const { rows, total } = await store.listAccounts(p.db, viewer, { offset: page.p * page.page_size, limit: page.page_size });
  return { accounts: rows.map(store.publicAccount), total };
}

/** Deletes an account the viewer sees (404 unknown_account otherwise). */
export async function deleteAccount(p: Platform, viewer: Viewer, email: string): Promise<void> {
  const row = await store.findAccount(p.db, email, viewer);
  if (!row) throw notFound(`Unknown mail account: ${email}`, { code: 'unknown_account' });
  await store.deleteAccount(p.db, row.id);
}

export interface ImportLineResult {
  line: number;
  email?: string;
  ok: boolean;
  created?: boolean;
  auth_type?: string;
  error?: string;
}

/**
 * One line `email----password----client_id----refresh_token` as an account, or why not. The last two may come swapped:
 * the GUID is the client id, whichever side it is on; failing that, the refresh token is the long one.
 */
function lineAccount(line: string, servers: s.ImportInput['servers']): { input: s.CreateAccountInput } | { email?: string; error: string } {
  const fields = line.split('----').map((f) => f.trim());
  const [email = '', password = '', a = '', b = ''] = fields;
  let clientId = a;
  let refreshToken = b;
  if (GUID.test(b) && !GUID.test(a)) [clientId, refreshToken] = [b, a];
  else if (!GUID.test(a) && !GUID.test(b) && a.length > b.length) [clientId, refreshToken] = [b, a];
  const auth = clientId && refreshToken ? { type: 'oauth2', client_id: clientId, refresh_token: refreshToken } : { type: 'password', password };
  const check = s.createAccountBody.safeParse({ email, auth, ...servers });
  if (check.success) return { input: check.data };
  const issue = check.error.issues[0]!;
  const field = issue.path.join('.');
  const why = field === 'auth.password' ? 'no password, and no client_id and refresh_token' : `${field}: ${issue.message}`;
  return { email: email || undefined, error: fields.length < 2 ? 'expected email----password----client_id----refresh_token' : why };
}

/**
 * Imports lines (blank ones and # comments skipped), each an upsert of the viewer's own account: an outcome per line,
 * by line number. All the valid lines are saved at once, or none (429) when their new addresses would pass
 * MAIL_ACCOUNTS_PER_USER.
 */
export async function importAccounts(p: Platform, viewer: Viewer, { lines, servers }: s.ImportInput) {
  await vetHosts(p, { 'imap.host': servers.imap?.host, 'smtp.host': servers.smtp?.host });
  const results: ImportLineResult[] = [];
  const valid: { line: number; input: s.CreateAccountInput }[] = [];
  for (const [i, text] of lines.entries()) {
    const line = text.trim();
    if (!line || line.startsWith('#')) continue;
    const outcome = lineAccount(line, servers);
    if ('input' in outcome) valid.push({ line: i + 1, input: outcome.input });
    else results.push({ line: i + 1, email: outcome.email, ok: false, error: outcome.error });
  }
  const saved = await saveAccounts(
    p,
    viewer,
    valid.map((v) => v.input),
  );
  for (const [i, { row, created }] of saved.entries()) results.push({ line: valid[i]!.line, email: row.email, ok: true, created, auth_type: row.auth_type });
  results.sort((a, b) => a.line - b.line);
  return { imported: results.filter((r) => r.ok).length, failed: results.filter((r) => !r.ok).length, results };
}

/** What an operation names its account by: an address, and perhaps inline OAuth2 credentials (both or neither). */
export interface AccountRequest {
  email: string;
  client_id?: string;
  refresh_token?: string;
}

/** The account an operation is for: inline OAuth2 credentials update (or create) the caller's own. */
export async function accountFor(p: Platform, viewer: Viewer, req: AccountRequest): Promise<store.AccountRow> {
  if (req.client_id && req.refresh_token) {
    const existing = await store.findAccount(p.db, req.email, { id: viewer.id, role: ROLE.common });
    // The spelling only (no DNS on every call): connect time resolves and checks again anyway.
    if (existing) await vetHosts(p, { 'imap.host': existing.imap_host, 'smtp.host': existing.smtp_host }, false);
    const refreshToken = existing ? await triedRefreshToken(p, existing, req.client_id, req.refresh_token) : req.refresh_token;
    const [saved] = await saveAccounts(p, viewer, [
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
  const row = await store.findAccount(p.db, req.email, viewer);
  if (!row)
    throw notFound(`Unknown mail account: ${req.email} (add it with POST /api/mail/accounts, or send client_id and refresh_token)`, {
      code: 'unknown_account',
    });
  return row;
}
