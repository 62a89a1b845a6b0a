// Credentials from the request (Authorization header, session cookie, Basic), handed to the accounts
// authenticator; role guards; the same-origin rule for cookie-authenticated writes.
import type { Context } from 'koa';
import { type Principal, userOfToken } from '../accounts/auth.js';
import { USER_STATUS } from '../accounts/schema.js';
import { bareAddress } from '../client-address.js';
import { hasLimits, ipAllowed, isExhausted, isExpired } from '../accounts/tokens.js';
import { forbidden, unauthorized } from '../errors.js';
import type { Platform } from '../platform.js';

export const SESSION_COOKIE = 'sy_session';

declare module 'koa' {
  interface DefaultState {
    principal?: Principal;
    requestId?: string;
    /** performance.now() when the request arrived (the elapsed_time of a call's log row counts from it). */
    startedAt?: number;
    log?: import('../log.js').Logger;
  }
}

/** The client address, without a port a proxy wrote with it, and with IPv4-mapped IPv6 unwrapped. */
export function clientIp(ctx: Context): string {
  return bareAddress(ctx.ip || ctx.req.socket.remoteAddress || '');
}

/** Who makes a password attempt, for the login limiter. */
export const attemptOf = (ctx: Context) => ({ ip: clientIp(ctx), userAgent: ctx.get('user-agent') });

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
      const token = await p.auth.apiKey(presented);
      if (!token) throw unauthorized('Invalid API key', { code: 'invalid_api_key' });
      if (token.status !== 1) throw unauthorized('API key is disabled', { code: 'token_disabled' });
      if (isExpired(token)) throw unauthorized('API key has expired', { code: 'token_expired' });
      if (!ipAllowed(token.subnet, clientIp(ctx))) throw forbidden('This API key may not be used from your IP address', { code: 'ip_not_allowed' });
      return { via: 'api_key', token, user: userOfToken(token) };
    }
    const user = await p.auth.accessToken(presented);
    if (!user) throw unauthorized('Invalid access token', { code: 'invalid_access_token' });
    return { via: 'access_token', user };
  }

  const authz = ctx.get('authorization');
  if (opts.allowBasic && /^Basic\s/i.test(authz)) {
    const decoded = Buffer.from(authz.replace(/^Basic\s+/i, ''), 'base64').toString('utf8');
    const sep = decoded.indexOf(':');
    const username = sep >= 0 ? decoded.slice(0, sep) : decoded;
    const password = sep >= 0 ? decoded.slice(sep + 1) : '';
    return { via: 'basic', user: await p.auth.basic(username, password, attemptOf(ctx)) };
  }

  const sid = ctx.cookies.get(SESSION_COOKIE, { signed: true });
  if (sid) {
    const session = await p.auth.session(sid);
    // Expired or ended: treated as no session.
    return session ? { via: 'session', user: session.user, sessionHash: session.sessionHash } : null;
  }
  return null;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A state change authenticated by what a browser sends on its own (the session cookie, Basic
 * credentials) must come from our own origin (or ALLOWED_ORIGINS). That covers GETs that change
 * state too (`changesState`): SameSite=Lax still sends the cookie on a top-level cross-site GET.
 * Refused: a foreign Origin or Referer, or `Sec-Fetch-Site: cross-site` or `same-site` (whatever Origin says,
 * unless it is one of ALLOWED_ORIGINS). A request with none of these headers is not from a browser page and is let
 * through.
 */
