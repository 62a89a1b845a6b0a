// What a CLI command runs with: the settings, a logger on standard error, and the platform (Postgres, Redis, secrets,
// queues) opened as a server opens it: the embedded database's lock taken first, Redis started if it is the local
// default and nothing answers, migrations applied. Closed again when the command ends.
import type { Config } from '../config.js';
import { jobEndListeners, jobKinds } from '../job-kinds.js';
import { createLogger, type Logger } from '../log.js';
import { createPlatform, type Platform } from '../platform.js';
import { lockEmbeddedDb } from '../process.js';
import { ensureRedis } from '../redis.js';

/** A failure whose message is the one line to show (exit code 1), or a usage mistake (exit code 2). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export interface Cli {
  config: Config;
  log: Logger;
  /** A line on standard output: the command's answer. */
  out(line: string): void;
  /** A line on standard error: progress and notes for the person running it. */
  note(line: string): void;
}

export function cliOf(config: Config): Cli {
  // Logs go to standard error, warnings and worse unless LOG_LEVEL says otherwise: standard output is the answer.
  const level = process.env.LOG_LEVEL ? config.LOG_LEVEL : 'warn';
  return {
    config,
    log: createLogger(level, 'cli', config.LOG_FORMAT, 2),
    out: (line) => process.stdout.write(`${line}\n`),
    note: (line) => process.stderr.write(`${line}\n`),
  };
}

/** Runs `work` with the platform open, and closes it (and the Redis it started, if any) whatever happens. */
export async function withPlatform<T>(cli: Cli, work: (p: Platform) => Promise<T>): Promise<T> {
  const lock = await lockEmbeddedDb(cli.config);
  const redis = await ensureRedis(cli.config, cli.log);
  try {
    const p = await createPlatform(cli.config, cli.log, { jobs: jobKinds, jobEnds: jobEndListeners });
    try {
      return await work(p);
    } finally {
      await p.close();
    }
  } finally {
    await redis.stop();
    await lock?.release();
  }
}

/** A destructive command without --yes: says what it would do and stops. */
export function requireYes(yes: boolean | undefined, wouldDo: string): void {
  if (!yes) throw new CliError(`${wouldDo}; nothing was done. Run it again with --yes to do it.`);
}
