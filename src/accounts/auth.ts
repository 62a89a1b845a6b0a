// The one authenticator: finds users by credential (cached briefly), checks passwords behind the login limiter,
// makes and ends sessions, forgets a user's cached credentials, and creates root on first start.
import crypto from 'node:crypto';
import { TtlCache } from '../cache.js';
import { addressLimitKey } from '../client-address.js';
import type { Config } from '../config.js';
import type { Db } from '../db.js';
import { tooManyRequests, unauthorized, forbidden } from '../errors.js';
import type { Logger } from '../log.js';
import { AttemptLimiter, type Counted } from '../ratelimit.js';
import { redisKeys, type Redis } from '../redis.js';
import { randomAlnum, sha256Hex } from '../secrets.js';
import { burnVerification, hashPassword, verifyPassword } from './passwords.js';
import { USER_STATUS, type UserRow, usernameKey } from './schema.js';
import * as store from './store.js';
import { isApiKey } from './tokens.js';

export interface AuthUser {
  id: number;
  username: string;
  role: number;
  status: number;
  /** Their group (users.group), read with the user: which channels their calls take, at which price ratio. */
  group: string;
}

export interface Principal {
  user: AuthUser;
  via: 'session' | 'access_token' | 'api_key' | 'basic';
  /** The API key's row, when authenticated by one. */
  token?: store.TokenWithUser;
  /** SHA-256 of the session id, when authenticated by a session cookie. */
  sessionHash?: string;
}

/** Who attempts a password check: the limiter counts per client address, per (username, address) and per username. */
export interface Attempt {
  ip: string;
  userAgent?: string;
}

type Cached = { userId: number; user: AuthUser; token?: store.TokenWithUser; passwordHash?: string };

const toAuthUser = (u: Pick<UserRow, 'id' | 'username' | 'role' | 'status' | 'group'>): AuthUser => ({
  id: u.id,
  username: u.username,
  role: u.role,
  status: u.status,
  group: u.group,
});

/** The user of an API key, as its row (read with its user) has them. */
export const userOfToken = (t: store.TokenWithUser): AuthUser => ({
  id: t.user_id,
  username: t.username,
  role: t.user_role,
  status: t.user_status,
  group: t.user_group,
});

export class Authenticator {
  /** Credential lookups (API keys, access tokens, sessions), kept for AUTH_CACHE_MS. */
  private readonly lookups: TtlCache<Cached>;
  /** Verified HTTP Basic pairs (Bull Board): browsers resend them on every request. */
  private readonly basicPairs = new TtlCache<Cached>(60_000, 1_000);
  private readonly limiter: AttemptLimiter;

  constructor(
    private readonly config: Config,
    private readonly db: Db,
    redis: Redis,
  ) {
    this.lookups = new TtlCache(config.AUTH_CACHE_MS);
    const keys = redisKeys(config);
    this.limiter = new AttemptLimiter(redis, (key) => keys.of('login-failures', key), config.LOGIN_WINDOW_SECONDS);
  }

  /** An sk- key's row with its user; undefined when no such key exists. Cached under the key itself: a hit costs no hashing. */
  async apiKey(key: string): Promise<store.TokenWithUser | undefined> {
    if (!isApiKey(key)) return undefined;
    const cacheKey = `key:${key}`;
    const cached = this.lookups.get(cacheKey);
    if (cached) return cached.token;
    const row = await store.findTokenByKeyHash(this.db, sha256Hex(key));
    if (row)
      this.lookups.set(cacheKey, {
        userId: row.user_id,
        user: userOfToken(row),
        token: row,
      });
    return row;
  }

  /** The user of a system access token; undefined when none has it. */
  async accessToken(token: string): Promise<AuthUser | undefined> {
    const cacheKey = `access:${token}`;
    const cached = this.lookups.get(cacheKey);
    if (cached) return cached.user;
    const row = await store.findUserByAccessTokenHash(this.db, sha256Hex(token));
    if (!row) return undefined;
    const user = toAuthUser(row);
    this.lookups.set(cacheKey, { userId: user.id, user });
    return user;
  }

  /** The user of a live session; undefined when it expired or was ended. */
  async session(sid: string): Promise<{ user: AuthUser; sessionHash: string } | undefined> {
    const sessionHash = sha256Hex(sid);
    const cacheKey = `session:${sessionHash}`;
    const cached = this.lookups.get(cacheKey);
    if (cached) return { user: cached.user, sessionHash };
    const row = await store.findSessionUser(this.db, sessionHash);
    if (!row) return undefined;
    const user = toAuthUser(row);
    this.lookups.set(cacheKey, { userId: user.id, user });
    return { user, sessionHash };
  }

  /**
   * The one password check, for the login form and HTTP Basic alike: 429 while a failure limit
   * holds for this attempt (see refusal), the same argon2 time for unknown users, and a failure
   * counted for each wrong pair. Returns the user; says nothing about their status.
   */
  async checkPassword(username: string, password: string, attempt: Attempt): Promise<UserRow> {
    const keys = this.limitKeys(username, attempt);
    // Counted before the check, atomically: parallel guesses cannot all pass under a limit.
    const [fromIp, pair, name] = await this.limiter.attempt([keys.ip, keys.pair, keys.name]);
    const refused = this.refusal(fromIp!, pair!, name!);
    if (refused) throw tooManyRequests(`Too many failed logins ${refused.why}; try again in ${refused.wait} s`, refused.wait);
    const row = username ? await store.findUserByUsername(this.db, username) : undefined;
    const ok = row ? await verifyPassword(row.password_hash, password) : (await burnVerification(password), false);
    if (!row || !ok) throw unauthorized('Invalid username or password', { code: 'invalid_credentials' });
    await this.limiter.succeeded([keys.ip, keys.pair, keys.name], []);
    return row;
  }

