// Process lifecycle shared by the entry points: config, Redis, platform, signals, ordered shutdown.
import { ConfigError, parseConfig, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { jobEndListeners, jobKinds } from './job-kinds.js';
import { createPlatform, type Platform, type PlatformOptions } from './platform.js';
import { ensureRedis, RedisUnavailableError, type RedisHandle } from './redis.js';
import { type DataDirLock, DataDirLocked, lockDataDir } from './data-dir-lock.js';
import { explainStartupError } from './startup-errors.js';
import { startTracing, stopTracing, TraceConfigError } from './telemetry.js';
import { withTimeout } from './timeout.js';

export interface Running {
  /** Stops taking new work and finishes what is in flight, within the time given. */
  stop(timeoutMs: number): Promise<void>;
}

/** Prints one line and exits: for problems the user must fix before anything can run. */
export function fatal(message: string): never {
  process.stderr.write(`switchyard: ${message}\n`);
  process.exit(1);
}

/** A failed start: one line saying what to set when the failure is a known one (src/startup-errors.ts), else the error logged whole. */
export function startupFailed(err: unknown, config: Config, log?: Logger): never {
  const explained = explainStartupError(err, config);
  if (explained === undefined) log?.error({ err }, 'start-up failed');
  fatal(explained ?? `start-up failed: ${(err as Error).message}`);
}

/** The embedded database's lock (src/data-dir-lock.ts) for this process, or the one line saying who holds it. */
export async function lockEmbeddedDb(config: Config): Promise<DataDirLock | undefined> {
  if (!config.embeddedDb) return undefined;
  try {
    return await lockDataDir(config.DATA_DIR);
  } catch (err) {
    if (err instanceof DataDirLocked) fatal(err.message);
    throw err;
  }
}

export function loadConfigOrExit(): Config {
  try {
    return parseConfig();
  } catch (err) {
    if (err instanceof ConfigError) fatal(err.message);
    throw err;
  }
}

/** Starts a process of the application: its platform (with the application's job kinds), then `start`. */
export async function runProcess(
  name: string,
  opts: Omit<PlatformOptions, 'jobs'> & { requireServerDb?: string },
  start: (p: Platform) => Promise<Running>,
): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger(config.LOG_LEVEL, name, config.LOG_FORMAT);
  // Catch SIGTERM/SIGINT from the first moment: one that arrives while starting up is honoured
  // as soon as start-up finishes, instead of killing the process half-started.
  let signalled: string | undefined;
  let onSignal = (signal: string) => {
    signalled ??= signal;
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  if (opts.requireServerDb && config.embeddedDb) fatal(opts.requireServerDb);
  await lockEmbeddedDb(config);
  // Traces (OTEL_* variables): on, the SDK loads here, before anything connects; off, nothing is loaded.
  try {
    const traces = await startTracing(name);
    if (traces) log.info({ exporters: traces.exporters, protocol: traces.protocol }, 'traces on (OpenTelemetry)');
  } catch (err) {
    if (err instanceof TraceConfigError) fatal(err.message);
    throw err;
  }

  let redisHandle: RedisHandle;
  try {
    redisHandle = await ensureRedis(config, log);
  } catch (err) {
    if (err instanceof RedisUnavailableError) fatal(err.message);
    throw err;
  }

  let platform: Platform;
  try {
    platform = await createPlatform(config, log, { ...opts, jobs: jobKinds, jobEnds: jobEndListeners });
  } catch (err) {
    await redisHandle.stop();
    startupFailed(err, config, log);
  }

  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled promise rejection'));
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; exiting');
    process.exit(1);
  });

  let running: Running;
  try {
    running = await start(platform);
  } catch (err) {
    await platform.close().catch(() => {});
    await redisHandle.stop();
    startupFailed(err, config, log);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const timeout = config.SHUTDOWN_TIMEOUT_MS;
    log.info({ signal, timeoutMs: timeout }, 'shutting down');
    // A hard stop slightly past the budget, in case something refuses to close.
    setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, timeout + 5_000).unref();
    try {
      await running.stop(timeout);
      // A job abandoned at the deadline may still hold a database connection (a statement
      // waiting on a lock): closing must not wait for it. Its job runs again elsewhere.
      await withTimeout(platform.close(), 2_000).catch((err) => log.warn({ err }, 'connections did not close in time; exiting anyway'));
      await withTimeout(stopTracing(), 2_000).catch((err) => log.warn({ err }, 'traces not sent in time; exiting anyway'));
      await redisHandle.stop();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  onSignal = (signal) => void shutdown(signal);
  if (signalled) void shutdown(signalled);
}

export type { Logger };
