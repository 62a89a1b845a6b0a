// HTTP routes of accounts: login/sessions, users, API tokens, redemption codes (one-api paths and envelope).
import type { Context } from 'koa';
import { z } from 'zod';
import type { Platform } from '../platform.js';
import type { Principal } from './auth.js';
import { attemptOf, authorize, checkSameOrigin, SESSION_COOKIE } from '../http/auth.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { ApiRouter, envelopeOf, ok } from '../http/route.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import { parse } from '../validate.js';
import { randomAlnum, randomHex, sha256Hex } from '../secrets.js';
import { hashPassword, verifyPassword } from './passwords.js';
import * as schema from './schema.js';
import { ROLE, USER_STATUS } from './schema.js';
import * as store from './store.js';
import { generateApiKey, isExhausted, isExpired, nowSeconds, publicToken } from './tokens.js';
import { adminActionEntry, describeChanges, userChangedEntries, userCreatedEntries, userDeletedEntry } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';
import { disableChannelsOfMaker } from '../channels/store.js';

export function accountsRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Users');
  // API processes give back the quota reservations of calls whose process died (src/accounts/ledger.ts).
  p.ledger.startSweeping(p.log);
  const oneUser = ok('envelope with the user', envelopeOf(schema.userView));
  const oneToken = ok('envelope with the token (key masked)', envelopeOf(schema.tokenView));
  const oneCode = ok('envelope with the code', envelopeOf(schema.redemptionView));
  const TOKENS = 'Tokens';
  const CODES = 'Redemption codes';
  const admin = async (ctx: Context) => authorize(ctx, p, ROLE.admin);
  const user = async (ctx: Context) => authorize(ctx, p, ROLE.common);
  const id = (ctx: Context) => parse(schema.idParam, ctx.params.id, { param: 'id' });

  // ---- sessions ------------------------------------------------------------------------------

  const login = {
    method: 'post',
    path: '/api/user/login',
    summary: 'Log in: sets the sy_session cookie',
    auth: 'none',
    body: schema.loginBody,
    responses: { 200: oneUser, 401: 'wrong username or password', 403: 'user disabled', 429: 'too many failed logins (Retry-After)' },
  } as const;
  router.endpoint(login, async (ctx) => {
    // Login CSRF: a foreign page must not sign a browser into an account of its choosing.
    checkSameOrigin(ctx, p);
    const { username, password } = parse(schema.loginBody, ctx.request.body ?? {});
    const { user: row, sid, expiresAt } = await p.auth.login(username, password, attemptOf(ctx));
    ctx.cookies.set(SESSION_COOKIE, sid, { httpOnly: true, sameSite: 'lax', signed: true, secure: ctx.secure, expires: expiresAt, overwrite: true });
    envelope(ctx, store.publicUser(row));
  });

  router.endpoint({ method: 'get', path: '/api/user/logout', summary: 'End the session', auth: 'none', responses: { 200: 'envelope' } }, async (ctx) => {
    // A GET that ends the session: a cross-site page must not log people out.
    checkSameOrigin(ctx, p, true);
    // The cookie's session ends whatever else the request carries (a bad Authorization header too).
    const sid = ctx.cookies.get(SESSION_COOKIE, { signed: true });
    if (sid) await p.auth.logout(sha256Hex(sid));
    ctx.cookies.set(SESSION_COOKIE, null, { signed: true });
    envelope(ctx);
  });

  // ---- the caller ----------------------------------------------------------------------------

  router.endpoint({ method: 'get', path: '/api/user/self', summary: 'The caller', auth: 'user', responses: { 200: oneUser } }, async (ctx) => {
    const { user: me } = await user(ctx);
    const row = await store.getUser(p.db, me.id);
    if (!row) throw notFound('User not found');
    envelope(ctx, store.publicUser(row));
  });

  const updateSelf = {
    method: 'put',
    path: '/api/user/self',
    summary: 'Change own display name, email or password',
    auth: 'user',
    body: schema.updateSelfBody,
    responses: { 200: oneUser },
  } as const;
  router.endpoint(updateSelf, async (ctx) => {
    const principal = await user(ctx);
    const body = parse(schema.updateSelfBody, ctx.request.body ?? {});
    const row = (await store.getUser(p.db, principal.user.id))!;
    const patch: Parameters<typeof store.updateUser>[2] = {};
    if (body.display_name !== undefined) patch.display_name = body.display_name;
    if (body.email !== undefined) patch.email = body.email || null;
    if (body.password !== undefined) {
      if (!body.original_password) {
        throw badRequest('original_password: the current password is required to set a new one', { param: 'original_password' });
      }
      if (!(await verifyPassword(row.password_hash, body.original_password))) {
        throw badRequest('original_password: that is not your current password', { param: 'original_password' });
      }
      patch.password_hash = await hashPassword(body.password);
    }
    const updated = await p.db.transaction(async (trx) => {
      const changed = await store.updateUser(trx, row.id, patch);
      if (patch.password_hash) {
        // A new password ends every other way in: other sessions, and the access token.
        await store.deleteUserSessions(trx, row.id, principal.sessionHash);
        await store.setAccessTokenHash(trx, row.id, null);
      }
      return changed;
    });
    if (patch.password_hash) p.auth.forgetUser(row.id);
    envelope(ctx, store.publicUser(updated!));
  });

  /** Makes (and rotates) the caller's system access token for scripts; shown only here. */
  const accessToken = {
    method: 'get',
    path: '/api/user/token',
    summary: 'Make (rotate) the system access token',
    auth: 'user',
    responses: { 200: ok('envelope with the token', envelopeOf(z.string())) },
  } as const;
  router.endpoint(accessToken, async (ctx) => {
    const { user: me } = await authorize(ctx, p, ROLE.common, { changesState: true });
    const token = randomAlnum(32);
    await store.setAccessTokenHash(p.db, me.id, sha256Hex(token));
    p.auth.forgetUser(me.id);
    envelope(ctx, token);
  });

  const topup = {
    method: 'post',
    path: '/api/user/topup',
    tag: CODES,
    summary: 'Credit a redemption code to the caller',
    auth: 'user',
    body: schema.topupBody,
    responses: { 200: ok('envelope with the quota credited', envelopeOf(z.number())), 400: 'used, disabled or unknown code' },
  } as const;
  router.endpoint(topup, async (ctx) => {
    const { user: me } = await user(ctx);
    const { key } = parse(schema.topupBody, ctx.request.body ?? {});
    const outcome = await store.redeemCode(p.db, key, me.id);
    if (!outcome.ok) {
      const message = {
        unknown: 'Invalid redemption code',
        used: 'This redemption code has already been used',
        disabled: 'This redemption code is disabled',
        too_much: `This code would take your quota past ${Number.MAX_SAFE_INTEGER}, the largest a balance can hold; it was not used`,
      }[outcome.reason];
      throw badRequest(message, { code: `redemption_${outcome.reason}` });
    }
    envelope(ctx, outcome.quota);
  });

  // ---- users (admin) -------------------------------------------------------------------------

  const users = ok('envelope with users; X-Total-Count', envelopeOf(z.array(schema.userView)));
  router.endpoint({ method: 'get', path: '/api/user/', summary: 'List users', auth: 'admin', query: schema.pageQuery, responses: { 200: users } }, listUsers);
  router.endpoint(
    { method: 'get', path: '/api/user/search', summary: 'Search users', auth: 'admin', query: schema.pageQuery, responses: { 200: users } },
    listUsers,
  );
  async function listUsers(ctx: Context) {
    const principal = await admin(ctx);
    const q = parse(schema.pageQuery, ctx.query);
    // An admin sees the users below their role (root sees everyone), as for a single user.
    const belowRole = principal.user.role >= ROLE.root ? undefined : principal.user.role;
    const { rows, total } = await store.listUsers(p.db, { offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword, belowRole });
    envelopeList(ctx, rows.map(store.publicUser), total);
  }

  const createUser = {
    method: 'post',
    path: '/api/user/',
    summary: 'Create a user (role below your own)',
    auth: 'admin',
    body: schema.createUserBody,
    responses: { 201: oneUser, 400: 'invalid', 403: 'role too high', 409: 'username taken' },
  } as const;
  router.endpoint(createUser, async (ctx) => {
    const principal = await admin(ctx);
    const body = parse(schema.createUserBody, ctx.request.body ?? {});
    if (body.role >= principal.user.role) {
      throw forbidden('Cannot create a user with a role equal to or above your own', { code: 'role_too_high' });
    }
    const passwordHash = await hashPassword(body.password);
    const row = await p.db.transaction(async (trx) => {
      const created = await store.createUser(trx, body, passwordHash);
      await insertLogs(trx, userCreatedEntries(principal.user, created));
      return created;
    });
    envelope(ctx, store.publicUser(row), 201);
  });

  router.endpoint({ method: 'get', path: '/api/user/:id', summary: 'One user', auth: 'admin', responses: { 200: oneUser, 404: 'unknown' } }, async (ctx) => {
    const principal = await admin(ctx);
    const target = await visibleUser(principal, id(ctx));
    envelope(ctx, store.publicUser(target));
  });

  const updateUser = async (ctx: Context, targetId: number | undefined) => {
    const principal = await admin(ctx);
    const body = parse(schema.updateUserBody, ctx.request.body ?? {});
    const userId = targetId ?? body.id;
    if (!userId) throw badRequest('id: is required', { param: 'id' });
    if (userId === principal.user.id) throw forbidden('Use PUT /api/user/self to change your own account', { code: 'self_update' });
    const target = await visibleUser(principal, userId);
    if (target.role >= principal.user.role) throw forbidden('Cannot change a user whose role is equal to or above your own', { code: 'role_too_high' });
    if (body.role !== undefined && body.role >= principal.user.role) {
      throw forbidden('Cannot give a role equal to or above your own', { code: 'role_too_high' });
    }
    const patch: Parameters<typeof store.updateUser>[2] = {};
    if (body.username !== undefined) patch.username = body.username;
    if (body.display_name !== undefined) patch.display_name = body.display_name;
    if (body.email !== undefined) patch.email = body.email || null;
    if (body.role !== undefined) patch.role = body.role;
    if (body.quota !== undefined) patch.quota = body.quota;
    if (body.status !== undefined) patch.status = body.status;
    if (body.password) patch.password_hash = await hashPassword(body.password);
    const updated = await p.db.transaction(async (trx) => {
      const row = await store.updateUser(trx, userId, patch);
      // A new password or a disabled account ends the user's sessions.
      if (patch.password_hash || patch.status === USER_STATUS.disabled) await store.deleteUserSessions(trx, userId);
      // A quota change as a top-up row, the rest as a manage row, on the user's rows (never the password).
      if (row) await insertLogs(trx, userChangedEntries(principal.user, target, row, !!patch.password_hash));
      return row;
    });
    p.auth.forgetUser(userId);
    envelope(ctx, store.publicUser(updated!));
  };
  router.endpoint(
    { method: 'put', path: '/api/user/', summary: 'Change a user (id in the body)', auth: 'admin', body: schema.updateUserBody, responses: { 200: oneUser } },
    (ctx) => updateUser(ctx, undefined),
  );
  router.endpoint(
    {
      method: 'put',
      path: '/api/user/:id',
      summary: 'Change a user',
      auth: 'admin',
      body: schema.updateUserBody,
      responses: { 200: oneUser, 403: 'role too high' },
    },
    (ctx) => updateUser(ctx, id(ctx)),
  );

  router.endpoint(
    { method: 'delete', path: '/api/user/:id', summary: 'Delete a user', auth: 'admin', responses: { 200: 'envelope', 404: 'unknown' } },
    async (ctx) => {
      const principal = await admin(ctx);
      const target = await visibleUser(principal, id(ctx));
      if (target.id === principal.user.id) throw forbidden('You cannot delete yourself', { code: 'self_delete' });
      if (target.role >= principal.user.role) throw forbidden('Cannot delete a user whose role is equal to or above your own', { code: 'role_too_high' });
      await p.db.transaction(async (trx) => {
        await disableChannelsOfMaker(trx, target.id);
        await store.deleteUser(trx, target.id);
        await insertLogs(trx, [userDeletedEntry(principal.user, target)]);
      });
      p.auth.forgetUser(target.id);
      envelope(ctx);
    },
  );

  /** Admins see users below their role (and themselves); root sees everyone. */
  async function visibleUser(principal: Principal, userId: number) {
    const target = await store.getUser(p.db, userId);
    if (!target) throw notFound('User not found');
    const mayView = principal.user.role >= ROLE.root || target.id === principal.user.id || target.role < principal.user.role;
    if (!mayView) throw forbidden('Cannot view a user whose role is equal to or above your own', { code: 'role_too_high' });
    return target;
  }

  // ---- API tokens (owner only) ---------------------------------------------------------------

  const tokens = ok('envelope with tokens (keys masked); X-Total-Count', envelopeOf(z.array(schema.tokenView)));
  router.endpoint(
    {
      method: 'get',
      path: '/api/token/',
      tag: TOKENS,
      summary: "The caller's API keys (masked)",
      auth: 'user',
      query: schema.pageQuery,
      responses: { 200: tokens },
    },
    listTokens,
  );
  const searchTokens = {
    method: 'get',
    path: '/api/token/search',
    tag: TOKENS,
    summary: "Search the caller's API keys by name",
    auth: 'user',
    query: schema.pageQuery,
    responses: { 200: tokens },
  } as const;
  router.endpoint(searchTokens, listTokens);
  async function listTokens(ctx: Context) {
    const { user: me } = await user(ctx);
    const q = parse(schema.pageQuery, ctx.query);
    const { rows, total } = await store.listTokens(p.db, me.id, { offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword });
    envelopeList(
      ctx,
      rows.map((t) => publicToken(t)),
      total,
    );
  }

  const createToken = {
    method: 'post',
    path: '/api/token/',
    tag: TOKENS,
    summary: 'Create an API key: the whole sk- key is in this answer only',
    auth: 'user',
    body: schema.createTokenBody,
    responses: { 201: ok('envelope with the token and its whole key', envelopeOf(schema.tokenView)), 400: 'invalid' },
  } as const;
  router.endpoint(createToken, async (ctx) => {
    const { user: me } = await user(ctx);
    const body = parse(schema.createTokenBody, ctx.request.body ?? {});
    if (body.expired_time !== -1 && body.expired_time <= nowSeconds()) {
      throw badRequest('expired_time: is in the past (use -1 for a token that never expires)', { param: 'expired_time' });
    }
    const { key, hash, hint } = generateApiKey();
    const row = await store.createToken(p.db, me.id, body, hash, hint);
    // The whole key, once: only its hash is kept.
    envelope(ctx, publicToken(row, key), 201);
  });

  const oneTokenSpec = {
    method: 'get',
    path: '/api/token/:id',
    tag: TOKENS,
    summary: 'One API key (masked)',
    auth: 'user',
    responses: { 200: oneToken, 404: 'unknown or not yours' },
  } as const;
  router.endpoint(oneTokenSpec, async (ctx) => {
    const { user: me } = await user(ctx);
    const row = await store.getToken(p.db, me.id, id(ctx));
    if (!row) throw notFound('Token not found');
    envelope(ctx, publicToken(row));
  });

  const updateToken = async (ctx: Context, tokenId: number | undefined) => {
    const { user: me } = await user(ctx);
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    const body = parse(schema.updateTokenBody, { ...raw, id: tokenId ?? raw.id });
    const current = await store.getToken(p.db, me.id, body.id);
    if (!current) throw notFound('Token not found');
    const statusOnly = ['1', 'true'].includes(String(ctx.query.status_only ?? ''));
    const settable = body.status === 1 || body.status === 2 ? body.status : undefined;
    if (statusOnly && settable === undefined) throw badRequest('status: must be 1 (enabled) or 2 (disabled)', { param: 'status' });
    const { id: _id, ...fields } = body;
    const patch: Partial<Omit<schema.UpdateTokenInput, 'id'>> = compact(statusOnly ? { status: settable } : { ...fields, status: settable });
    if (patch.expired_time !== undefined && patch.expired_time !== -1 && patch.expired_time <= nowSeconds()) {
      throw badRequest('expired_time: is in the past (use -1 for a token that never expires)', { param: 'expired_time' });
    }
    const next = { ...current, ...patch } as typeof current;
    // Enabling is refused while the token, as it would be after this change, is expired or exhausted: whatever its
    // stored status (3 and 4 are computed, so one never disabled is stored as 1).
    if (patch.status === 1) {
      if (isExpired(next)) throw badRequest('This token has expired; extend expired_time before enabling it', { code: 'token_expired' });
      if (isExhausted(next))
        throw badRequest('This token has no quota left; raise remain_quota or set unlimited_quota before enabling it', { code: 'token_exhausted' });
    }
    // Nothing to change (e.g. only fields a client echoes back: key, used_quota…): the token as it is.
    const row = Object.keys(patch).length ? await store.updateToken(p.db, me.id, body.id, patch) : current;
    p.auth.forgetUser(me.id);
    envelope(ctx, publicToken(row!));
  };
  const updateTokenSpec = {
    method: 'put',
    path: '/api/token/',
    tag: TOKENS,
    summary: 'Change an API key (id in the body; ?status_only=1 changes only status)',
    auth: 'user',
    body: schema.updateTokenBody,
    responses: { 200: oneToken, 400: 'cannot enable while expired or exhausted' },
  } as const;
  router.endpoint(updateTokenSpec, (ctx) => updateToken(ctx, undefined));
  router.endpoint(
    {
      method: 'put',
      path: '/api/token/:id',
      tag: TOKENS,
      summary: 'Change an API key',
      auth: 'user',
      body: schema.updateTokenBody.partial({ id: true }),
      responses: { 200: oneToken },
    },
    (ctx) => updateToken(ctx, id(ctx)),
  );

  const deleteTokenSpec = {
    method: 'delete',
    path: '/api/token/:id',
    tag: TOKENS,
    summary: 'Delete an API key',
    auth: 'user',
    responses: { 200: 'envelope', 404: 'unknown or not yours' },
  } as const;
  router.endpoint(deleteTokenSpec, async (ctx) => {
    const { user: me } = await user(ctx);
    const row = await store.getToken(p.db, me.id, id(ctx));
    if (!row) throw notFound('Token not found');
    await store.deleteToken(p.db, me.id, row.id);
    p.auth.forgetUser(me.id);
    envelope(ctx);
  });

  // ---- redemption codes (admin) --------------------------------------------------------------

  const codes = ok('envelope with codes; X-Total-Count', envelopeOf(z.array(schema.redemptionView)));
  router.endpoint(
    {
      method: 'get',
      path: '/api/redemption/',
      tag: CODES,
      summary: 'List redemption codes',
      auth: 'admin',
      query: schema.pageQuery,
      responses: { 200: codes },
    },
    listRedemptions,
  );
  const searchCodes = {
    method: 'get',
    path: '/api/redemption/search',
    tag: CODES,
    summary: 'Search codes by name or id',
    auth: 'admin',
    query: schema.pageQuery,
    responses: { 200: codes },
  } as const;
  router.endpoint(searchCodes, listRedemptions);
  async function listRedemptions(ctx: Context) {
    const principal = await admin(ctx);
    const q = parse(schema.pageQuery, ctx.query);
    const { rows, total } = await store.listRedemptions(p.db, principal.user, { offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword });
    envelopeList(ctx, rows, total);
  }

  const createCodes = {
    method: 'post',
    path: '/api/redemption/',
    tag: CODES,
    summary: 'Create 1-100 codes',
    auth: 'admin',
    body: schema.createRedemptionBody,
    responses: { 201: ok('envelope with the codes', envelopeOf(z.array(z.string()))) },
  } as const;
  router.endpoint(createCodes, async (ctx) => {
    const principal = await admin(ctx);
    const body = parse(schema.createRedemptionBody, ctx.request.body ?? {});
    const keys = Array.from({ length: body.count }, () => randomHex(16));
    const rows = await p.db.transaction(async (trx) => {
      const made = await store.createRedemptions(trx, principal.user.id, body.name, body.quota, keys);
      // The codes' ids, never the codes.
      const ids = made.map((r) => r.id);
      const range = ids.length === 1 ? `#${ids[0]}` : `#${Math.min(...ids)}-#${Math.max(...ids)}`;
      await insertLogs(trx, [
        adminActionEntry(principal.user, `Created ${made.length} redemption code(s) ${range} "${body.name}" worth ${body.quota} quota each`),
      ]);
      return made;
    });
    envelope(
      ctx,
      rows.map((r) => r.key),
      201,
    );
  });

  router.endpoint(
    { method: 'get', path: '/api/redemption/:id', tag: CODES, summary: 'One code', auth: 'admin', responses: { 200: oneCode, 404: 'unknown' } },
    async (ctx) => {
      const principal = await admin(ctx);
      const row = await store.getRedemption(p.db, principal.user, id(ctx));
      if (!row) throw notFound('Redemption code not found');
      envelope(ctx, row);
    },
  );

  const updateCode = {
    method: 'put',
    path: '/api/redemption/',
    tag: CODES,
    summary: 'Rename, re-price, enable or disable a code',
    auth: 'admin',
    body: schema.updateRedemptionBody,
    responses: { 200: oneCode },
  } as const;
  router.endpoint(updateCode, async (ctx) => {
    const principal = await admin(ctx);
    const body = parse(schema.updateRedemptionBody, ctx.request.body ?? {});
    const current = await store.getRedemption(p.db, principal.user, body.id);
    if (!current) throw notFound('Redemption code not found');
    if (current.status === schema.REDEMPTION_STATUS.used) throw badRequest('This redemption code has already been used', { code: 'redemption_used' });
    const statusOnly = ['1', 'true'].includes(String(ctx.query.status_only ?? ''));
    const { id: _id, ...fields } = body;
    const patch = compact(statusOnly ? { status: body.status } : fields);
    const row = Object.keys(patch).length ? await store.updateRedemption(p.db, principal.user, body.id, patch) : current;
    const changes = row ? describeChanges(current, row, ['name', 'quota', 'status']) : [];
    if (changes.length) await insertLogs(p.db, [adminActionEntry(principal.user, `Changed redemption code #${current.id}: ${changes.join(', ')}`)]);
    envelope(ctx, row);
  });

  router.endpoint(
    { method: 'delete', path: '/api/redemption/:id', tag: CODES, summary: 'Delete a code', auth: 'admin', responses: { 200: 'envelope', 404: 'unknown' } },
    async (ctx) => {
      const principal = await admin(ctx);
      const codeId = id(ctx);
      const deleted = await store.deleteRedemption(p.db, principal.user, codeId);
      if (!deleted) throw notFound('Redemption code not found');
      await insertLogs(p.db, [adminActionEntry(principal.user, `Deleted redemption code #${codeId}`)]);
      envelope(ctx);
    },
  );

  return router;
}

/** Drops undefined fields, so a partial update touches only what was sent. */
function compact<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
