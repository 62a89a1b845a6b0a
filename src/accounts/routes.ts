// HTTP routes of accounts: login/sessions, users, API tokens, redemption codes (one-api paths and envelope).
// Each endpoint is declared (src/http/route.ts): auth and parsing are enforced before its handler runs; the work is in
// users-service.ts, tokens-service.ts and redemptions-service.ts.
import { z } from 'zod';
import type { Platform } from '../platform.js';
import type { AuthUser } from './auth.js';
import { attemptOf, SESSION_COOKIE } from '../http/auth.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { ApiRouter, endpoint, envelopeOf, ok, type ResponseSpec } from '../http/route.js';
import * as codes from './redemptions-service.js';
import * as schema from './schema.js';
import * as store from './store.js';
import * as tokens from './tokens-service.js';
import * as users from './users-service.js';

const TOKENS = 'Tokens';
const CODES = 'Redemption codes';
const oneUser = ok('envelope with the user', envelopeOf(schema.userView));
const oneToken = ok('envelope with the token (key masked)', envelopeOf(schema.tokenView));
const oneCode = ok('envelope with the code', envelopeOf(schema.redemptionView));
const userList = ok('envelope with users; X-Total-Count', envelopeOf(z.array(schema.userView)));
const tokenList = ok('envelope with tokens (keys masked); X-Total-Count', envelopeOf(z.array(schema.tokenView)));
const codeList = ok('envelope with codes; X-Total-Count', envelopeOf(z.array(schema.redemptionView)));
const pathId = { id: schema.idParam };

/** A page (p, page_size, keyword) of one of the area's lists, in the envelope with X-Total-Count: lists and searches. */
const paged =
  (tag: string | undefined, auth: 'user' | 'admin', listed: ResponseSpec, list: (p: Platform, me: AuthUser, q: schema.PageQuery) => Promise<Page>) =>
  (path: string, summary: string) =>
    endpoint({ method: 'get', path, tag, summary, auth, query: schema.pageQuery, responses: { 200: listed } }, async (ctx, { p, principal, query }) => {
      const { rows, total } = await list(p, principal.user, query);
      envelopeList(ctx, rows, total);
    });
type Page = { rows: unknown[]; total: number };

/**
 * GET or DELETE of one row by its id: the service finds what the caller may see (or removes it) or throws (404, 403).
 * A GET answers the envelope with the row, a DELETE the bare envelope.
 */
const byId = <T>(
  method: 'get' | 'delete',
  { found, unknown, ...spec }: { path: string; tag?: string; summary: string; auth: 'user' | 'admin'; found: ResponseSpec; unknown: string },
  act: (p: Platform, me: AuthUser, id: number) => Promise<T>,
) =>
  endpoint({ ...spec, method, pathParams: pathId, responses: { 200: found, 404: unknown } }, async (ctx, { p, principal, path }) =>
    envelope(ctx, await act(p, principal.user, path.id)),
  );

/** A POST that makes something (a user, a key, codes): the service makes it from the parsed body; 201 with it. */
const creating = <B extends z.ZodType>(
  spec: { path: string; tag?: string; summary: string; auth: 'user' | 'admin'; body: B; responses: Record<number, ResponseSpec> },
  make: (p: Platform, me: AuthUser, body: z.output<B>) => Promise<unknown>,
) =>
  endpoint({ ...spec, method: 'post', idempotent: true }, async (ctx, { p, principal, body }) =>
    envelope(ctx, await make(p, principal.user, body as z.output<B>), 201),
  );

// ---- sessions ------------------------------------------------------------------------------

const login = endpoint(
  {
    method: 'post',
    path: '/api/user/login',
    summary: 'Log in: sets the sy_session cookie',
    auth: 'none',
    // Login CSRF: a foreign page must not sign a browser into an account of its choosing.
    sameOrigin: true,
    body: schema.loginBody,
    responses: { 200: oneUser, 401: 'wrong username or password', 403: 'user disabled', 429: 'too many failed logins (Retry-After)' },
  },
  async (ctx, { p, body }) => {
    const { user, sid, expiresAt } = await p.auth.login(body.username, body.password, attemptOf(ctx));
    ctx.cookies.set(SESSION_COOKIE, sid, { httpOnly: true, sameSite: 'lax', signed: true, secure: ctx.secure, expires: expiresAt, overwrite: true });
    envelope(ctx, store.publicUser(user));
  },
);

