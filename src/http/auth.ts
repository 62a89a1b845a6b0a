// The one auth layer: session cookie, system access token, sk- API key (or Basic for the board); role guards; CSRF.
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { findSessionUser, findTokenByKeyHash, findUserByAccessTokenHash, findUserByUsername, type TokenWithUser } from '../accounts/store.js';
import { USER_STATUS, type UserRow } from '../accounts/schema.js';
import { ipAllowed, isApiKey, isExhausted, isExpired } from '../accounts/tokens.js';
import { verifyPassword, burnVerification } from '../accounts/passwords.js';
import { sha256Hex } from '../secrets.js';
import { forbidden, tooManyRequests, unauthorized } from '../errors.js';
import type { LimitedKey } from './ratelimit.js';

export const SESSION_COOKIE = 'sy_session';

export interface AuthUser {
  id: number;
  username: string;
  role: number;
  status: number;
}

export interface Principal {
  user: AuthUser;
  via: 'session' | 'access_token' | 'api_key' | 'basic';
  /** The API key's row, when authenticated by one. */
  token?: TokenWithUser;
  /** SHA-256 of the session id, when authenticated by a session cookie. */
  sessionHash?: string;
}

declare module 'koa' {
  interface DefaultState {
    principal?: Principal;
    requestId?: string;
    log?: import('../log.js').Logger;
  }
}

const toAuthUser = (u: Pick<UserRow, 'id' | 'username' | 'role' | 'status'>): AuthUser => ({ id: u.id, username: u.username, role: u.role, status: u.status });

/** The client address, with IPv4-mapped IPv6 unwrapped. */
export function clientIp(ctx: Context): string {
  const ip = ctx.ip || ctx.req.socket.remoteAddress || '';
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

/** Looks up an sk- key (cached briefly); undefined when no such key exists. */
export async function lookupApiKey(p: Platform, key: string): Promise<TokenWithUser | undefined> {
  // Cached under the key itself: a hit costs no hashing on the hot path.
  const cacheKey = `key:${key}`;
  const cached = p.authCache.get(cacheKey) as TokenWithUser | undefined;
  if (cached) return cached;
  const row = await findTokenByKeyHash(p.db, sha256Hex(key));
  if (row) p.authCache.set(cacheKey, row);
  return row;
}

/** A token changed: forget every cached credential of this process (the rest expire within AUTH_CACHE_MS). */
export function forgetApiKeys(p: Platform) {
  p.authCache.clear();
}

function bearer(ctx: Context): string | undefined {
  const header = ctx.get('authorization').trim();
  if (!header) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header);
  if (m) return m[1]!.trim();
  if (/^Basic\s/i.test(header)) return undefined;
  return header;
}

/**
 * Finds who is calling. Presented-but-invalid credentials are a 401; no credentials is null.
 * A session cookie is only consulted when no Authorization header is sent.
 */
export async function resolvePrincipal(ctx: Context, p: Platform, opts: { allowBasic?: boolean } = {}): Promise<Principal | null> {
  const presented = bearer(ctx);
  if (presented) {
    if (presented.startsWith('sk-')) {
      const token = isApiKey(presented) ? await lookupApiKey(p, presented) : undefined;
      if (!token) throw unauthorized('Invalid API key', { code: 'invalid_api_key' });
      if (token.status !== 1) throw unauthorized('API key is disabled', { code: 'token_disabled' });
      if (isExpired(token)) throw unauthorized('API key has expired', { code: 'token_expired' });
      if (!ipAllowed(token.subnet, clientIp(ctx))) throw forbidden('This API key may not be used from your IP address', { code: 'ip_not_allowed' });
      return { via: 'api_key', token, user: { id: token.user_id, username: token.username, role: token.user_role, status: token.user_status } };
    }
    const cacheKey = `access:${presented}`;
    let user = p.authCache.get(cacheKey) as AuthUser | undefined;
    if (!user) {
      const row = await findUserByAccessTokenHash(p.db, sha256Hex(presented));
      if (!row) throw unauthorized('Invalid access token', { code: 'invalid_access_token' });
      user = toAuthUser(row);
      p.authCache.set(cacheKey, user);
    }
    return { via: 'access_token', user };
  }

  const authz = ctx.get('authorization');
  if (opts.allowBasic && /^Basic\s/i.test(authz)) return basicPrincipal(ctx, p, authz);

  const sid = ctx.cookies.get(SESSION_COOKIE, { signed: true });
  if (sid) {
    const sessionHash = sha256Hex(sid);
    const cacheKey = `session:${sessionHash}`;
    let user = p.authCache.get(cacheKey) as AuthUser | undefined;
    if (!user) {
      const row = await findSessionUser(p.db, sessionHash);
      if (!row) return null; // expired or revoked: treated as no session
      user = toAuthUser(row);
      p.authCache.set(cacheKey, user);
    }
    return { via: 'session', user, sessionHash };
  }
  return null;
}

