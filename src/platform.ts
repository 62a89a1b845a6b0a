// What every process shares: config, logger, database, Redis, secrets, the job client and the authenticator; built and closed here.
import type { Config } from './config.js';
import { createDb, migrateLatest, type Db } from './db.js';
import type { Logger } from './log.js';
import { createRedis, checkEvictionPolicy, redisKeys, type Redis, type RedisKeys } from './redis.js';
import { createSecrets, loadSecretKeys, type Secrets } from './secrets.js';
import { storedValuesProblem } from './sealed-values.js';
import { StartupError } from './startup-errors.js';
import { JobClient } from './jobs/client.js';
import type { JobEndListener, JobKinds } from './jobs/registry.js';
import { Authenticator } from './accounts/auth.js';
import { ChannelDirectory } from './channels/directory.js';
import { UsageRecorder } from './accounts/usage.js';
import { QuotaLedger } from './accounts/ledger.js';
import { watchQueues } from './metrics.js';

export interface Platform {
  config: Config;
  log: Logger;
  db: Db;
  /** Producer-profile Redis: fails fast, for the request path. */
  redis: Redis;
  secrets: Secrets;
  jobs: JobClient;
  /** Who is calling: credential lookups (cached), the password check behind the login limiter, sessions. */
  auth: Authenticator;
  /** Upstream embeddings channels, re-read every 2 s. */
  channels: ChannelDirectory;
  /** Free calls' log rows and request counters (src/accounts/usage.ts). */
  usage: UsageRecorder;
  /** Quota for priced calls: reservations, charges, settlements and refunds with their log rows, batched. */
  ledger: QuotaLedger;
  /** QUEUE_PREFIX: on one Redis, every key starts with it (see `keys`). */
  keyPrefix: string;
  /** Where each Redis key goes (one Redis: under keyPrefix; a cluster: spread over the masters). */
  keys: RedisKeys;
  close(): Promise<void>;
}

export interface PlatformOptions {
  /**
   * The job kinds this platform enqueues and its workers run: the application's, `jobKinds` from the
   * composition root (src/job-kinds.ts), which entry points pass (src/process.ts); tests may add their own.
   * Given, not imported: the areas' declarations import the Platform type.
   */
  jobs: JobKinds;
  /** Told when a job ends (src/job-kinds.ts jobEndListeners: webhooks); none when not given. */
  jobEnds?: readonly JobEndListener[];
  /** Create `root` on first start (API processes). */
  bootstrapRoot?: boolean;
  /** Listen to job events (processes that wait for jobs). */
  listenForJobs?: boolean;
}

export async function createPlatform(config: Config, log: Logger, opts: PlatformOptions): Promise<Platform> {
  const keys = loadSecretKeys(config, log);
  const secrets = createSecrets(keys.current, keys.previous);
  const redis = createRedis(config, 'producer', 'api');
  const db = await createDb(config, log);
  const auth = new Authenticator(config, db, redis);
  try {
    await redis.connect();
    await checkEvictionPolicy(redis, log);
    const applied = await migrateLatest(db);
    if (applied.length) log.info({ migrations: applied }, 'applied database migrations');
    const keyProblem = await storedValuesProblem(db, secrets);
    if (keyProblem) {
      throw new StartupError(
        `SECRET_KEY does not open the ${keyProblem.tried.join(', ')} stored in the database: they were sealed with another key. ` +
          (keys.file ? `Put that key back in ${keys.file}, or set SECRET_KEY to it` : 'Set SECRET_KEY to that key') +
          ' (to change keys, see npx switchyard rotate-secret-key)',
      );
    }
    if (opts.bootstrapRoot) await auth.bootstrapRoot(log);
  } catch (err) {
    redis.disconnect();
    await db.destroy().catch(() => {});
    throw err;
  }
  const jobs = new JobClient(config, redis, log, db, secrets, opts.jobs, opts.jobEnds);
  if (opts.listenForJobs) await jobs.listen();
  const unwatch = watchQueues([...jobs.queues.values()]);
  const platform: Platform = {
    config,
    log,
    db,
    redis,
    secrets,
    jobs,
    auth,
    keyPrefix: config.QUEUE_PREFIX,
    keys: redisKeys(config),
    channels: new ChannelDirectory(db, undefined, (err) => log.warn({ err }, 'could not write channel usage')),
    usage: new UsageRecorder(db, log, config.FREE_CALL_ROWS_PER_MINUTE),
    ledger: new QuotaLedger(db, { reservationTtlMs: Math.max(config.QUOTA_RESERVATION_TTL_MS, config.SYNC_WAIT_MS + 5_000) }),
    async close() {
      unwatch();
      platform.ledger.stopSweeping();
      await platform.usage.flush();
      await platform.channels.flushUsage().catch((err) => log.warn({ err }, 'could not write channel usage'));
      await jobs.close();
      await redis.quit().catch(() => redis.disconnect());
      await db.destroy();
    },
  };
  return platform;
}