// A GET that ends the session: a cross-site page must not log people out (sameOrigin). The cookie's session ends
// whatever else the request carries (a bad Authorization header too).
const logout = endpoint(
  { method: 'get', path: '/api/user/logout', summary: 'End the session', auth: 'none', sameOrigin: true, responses: { 200: 'envelope' } },
  async (ctx, { p }) => {
    await users.logout(p, ctx.cookies.get(SESSION_COOKIE, { signed: true }));
    ctx.cookies.set(SESSION_COOKIE, null, { signed: true });
    envelope(ctx);
  },
);

// ---- the caller ----------------------------------------------------------------------------

const self = endpoint(
  { method: 'get', path: '/api/user/self', summary: 'The caller', auth: 'user', responses: { 200: oneUser } },
  async (ctx, { p, principal }) => envelope(ctx, await users.getSelf(p, principal.user)),
);

const updateSelf = endpoint(
  {
    method: 'put',
    path: '/api/user/self',
    summary: 'Change own display name, email or password; root (admins too where ADMIN_SELF_QUOTA is true) its own quota',
    auth: 'user',
    body: schema.updateSelfBody,
    responses: { 200: oneUser },
  },
  async (ctx, { p, principal, body }) => envelope(ctx, await users.updateSelf(p, principal, body)),
);

/** Makes (and rotates) the caller's system access token for scripts; shown only here. */
const accessToken = endpoint(
  {
    method: 'get',
    path: '/api/user/token',
    summary: 'Make (rotate) the system access token',
    auth: 'user',
    changesState: true,
    responses: { 200: ok('envelope with the token', envelopeOf(z.string())) },
  },
  async (ctx, { p, principal }) => envelope(ctx, await users.rotateAccessToken(p, principal.user)),
);

const topup = endpoint(
  {
    method: 'post',
    path: '/api/user/topup',
    tag: CODES,
    summary: 'Credit a redemption code to the caller',
    auth: 'user',
    body: schema.topupBody,
    idempotent: true,
    responses: { 200: ok('envelope with the quota credited', envelopeOf(z.number())), 400: 'used, disabled or unknown code' },
  },
  async (ctx, { p, principal, body }) => envelope(ctx, await codes.redeem(p, principal.user, body.key)),
);

// ---- users (admin) -------------------------------------------------------------------------

const usersPage = paged(undefined, 'admin', userList, users.listUsers);

const createUser = creating(
  {
    path: '/api/user/',
    summary: 'Create a user (role below your own)',
    auth: 'admin',
    body: schema.createUserBody,
    responses: { 201: oneUser, 400: 'invalid', 403: 'role too high', 409: 'username taken' },
  },
  users.createUser,
);

const oneUserById = byId('get', { path: '/api/user/:id', summary: 'One user', auth: 'admin', found: oneUser, unknown: 'unknown' }, users.getUser);
const deleteUser = byId('delete', { path: '/api/user/:id', summary: 'Delete a user', auth: 'admin', found: 'envelope', unknown: 'unknown' }, users.deleteUser);

const updateUserInBody = endpoint(
  { method: 'put', path: '/api/user/', summary: 'Change a user (id in the body)', auth: 'admin', body: schema.updateUserBody, responses: { 200: oneUser } },
  async (ctx, { p, principal, body }) => envelope(ctx, await users.updateUser(p, principal.user, body.id, body)),
);

const updateUserById = endpoint(
  {
    method: 'put',
    path: '/api/user/:id',
    summary: 'Change a user',
    auth: 'admin',
    pathParams: pathId,
    body: schema.updateUserBody,
    responses: { 200: oneUser, 403: 'role too high' },
  },
  async (ctx, { p, principal, path, body }) => envelope(ctx, await users.updateUser(p, principal.user, path.id, body)),
);

/** one-api's GET /api/group/: the names of the user groups (GROUP_RATIO's, and the default one), for a user's or a channel's group. */
const groups = endpoint(
  {
    method: 'get',
    path: '/api/group/',
    summary: 'The user groups GROUP_RATIO names, and the default one',
    auth: 'admin',
    responses: { 200: ok('envelope with the group names, sorted', envelopeOf(z.array(z.string()))) },
  },
  async (ctx, { p }) => envelope(ctx, users.listGroups(p)),
);