async function basicPrincipal(ctx: Context, p: Platform, header: string): Promise<Principal> {
  const decoded = Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString('utf8');
  const sep = decoded.indexOf(':');
  const username = sep >= 0 ? decoded.slice(0, sep) : decoded;
  const password = sep >= 0 ? decoded.slice(sep + 1) : '';
  // Browsers resend Basic credentials on every request: remember a good pair briefly, not its hash cost.
  const cacheKey = `basic:${sha256Hex(`${username}\u0000${password}`)}`;
  const cached = p.basicCache.get(cacheKey);
  if (cached) return { via: 'basic', user: cached };
  const limiterKeys = loginLimits(ctx, p, username);
  const wait = await p.loginLimiter.retryAfter(limiterKeys);
  if (wait > 0) throw tooManyRequests('Too many failed logins; try again later', wait);
  const row = username ? await findUserByUsername(p.db, username) : undefined;
  const ok = row ? await verifyPassword(row.password_hash, password) : (await burnVerification(password), false);
  if (!row || !ok) {
    await p.loginLimiter.fail(limiterKeys);
    throw unauthorized('Invalid username or password', { code: 'invalid_credentials' });
  }
  const user = toAuthUser(row);
  p.basicCache.set(cacheKey, user);
  return { via: 'basic', user };
}

/** Failed-login counters: one per client address, one per username. */
export function loginLimits(ctx: Context, p: Platform, username: string): LimitedKey[] {
  return [
    { key: `ip:${clientIp(ctx)}`, max: p.config.LOGIN_MAX_FAILURES_PER_IP },
    { key: `user:${username.toLowerCase()}`, max: p.config.LOGIN_MAX_FAILURES },
  ];
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Cookie-authenticated writes must come from our own origin. Browsers send Origin on every
 * cross-site POST (and SameSite=Lax already withholds the cookie there); a request that carries
 * neither Origin nor Referer is not from a browser page and is let through.
 */
export function checkSameOrigin(ctx: Context, p: Platform): void {
  if (!UNSAFE.has(ctx.method)) return;
  const origin = ctx.get('origin') || refererOrigin(ctx.get('referer'));
  if (!origin) return;
  const own = `${ctx.protocol}://${ctx.host}`;
  if (origin === own || p.config.ALLOWED_ORIGINS.includes(origin)) return;
  throw forbidden(`Cross-origin request refused (Origin ${origin} is not ${own})`, { code: 'csrf_origin_mismatch' });
}

function refererOrigin(referer: string): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return 'null';
  }
}

/** Resolves and checks the caller: 401 without credentials, 403 when disabled or below `minRole`. */
export async function authorize(ctx: Context, p: Platform, minRole = 1, opts: { allowBasic?: boolean } = {}): Promise<Principal> {
  const principal = await resolvePrincipal(ctx, p, opts);
  if (!principal) throw unauthorized('Authentication required: log in, or send an access token or API key');
  if (principal.user.status !== USER_STATUS.enabled) throw forbidden('User is disabled', { code: 'user_disabled' });
  // Cookies and Basic credentials are sent by browsers on their own: those writes must be same-origin.
  if (principal.via === 'session' || principal.via === 'basic') checkSameOrigin(ctx, p);
  if (principal.user.role < minRole) throw forbidden('Insufficient role for this action', { code: 'insufficient_role' });
  ctx.state.principal = principal;
  return principal;
}

/**
 * The /v1 credential: an sk- API key only, checked the way one-api's relay does (401 for an
 * unusable key, 403 for a refused address or a disabled user), with OpenAI's error codes.
 */
export async function authorizeApiKey(ctx: Context, p: Platform): Promise<Principal> {
  const key = bearer(ctx);
  if (!key) {
    throw unauthorized("You didn't provide an API key. Send it in the Authorization header as: Authorization: Bearer sk-...", { code: 'missing_api_key', type: 'invalid_request_error' });
  }
  const token = isApiKey(key) ? await lookupApiKey(p, key) : undefined;
  const shown = key.length > 10 ? `${key.slice(0, 6)}****${key.slice(-4)}` : '****';
  if (!token) throw unauthorized(`Incorrect API key provided: ${shown}.`, { code: 'invalid_api_key', type: 'invalid_request_error' });
  if (token.status !== 1) throw unauthorized('This API key is disabled.', { code: 'token_disabled', type: 'invalid_request_error' });
  if (isExpired(token)) throw unauthorized('This API key has expired.', { code: 'token_expired', type: 'invalid_request_error' });
  if (isExhausted(token)) throw unauthorized('This API key has no quota left (remain_quota is 0 and it is not unlimited).', { code: 'token_exhausted', type: 'insufficient_quota' });
  if (!ipAllowed(token.subnet, clientIp(ctx))) throw forbidden('This API key may not be used from your IP address.', { code: 'ip_not_allowed', type: 'invalid_request_error' });
  if (token.user_status !== USER_STATUS.enabled) throw forbidden('The user of this API key is disabled.', { code: 'user_disabled', type: 'invalid_request_error' });
  const principal: Principal = { via: 'api_key', token, user: { id: token.user_id, username: token.username, role: token.user_role, status: token.user_status } };
  ctx.state.principal = principal;
  return principal;
}
