// Microsoft OAuth2 for mailboxes: refresh-token grants, access tokens cached in Redis, rotated refresh tokens saved.
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';
import { sha256Hex } from '../secrets.js';
import { saveRefreshToken } from './store.js';

interface TokenAnswer {
  access_token?: string;
  expires_in?: number | string;
  refresh_token?: string;
  error?: string;
  error_description?: string;
}

/** Tokens are dropped this long before they expire, so a connection never starts with a dying one. */
const EARLY_MS = 5 * 60_000;
const inFlight = new Map<string, Promise<string>>();

const cacheKey = (p: Platform, clientId: string, refreshToken: string) => p.keys.of('ms-token', sha256Hex(`${clientId}\u0000${refreshToken}`));

/**
 * An access token for IMAP/SMTP. Served from Redis while valid; otherwise one refresh-token
 * grant (concurrent callers share it). A refresh token Microsoft rotates is saved at once.
 */
export async function accessToken(p: Platform, account: { id: number; clientId: string; refreshToken: string }): Promise<string> {
  const key = cacheKey(p, account.clientId, account.refreshToken);
  const cached = await p.redis.get(key).catch(() => null);
  if (cached) return cached;
  let pending = inFlight.get(key);
  if (!pending) {
    pending = grant(p, account, key).finally(() => inFlight.delete(key));
    inFlight.set(key, pending);
  }
  return pending;
}

async function grant(p: Platform, account: { id: number; clientId: string; refreshToken: string }, key: string): Promise<string> {
  const { accessToken, refreshToken } = await grantTokens(p, account, key);
  if (refreshToken !== account.refreshToken) await saveRefreshToken(p.db, p.secrets, account.id, account.clientId, refreshToken);
  return accessToken;
}

/** One refresh-token grant: the access token (cached in Redis) and the refresh token to keep (rotated, or the same). */
async function grantTokens(
  p: Platform,
  account: { clientId: string; refreshToken: string },
  key: string,
): Promise<{ accessToken: string; refreshToken: string }> {
  const body = new URLSearchParams({ client_id: account.clientId, grant_type: 'refresh_token', refresh_token: account.refreshToken });
  if (p.config.MS_TOKEN_SCOPE) body.set('scope', p.config.MS_TOKEN_SCOPE);
  let res: Response;
  try {
    res = await fetch(p.config.MS_TOKEN_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(Math.min(p.config.MAIL_TIMEOUT_MS, 30_000)),
    });
  } catch (err) {
    const timeout = (err as Error).name === 'TimeoutError';
    throw new AppError(timeout ? 504 : 502, `The token endpoint ${timeout ? 'did not answer in time' : `could not be reached (${(err as Error).message})`}`, {
      code: timeout ? 'token_timeout' : 'token_unreachable',
      retriable: true,
    });
  }
  const answer = (await res.json().catch(() => ({}))) as TokenAnswer;
  if (!res.ok || !answer.access_token) {
    const reason = answer.error_description?.split('\n')[0] ?? answer.error ?? `HTTP ${res.status}`;
    // 4xx (invalid_grant: expired, revoked, wrong client) will not heal by retrying; 5xx might.
    throw new AppError(502, `Microsoft refused the refresh token: ${reason}`, { code: 'oauth_refused', retriable: res.status >= 500 || res.status === 429 });
  }
  const ttl = Number(answer.expires_in ?? 3600) * 1000 - EARLY_MS;
  if (ttl > 0) {
    // Cached under the refresh token the caller used and, after a rotation, the new one too.
    await p.redis.set(key, answer.access_token, 'PX', ttl).catch(() => {});
    if (answer.refresh_token) await p.redis.set(cacheKey(p, account.clientId, answer.refresh_token), answer.access_token, 'PX', ttl).catch(() => {});
  }
  return { accessToken: answer.access_token, refreshToken: answer.refresh_token || account.refreshToken };
}

/**
 * One refresh-token grant whatever the cache holds (a cached access token says nothing of whether the refresh token
 * still works): refused, it throws as accessToken does; accepted, its access token is cached, and the refresh token to
 * keep (what Microsoft rotated it to, or the same) is answered for the caller to store: nothing is written to an
 * account here.
 */
export async function tryRefreshToken(p: Platform, account: { clientId: string; refreshToken: string }): Promise<string> {
  return (await grantTokens(p, account, cacheKey(p, account.clientId, account.refreshToken))).refreshToken;
}

/** Forgets a cached token the server refused (revoked early, or scopes changed). */
export async function forgetAccessToken(p: Platform, account: { clientId: string; refreshToken: string }): Promise<void> {
  await p.redis.del(cacheKey(p, account.clientId, account.refreshToken)).catch(() => {});
}
