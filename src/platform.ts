// What every process shares: config, logger, database, Redis, secrets and the job client; built and closed here.
import type { Config } from './config.js';
import { createDb, migrateLatest, type Db } from './db.js';
import type { Logger } from './log.js';
import { createRedis, checkEvictionPolicy, type Redis } from './redis.js';
import { createSecrets, loadSecretKey, randomAlnum, type Secrets } from './secrets.js';
import { JobClient } from './jobs/client.js';
import { TtlCache } from './cache.js';
import { FailureLimiter } from './http/ratelimit.js';
import { ensureRootUser, rootExists } from './accounts/store.js';
import { hashPassword } from './accounts/passwords.js';
import type { AuthUser } from './http/auth.js';
import { ChannelDirectory } from './channels/directory.js';
import { UsageRecorder } from './accounts/usage.js';
import { watchQueues } from './metrics.js';

export interface Platform {
  config: Config;
  log: Logger;
  db: Db;
  /** Producer-profile Redis: fails fast, for the request path. */
  redis: Redis;
  secrets: Secrets;
  jobs: JobClient;
  /** Credential lookups, kept for AUTH_CACHE_MS. */
  authCache: TtlCache<unknown>;
  /** Verified HTTP Basic pairs (Bull Board), kept for a minute. */
  basicCache: TtlCache<AuthUser>;
  loginLimiter: FailureLimiter;
  /** Upstream channels of area A, re-read every 2 s. */
  channels: ChannelDirectory;
  /** Request counters for free calls, written once a second. */
  usage: UsageRecorder;
  /** Redis key prefix for everything that is not a queue. */
  keyPrefix: string;
  close(): Promise<void>;
}

export interface PlatformOptions {
  /** Create `root` on first start (API processes). */
  bootstrapRoot?: boolean;
  /** Listen to job events (processes that wait for jobs). */
  listenForJobs?: boolean;
}

export async function createPlatform(config: Config, log: Logger, opts: PlatformOptions = {}): Promise<Platform> {
  const secrets = createSecrets(loadSecretKey(config, log));
  const redis = createRedis(config.REDIS_URL, 'producer', 'api');
  const db = await createDb(config, log);
  try {
    await redis.connect();
    await checkEvictionPolicy(redis, log);
    const applied = await migrateLatest(db);
    if (applied.length) log.info({ migrations: applied }, 'applied database migrations');
    if (opts.bootstrapRoot) await bootstrapRoot(db, config, log);
  } catch (err) {
    redis.disconnect();
    await db.destroy().catch(() => {});
    throw err;
  }
  const jobs = new JobClient(config, redis, log, db);
  if (opts.listenForJobs) await jobs.listen();
  const unwatch = watchQueues([...jobs.queues.values()]);
  const platform: Platform = {
    config,
    log,
    db,
    redis,
    secrets,
    jobs,
    authCache: new TtlCache(config.AUTH_CACHE_MS),
    basicCache: new TtlCache(60_000, 1_000),
    loginLimiter: new FailureLimiter(redis, `${config.QUEUE_PREFIX}:login-failures`, config.LOGIN_WINDOW_SECONDS),
    keyPrefix: config.QUEUE_PREFIX,
    channels: new ChannelDirectory(db),
    usage: new UsageRecorder(db, log),
    async close() {
      unwatch();
      await platform.usage.flush();
      await jobs.close();
      await redis.quit().catch(() => redis.disconnect());
      await db.destroy();
    },
  };
  return platform;
}

async function bootstrapRoot(db: Db, config: Config, log: Logger) {
  // Most starts find root already there: no password hashing for them.
  if (await rootExists(db)) return;
  const password = config.ROOT_PASSWORD ?? randomAlnum(20);
  const created = await ensureRootUser(db, await hashPassword(password));
  if (!created) return;
  if (config.ROOT_PASSWORD) log.info('created user "root" (role 100) with the password from ROOT_PASSWORD');
  // Shown once: no default password exists, and this one is not stored anywhere but as a hash.
  else log.warn({ username: 'root', initialPassword: password }, `created user "root" (role 100); its generated password is ${password} — change it, it is not shown again`);
}