// ---- API tokens (owner only) ---------------------------------------------------------------

const tokensPage = paged(TOKENS, 'user', tokenList, tokens.listTokens);

const createToken = creating(
  {
    path: '/api/token/',
    tag: TOKENS,
    summary: 'Create an API key: the whole sk- key is in this answer only',
    auth: 'user',
    body: schema.createTokenBody,
    responses: { 201: ok('envelope with the token and its whole key', envelopeOf(schema.tokenView)), 400: 'invalid' },
  },
  tokens.createToken,
);

const oneTokenById = byId(
  'get',
  { path: '/api/token/:id', tag: TOKENS, summary: 'One API key (masked)', auth: 'user', found: oneToken, unknown: 'unknown or not yours' },
  tokens.getToken,
);
const deleteToken = byId(
  'delete',
  { path: '/api/token/:id', tag: TOKENS, summary: 'Delete an API key', auth: 'user', found: 'envelope', unknown: 'unknown or not yours' },
  tokens.deleteToken,
);

/** PUT /api/token/ (id in the body) and /api/token/:id (the path's id wins): parseTokenUpdate reads the id. */
const updateTokenAt = (path: string, summary: string, body: z.ZodType, responses: Record<number, ResponseSpec>) =>
  endpoint(
    { method: 'put', path, tag: TOKENS, summary, auth: 'user', body, parseBody: schema.parseTokenUpdate, parseQuery: schema.parseStatusOnly, responses },
    async (ctx, { p, principal, body, query }) => envelope(ctx, await tokens.updateToken(p, principal.user, body, query.statusOnly)),
  );

// ---- redemption codes (admin) --------------------------------------------------------------

const codesPage = paged(CODES, 'admin', codeList, codes.listRedemptions);

const createCodes = creating(
  {
    path: '/api/redemption/',
    tag: CODES,
    summary: 'Create 1-100 codes',
    auth: 'admin',
    body: schema.createRedemptionBody,
    responses: { 201: ok('envelope with the codes', envelopeOf(z.array(z.string()))) },
  },
  codes.createRedemptions,
);

const oneCodeById = byId(
  'get',
  { path: '/api/redemption/:id', tag: CODES, summary: 'One code', auth: 'admin', found: oneCode, unknown: 'unknown' },
  codes.getRedemption,
);
const deleteCode = byId(
  'delete',
  { path: '/api/redemption/:id', tag: CODES, summary: 'Delete a code', auth: 'admin', found: 'envelope', unknown: 'unknown' },
  codes.deleteRedemption,
);

const updateCode = endpoint(
  {
    method: 'put',
    path: '/api/redemption/',
    tag: CODES,
    summary: 'Rename, re-price, enable or disable a code',
    auth: 'admin',
    body: schema.updateRedemptionBody,
    parseQuery: schema.parseStatusOnly,
    responses: { 200: oneCode },
  },
  async (ctx, { p, principal, body, query }) => envelope(ctx, await codes.updateRedemption(p, principal.user, body, query.statusOnly)),
);

export function accountsRouter(p: Platform): ApiRouter {
  // API processes give back the quota reservations of calls whose process died (src/accounts/ledger.ts).
  p.ledger.startSweeping(p.log);
  return new ApiRouter('Users', p).add(
    login,
    logout,
    self,
    updateSelf,
    accessToken,
    topup,
    usersPage('/api/user/', 'List users'),
    usersPage('/api/user/search', 'Search users'),
    createUser,
    oneUserById,
    updateUserInBody,
    updateUserById,
    deleteUser,
    groups,
    tokensPage('/api/token/', "The caller's API keys (masked)"),
    tokensPage('/api/token/search', "Search the caller's API keys by name"),
    createToken,
    oneTokenById,
    updateTokenAt('/api/token/', 'Change an API key (id in the body; ?status_only=1 changes only status)', schema.updateTokenBody, {
      200: oneToken,
      400: 'cannot enable while expired or exhausted',
    }),
    updateTokenAt('/api/token/:id', 'Change an API key', schema.updateTokenBody.partial({ id: true }), { 200: oneToken }),
    deleteToken,
    codesPage('/api/redemption/', 'List redemption codes'),
    codesPage('/api/redemption/search', 'Search codes by name or id'),
    createCodes,
    oneCodeById,
    updateCode,
    deleteCode,
  );
}
