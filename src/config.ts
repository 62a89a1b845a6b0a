// Every setting, read from the environment and validated once; a bad value names its variable.
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_GROUP, GROUP_NAME } from './groups.js';
import { allowlistEntryProblem, splitAllowlist } from './outbound.js';

const int = (def: number, min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(def);

const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'])
    .default(def ? 'true' : 'false')
    .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

const QUEUE_NAMES = ['content', 'embeddings', 'mail', 'webhooks', 'schedules', 'batches'] as const;

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: int(3000, 0, 65535),
  HOST: z.string().min(1).default('0.0.0.0'),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').max(512).optional()),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional(),
  ),
  DATABASE_POOL_MAX: int(10, 1, 200),
  // Scale-out (README "Deployment"): a statement timeout PgBouncer in transaction mode refuses at connect time, and Redis Cluster.
  /** Server-side limit on one SQL statement, sent when connecting; 0 sends none (PgBouncer in transaction mode refuses it). */
  DATABASE_STATEMENT_TIMEOUT_MS: int(30_000, 0, 3_600_000),
  /** Seed nodes of a Redis Cluster (host:port,…); set, every Redis connection is a cluster client. */
  REDIS_CLUSTER_NODES: optionalString.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const nodes: { host: string; port: number }[] = [];
    for (const item of v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(item) ?? /^([^:\s[\]]+):(\d{1,5})$/.exec(item);
      const port = Number(m?.[2]);
      if (!m || port < 1 || port > 65535) {
        ctx.addIssue({ code: 'custom', message: `"${item}" is not host:port (a comma list of cluster nodes)` });
        return z.NEVER;
      }
      nodes.push({ host: m[1]!, port });
    }
    return nodes.length ? nodes : undefined;
  }),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  REDIS_AUTOSTART: bool(true),
  QUEUE_PREFIX: z
    .string()
    .min(1)
    .regex(/^[^:\s]+$/, 'must not contain ":" or spaces')
    .default('{switchyard}'),
  ROOT_PASSWORD: optionalString.pipe(z.string().min(8, 'must be at least 8 characters').max(128).optional()),
  SECRET_KEY: optionalString.pipe(z.string().min(32, 'must be at least 32 characters').optional()),
  /** A key being rotated away from: what it sealed or signed is still accepted, nothing new is (npx switchyard rotate-secret-key). */
  SECRET_KEY_PREVIOUS: optionalString.pipe(z.string().min(32, 'must be at least 32 characters').optional()),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** json lines, pretty lines (pino-pretty), or auto: pretty when stdout is a terminal. */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  SYNC_WAIT_MS: int(30_000, 0, 600_000),
  /** How long an Idempotency-Key's answer is kept (replayed to the same request with the same key). */
  IDEMPOTENCY_TTL_SECONDS: int(86_400, 60, 30 * 86_400),
  /** A quota reservation not settled within this (at least SYNC_WAIT_MS + 5 s) is given back: its process died mid-call. */
  QUOTA_RESERVATION_TTL_MS: int(300_000, 1_000, 86_400_000),
  SHUTDOWN_TIMEOUT_MS: int(10_000, 100, 600_000),
  BODY_LIMIT_BYTES: int(10 * 1024 * 1024, 1024, 512 * 1024 * 1024),
  BODY_READ_TIMEOUT_MS: int(30_000, 100, 600_000),
  TRUST_PROXY: bool(false),
  ALLOWED_ORIGINS: optionalString.transform((v) =>
    v
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [],
  ),
  SESSION_TTL_HOURS: int(24 * 7, 1, 24 * 365),
  /** Failed logins of one username from one client address per window (src/accounts/auth.ts: refusal). */
  LOGIN_MAX_FAILURES: int(10, 1, 1000),
  LOGIN_MAX_FAILURES_PER_IP: int(100, 1, 100_000),
  LOGIN_MAX_FAILURES_PER_USER: int(100, 1, 1_000_000),
  LOGIN_WINDOW_SECONDS: int(15 * 60, 1, 86_400),
  AUTH_CACHE_MS: int(2_000, 0, 60_000),
  WORKER_QUEUES: z
    .string()
    .default('all')
    .transform((v, ctx) => {
      const list = v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (list.length === 0 || (list.length === 1 && list[0] === 'all')) return [...QUEUE_NAMES];
      for (const q of list) {
        if (!(QUEUE_NAMES as readonly string[]).includes(q)) {
          ctx.addIssue({ code: 'custom', message: `unknown queue "${q}" (known: ${QUEUE_NAMES.join(', ')}, or all)` });
          return z.NEVER;
        }
      }
      return [...new Set(list)] as (typeof QUEUE_NAMES)[number][];
    }),
  CONTENT_CONCURRENCY: int(4, 1, 1000),
  EMBEDDINGS_CONCURRENCY: int(32, 1, 1000),
  MAIL_CONCURRENCY: int(32, 1, 1000),
  /** Schedule ticks one worker process turns into jobs at once (a tick only checks and enqueues). */
  SCHEDULES_CONCURRENCY: int(8, 1, 1000),
  /** The shortest interval a schedule may have (a cron expression firing more often than this is refused too). */
  SCHEDULE_MIN_INTERVAL_MS: int(60_000, 1_000, 86_400_000),
  /** Schedules one user may keep (creating past it: 429). */
  SCHEDULES_PER_USER: int(50, 1, 100_000),
  MAIL_USER_CONCURRENCY: int(4, 1, 1000),
  /** Webhook deliveries (src/webhooks): parallel deliveries per worker process, and at once to one endpoint across all workers. */
  WEBHOOK_CONCURRENCY: int(32, 1, 1000),
  WEBHOOK_ENDPOINT_CONCURRENCY: int(4, 1, 100),
  /** Webhook endpoints one user may keep (adding past it: 429). */
  WEBHOOK_ENDPOINTS_PER_USER: int(20, 1, 1000),
  /** A delivery's whole exchange (connect, send, answer) must end within this. */
  WEBHOOK_TIMEOUT_MS: int(15_000, 100, 120_000),
  /** Attempts of one delivery, and the first retry's delay (each next one 4×, capped at WEBHOOK_BACKOFF_MAX_MS, ±25 %). */
  WEBHOOK_ATTEMPTS: int(9, 1, 50),
  WEBHOOK_BACKOFF_MS: int(15_000, 10, 3_600_000),
  WEBHOOK_BACKOFF_MAX_MS: int(6 * 3_600_000, 10, 7 * 86_400_000),
  /** An endpoint none of whose deliveries succeeded for this long is disabled (its owner sees why). */
  WEBHOOK_DISABLE_AFTER_SECONDS: int(5 * 86_400, 60, 90 * 86_400),
  /** A job result larger than this is left out of the event (its data carries only the url to read it at). */
  WEBHOOK_INLINE_RESULT_BYTES: int(16 * 1024, 0, 1024 * 1024),
  /** Events and their delivery log are kept this many days. */
  WEBHOOK_LOG_RETENTION_DAYS: int(7, 1, 365),
  /** Batch jobs (validation, chunks, finalizing: src/batches) one worker process runs at once. */
  BATCH_CONCURRENCY: int(8, 1, 1000),
  /** A worker process's batch calls at once to one upstream channel (its chunks beyond that wait their turn). */
  BATCH_CHANNEL_CONCURRENCY: int(4, 1, 1000),
  /** Lines of a batch one chunk job runs (its inputs go to the model, or upstream, together). */
  BATCH_CHUNK_LINES: int(64, 1, 10_000),
  /** OpenAI's limits for a batch's input file: its lines (requests), and its size. */
  BATCH_MAX_REQUESTS: int(50_000, 1, 1_000_000),
  /** Embedding inputs summed over a batch's lines (OpenAI's limit for embeddings batches). */
  BATCH_MAX_INPUTS: int(50_000, 1, 10_000_000),
  BATCH_MAX_FILE_BYTES: int(200 * 1024 * 1024, 1024, 2 ** 40),
  /** A batch's lines are charged at the model's price times this (OpenAI charges batches half: 0.5). */
  BATCH_PRICE_MULTIPLIER: z.coerce.number().min(0).max(100).default(1),
  /** Uploaded files and a batch's output files are deleted this many days after they were made (OpenAI: 30). */
  FILE_RETENTION_DAYS: int(30, 1, 3650),
  /** Batches of one user that have not ended (creating past it: 429). */
  BATCHES_RUNNING_PER_USER: int(20, 1, 10_000),
  /** Files (uploads and batch results) one user may keep (uploading past it: 429). */
  FILES_PER_USER: int(1_000, 1, 1_000_000),
  /** Mail accounts one user may keep (adding past it: 429). */
  MAIL_ACCOUNTS_PER_USER: int(1_000, 1, 1_000_000),
  /** Job event streams (GET /api/jobs/{id}/events) one user may hold open at once, across API processes. */
  JOB_EVENT_STREAMS_PER_USER: int(20, 1, 10_000),
  JOB_ATTEMPTS: int(5, 1, 100),
  JOB_BACKOFF_MS: int(1_000, 0, 3_600_000),
  JOB_INLINE_PAYLOAD_BYTES: int(256 * 1024, 0, 64 * 1024 * 1024),
  /** Results serialised above this go to Postgres (job_results) and Redis carries only their id. */
  JOB_INLINE_RESULT_BYTES: int(256 * 1024, 0, 16 * 1024 * 1024),
  /** How often (on average, jittered) each worker process deletes orphaned job payloads and expired job results. */
  JOB_SWEEP_INTERVAL_MS: int(10 * 60_000, 1_000, 24 * 3_600_000),
  JOB_LOCK_MS: int(30_000, 1_000, 600_000),
  JOB_STALLED_INTERVAL_MS: int(30_000, 1_000, 600_000),
  JOB_KEEP_COMPLETED_SECONDS: int(3_600, 0, 30 * 86_400),
  JOB_KEEP_COMPLETED_COUNT: int(1_000, 0, 1_000_000),
  JOB_KEEP_FAILED_SECONDS: int(7 * 86_400, 0, 90 * 86_400),
  JOB_KEEP_FAILED_COUNT: int(10_000, 0, 1_000_000),
  MS_TOKEN_URL: z.string().url().default('https://login.microsoftonline.com/consumers/oauth2/v2.0/token'),
  MS_TOKEN_SCOPE: optionalString,
  MAIL_TIMEOUT_MS: int(30_000, 1_000, 600_000),
  UPSTREAM_TIMEOUT_MS: int(30_000, 100, 600_000),
  // Hosts, addresses and CIDRs that user-aimed connections may reach although the outbound policy refuses them (src/outbound.ts).
  OUTBOUND_ALLOWLIST: optionalString.transform((v, ctx) => {
    const list = splitAllowlist(v);
    const problem = list.map(allowlistEntryProblem).find(Boolean);
    if (!problem) return list;
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }),
  LOCAL_MODEL_PRICE: z.coerce.number().min(0).max(1e12).default(0),
  /** Admins may set their own quota (PUT /api/user/self), as root always may: no one above them does it otherwise. */
  ADMIN_SELF_QUOTA: bool(false),
  /** One-api's GroupRatio: a JSON object of user group → price ratio; every priced call costs its price times its user's group's ratio (a group not named: 1). */
  GROUP_RATIO: optionalString.transform((v, ctx) => {
    const ratios = groupRatios(v ?? `{"${DEFAULT_GROUP}":1}`);
    if (typeof ratios === 'string') {
      ctx.addIssue({ code: 'custom', message: ratios });
      return z.NEVER;
    }
    return ratios;
  }),
  EMBEDDINGS_MAX_IN_FLIGHT: int(2, 1, 1000),
  USE_LITE_MAX_IN_FLIGHT: int(64, 1, 1000),
  EMBEDDINGS_CACHE: bool(true),
  /** Each API process keeps the most used cached vectors (and their printed JSON) in this much memory. */
  EMBEDDINGS_MEMORY_CACHE_MB: int(16, 0, 4096),
  USE_LITE_PRELOAD: bool(true),
  // Threads running the use-lite model in each worker process; one user's calls use one of them at a time.
  USE_LITE_THREADS: int(2, 1, 16),
  /** Usage and audit logs older than this many days go, a whole day partition at a time (src/logs). */
  LOG_RETENTION_DAYS: int(30, 1, 3650),
  /** Free calls of one (user, key, model) a minute that get a consume row each; the rest of the minute's are aggregated. */
  FREE_CALL_ROWS_PER_MINUTE: int(60, 0, 1_000_000),
});