  /**
   * Which limit, if any, refuses an attempt, given the counts with it. One address: LOGIN_MAX_FAILURES_PER_IP
   * across usernames, LOGIN_MAX_FAILURES for one username. One username from every address: past
   * LOGIN_MAX_FAILURES_PER_USER, an address that has already tried it in the window waits, while one that has not
   * still gets its attempt. So nobody locks another person out (the owner signs in from their own address while
   * guesses from elsewhere are refused), and a botnet gets one guess per address per window (OWASP ASVS 2.2.1).
   */
  private refusal(fromIp: Counted, pair: Counted, name: Counted): { why: string; wait: number } | undefined {
    const c = this.config;
    if (fromIp.count > c.LOGIN_MAX_FAILURES_PER_IP) return { why: 'from your address', wait: fromIp.ttl };
    if (pair.count > c.LOGIN_MAX_FAILURES) return { why: 'for this user from your address', wait: pair.ttl };
    if (name.count > c.LOGIN_MAX_FAILURES_PER_USER && pair.count > 1) return { why: 'for this user from many addresses, yours included', wait: pair.ttl };
    return undefined;
  }

  /**
   * HTTP Basic credentials (Bull Board). Browsers resend them on every request: a verified pair is
   * remembered for a minute instead of paying argon2 each time, but the user's row is read again
   * every AUTH_CACHE_MS, so a disabled user or a changed password ends it everywhere in that time.
   */
  async basic(username: string, password: string, attempt: Attempt): Promise<AuthUser> {
    const cacheKey = `basic:${sha256Hex(`${username}\u0000${password}`)}`;
    const verified = this.basicPairs.get(cacheKey);
    if (verified) {
      const fresh = this.lookups.get(cacheKey);
      if (fresh) return fresh.user;
      const row = await store.getUser(this.db, verified.userId);
      if (row && row.password_hash === verified.passwordHash) {
        const user = toAuthUser(row);
        this.lookups.set(cacheKey, { userId: user.id, user });
        return user;
      }
      this.basicPairs.delete(cacheKey);
    }
    const row = await this.checkPassword(username, password, attempt);
    const user = toAuthUser(row);
    this.basicPairs.set(cacheKey, { userId: user.id, user, passwordHash: row.password_hash });
    this.lookups.set(cacheKey, { userId: user.id, user });
    return user;
  }

  /** Checks the password and opens a session: the session id goes in the cookie, only its hash is stored. */
  async login(username: string, password: string, attempt: Attempt): Promise<{ user: UserRow; sid: string; expiresAt: Date }> {
    const row = await this.checkPassword(username, password, attempt);
    if (row.status !== USER_STATUS.enabled) throw forbidden('User is disabled', { code: 'user_disabled' });
    // A good login clears this address's count for the username. The username's own count stays: the owner signing
    // in must not reopen the door to the addresses that were guessing.
    await this.limiter.succeeded([], [this.limitKeys(username, attempt).pair]);
    const sid = crypto.randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + this.config.SESSION_TTL_HOURS * 3_600_000);
    await store.createSession(this.db, { idHash: sha256Hex(sid), userId: row.id, expiresAt, ip: attempt.ip, userAgent: attempt.userAgent });
    return { user: row, sid, expiresAt };
  }

  async logout(sessionHash: string): Promise<void> {
    await store.deleteSession(this.db, sessionHash);
    this.lookups.delete(`session:${sessionHash}`);
  }

  /**
   * A user's credentials or standing changed (password, status, role, tokens, deletion): this
   * process forgets everything it cached for them at once; other processes within AUTH_CACHE_MS.
   */
  forgetUser(userId: number): void {
    const theirs = (c: Cached) => c.userId === userId;
    this.lookups.deleteWhere(theirs);
    this.basicPairs.deleteWhere(theirs);
  }

  /** Creates root on first start: ROOT_PASSWORD, or a random password printed once. */
  async bootstrapRoot(log: Logger): Promise<void> {
    // Most starts find root already there: no password hashing for them.
    if (await store.rootExists(this.db)) return;
    const password = this.config.ROOT_PASSWORD ?? randomAlnum(20);
    const created = await store.ensureRootUser(this.db, await hashPassword(password));
    if (!created) return;
    if (this.config.ROOT_PASSWORD) log.info('created user "root" (role 100) with the password from ROOT_PASSWORD');
    // Shown once: no default password exists, and this one is not stored anywhere but as a hash.
    else
      log.warn(
        { username: 'root', initialPassword: password },
        `created user "root" (role 100); its generated password is ${password} — change it, it is not shown again`,
      );
  }

  /**
   * Failed-login counters: per client address, per (username, address), per username (normalised as for lookups).
   * An address is its limit key: an IPv6 /64 is one address, so its 2^64 spellings are not as many fresh counts.
   */
  private limitKeys(username: string, attempt: Attempt): { ip: string; pair: string; name: string } {
    const name = usernameKey(username);
    const from = addressLimitKey(attempt.ip);
    return { ip: `ip:${from}`, pair: `pair:${name}@${from}`, name: `user:${name}` };
  }
}