export function checkSameOrigin(ctx: Context, p: Platform, changesState = UNSAFE.has(ctx.method)): void {
  if (!changesState) return;
  const own = `${ctx.protocol}://${ctx.host}`;
  const origin = ctx.get('origin') || refererOrigin(ctx.get('referer'));
  const allowed = origin !== undefined && p.config.ALLOWED_ORIGINS.includes(origin);
  if (origin && origin !== own && !allowed) {
    throw forbidden(`Cross-origin request refused (Origin ${origin} is not ${own})`, { code: 'csrf_origin_mismatch' });
  }
  // The browser's own word wins over an Origin that claims to be ours (only ALLOWED_ORIGINS may be another site).
  // Sent twice, Node joins the values with commas: any one of them saying another site counts.
  const site = ctx.get('sec-fetch-site').toLowerCase();
  const foreign = site
    .split(',')
    .map((v) => v.trim())
    .find((v) => v === 'cross-site' || v === 'same-site');
  if (foreign && !allowed) {
    throw forbidden(`Cross-site request refused (Sec-Fetch-Site: ${foreign}): this action must come from ${own}`, { code: 'csrf_origin_mismatch' });
  }
}

function refererOrigin(referer: string): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return 'null';
  }
}

export interface AuthorizeOptions {
  /** HTTP Basic is accepted (Bull Board). */
  allowBasic?: boolean;
  /** A GET that changes state (rotates a token, empties a mailbox, sends mail): same-origin rule applies. */
  changesState?: boolean;
}

/** Resolves and checks the caller: 401 without credentials, 403 when disabled or below `minRole`. */
export async function authorize(ctx: Context, p: Platform, minRole = 1, opts: AuthorizeOptions = {}): Promise<Principal> {
  const principal = await resolvePrincipal(ctx, p, opts);
  if (!principal) throw unauthorized('Authentication required: log in, or send an access token or API key');
  if (principal.user.status !== USER_STATUS.enabled) throw forbidden('User is disabled', { code: 'user_disabled' });
  // Cookies and Basic credentials are sent by browsers on their own: their state changes must be same-origin.
  if (principal.via === 'session' || principal.via === 'basic') checkSameOrigin(ctx, p, opts.changesState || UNSAFE.has(ctx.method));
  // An API key with limits of its own (hasLimits) is a credential for the relay, as one-api's tokens are: it reaches
  // /v1 (authorizeApiKey) and nothing here. Acting as its user anywhere under /api (their mail, their other keys,
  // their account, admin work) would reach past the limits it was given. A key without limits acts as its user.
  if (principal.via === 'api_key' && principal.token && hasLimits(principal.token)) {
    throw forbidden(
      'This API key has limits of its own (quota, models, subnet or expiry), so it may only call /v1 (embeddings and models); for /api sign in, or use the access token or a key without limits',
      { code: 'key_has_limits' },
    );
  }
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
    throw unauthorized("You didn't provide an API key. Send it in the Authorization header as: Authorization: Bearer sk-...", {
      code: 'missing_api_key',
      type: 'invalid_request_error',
    });
  }
  const token = await p.auth.apiKey(key);
  const shown = key.length > 10 ? `${key.slice(0, 6)}****${key.slice(-4)}` : '****';
  if (!token) throw unauthorized(`Incorrect API key provided: ${shown}.`, { code: 'invalid_api_key', type: 'invalid_request_error' });
  if (token.status !== 1) throw unauthorized('This API key is disabled.', { code: 'token_disabled', type: 'invalid_request_error' });
  if (isExpired(token)) throw unauthorized('This API key has expired.', { code: 'token_expired', type: 'invalid_request_error' });
  if (isExhausted(token))
    throw unauthorized('This API key has no quota left (remain_quota is 0 and it is not unlimited).', { code: 'token_exhausted', type: 'insufficient_quota' });
  if (!ipAllowed(token.subnet, clientIp(ctx)))
    throw forbidden('This API key may not be used from your IP address.', { code: 'ip_not_allowed', type: 'invalid_request_error' });
  if (token.user_status !== USER_STATUS.enabled)
    throw forbidden('The user of this API key is disabled.', { code: 'user_disabled', type: 'invalid_request_error' });
  const principal: Principal = {
    via: 'api_key',
    token,
    user: userOfToken(token),
  };
  ctx.state.principal = principal;
  return principal;
}