export type Config = Readonly<
  Omit<z.infer<typeof envSchema>, 'DATA_DIR'> & {
    DATA_DIR: string;
    /** true when DATABASE_URL is unset: the embedded PGlite database is used. */
    embeddedDb: boolean;
  }
>;
export type QueueName = (typeof QUEUE_NAMES)[number];
export const queueNames: readonly QueueName[] = QUEUE_NAMES;

/** How many jobs of each queue one worker process runs at once. */
export const queueConcurrency = (c: Config): Record<QueueName, number> => ({
  content: c.CONTENT_CONCURRENCY,
  embeddings: c.EMBEDDINGS_CONCURRENCY,
  mail: c.MAIL_CONCURRENCY,
  webhooks: c.WEBHOOK_CONCURRENCY,
  schedules: c.SCHEDULES_CONCURRENCY,
  batches: c.BATCH_CONCURRENCY,
});

/** The most a group's ratio may be (a price times it stays far below Number.MAX_SAFE_INTEGER). */
const MAX_GROUP_RATIO = 1_000;

/** GROUP_RATIO's JSON as group → ratio, or what is wrong with it. */
function groupRatios(json: string): Readonly<Record<string, number>> | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return 'must be a JSON object of group name to ratio, like {"default":1,"vip":1.5}';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return 'must be a JSON object of group name to ratio, like {"default":1,"vip":1.5}';
  for (const [group, ratio] of Object.entries(parsed)) {
    if (!GROUP_NAME.test(group)) return `"${group.slice(0, 80)}" is not a group name (1-64 letters, digits, "_", "." or "-")`;
    if (typeof ratio !== 'number' || !Number.isFinite(ratio) || ratio < 0 || ratio > MAX_GROUP_RATIO) {
      return `the ratio of "${group}" must be a number from 0 to ${MAX_GROUP_RATIO}`;
    }
  }
  return Object.freeze({ ...(parsed as Record<string, number>) });
}

export class ConfigError extends Error {}

/** Parses an environment (process.env by default). Throws ConfigError naming every bad variable. */
export function parseConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = envSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `${String(i.path[0] ?? '?')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const c = result.data;
  return Object.freeze({ ...c, DATA_DIR: path.resolve(c.DATA_DIR), embeddedDb: !c.DATABASE_URL });
}
