// The operator CLI: `npx switchyard <command>` (bin/switchyard.mjs) or `npm run cli -- <command>`. What operators would
// otherwise do in SQL or redis-cli: passwords, an admin, queues, the status, changing SECRET_KEY, moving data between
// deployments. Settings come from the environment, as for npm start. Exit codes: 0 done, 1 failed or refused (one line
// on standard error saying why), 2 a usage mistake.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { AppError } from '../errors.js';
import { loadConfigOrExit } from '../process.js';
import { RedisUnavailableError } from '../redis.js';
import { beginGeneratedKeyRotation, endGeneratedKeyRotation } from '../secrets.js';
import { explainStartupError } from '../startup-errors.js';
import { type Cli, CliError, cliOf, requireYes, withPlatform } from './context.js';
import { cleanQueues, drainQueues, parseDuration, pickQueues, queueDepths, statusReport, waitingJobs } from './queues.js';
import { leftOver, type RotationReport, rotateAll } from './rotate.js';
import { exportAll, importAll, openOutput } from './transfer.js';
import { createAdmin, resetPassword } from './users.js';

const USAGE = `Usage: npx switchyard <command> [options]      (or: npm run cli -- <command> [options])

  status                                  the status (GET /api/status), what /readyz checks, every queue's jobs by state (JSON)
  queues [list]                           every queue's jobs by state (JSON)
  queues drain <queue|all> --yes          remove the jobs that wait (running ones finish; each schedule keeps its next run)
  queues clean <queue|all> --yes [--state completed|failed] [--older-than 1h]
                                          remove jobs that ended (both states, and any age, unless said)
  reset-password <username>               a new random password, printed once; the user's sessions end
  create-admin <username> [--display-name <name>]
                                          a new admin (role 10) with a random password, printed once
  rotate-secret-key [--check]             seal and sign every stored value again under SECRET_KEY (docs/cli.md)
  export --out <file|->                   users, API keys (hashed), channels (keys in the clear) and content, as JSON lines
  import <file|->                         add what an export holds
  help                                    this text

Settings come from the environment, as for npm start (DATABASE_URL, REDIS_URL, DATA_DIR, SECRET_KEY, ...).
On the embedded database (no DATABASE_URL) stop the server first: one process at a time may open DATA_DIR.
`;

type Flags = Record<string, string | boolean | undefined>;

const json = (v: unknown) => JSON.stringify(v, null, 2);

async function queues(cli: Cli, [sub, which]: string[], flags: Flags): Promise<void> {
  await withPlatform(cli, async (p) => {
    if (sub === undefined || sub === 'list') return cli.out(json(await queueDepths(p)));
    const picked = pickQueues(p, which);
    if (sub === 'drain') {
      const waiting = await waitingJobs(picked);
      const total = Object.values(waiting).reduce((a, b) => a + b, 0);
      requireYes(flags.yes as boolean, `would remove ${total} waiting job${total === 1 ? '' : 's'} (${describe(waiting)})`);
      cli.out(`removed: ${describe(await drainQueues(picked))}`);
      return;
    }
    if (sub === 'clean') {
      const state = flags.state as string | undefined;
      if (state !== undefined && state !== 'completed' && state !== 'failed') throw new CliError('--state: completed or failed', 2);
      const olderThan = parseDuration(flags['older-than'] as string | undefined, 0);
      const states = state ? [state] : (['completed', 'failed'] as const);
      requireYes(
        flags.yes as boolean,
        `would remove the ${states.join(' and ')} jobs of ${picked.map((q) => q.name).join(', ')} that ended over ${olderThan} ms ago`,
      );
      cli.out(`removed: ${describe(await cleanQueues(picked, states as ('completed' | 'failed')[], olderThan))}`);
      return;
    }
    throw new CliError(`queues: unknown subcommand "${sub}" (list, drain, clean)`, 2);
  });
}

const describe = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([q, n]) => `${q} ${n}`)
    .join(', ');

function summary(r: RotationReport): string[] {
  const { postgres: pg, schedulers: s, jobs: j, idempotency: i } = r;
  return [
    `postgres: ${pg.resealed} sealed again, ${pg.current} already under SECRET_KEY, ${pg.unreadable.length} opened by neither key`,
    `redis: job schedulers ${s.resealed} signed again (${s.current} already); jobs ${j.resealed} sealed or signed again (${j.current} already); idempotent answers ${i.resealed} sealed again (${i.current} already)`,
  ];
}

async function rotate(cli: Cli, flags: Flags): Promise<number> {
  const { config } = cli;
  const check = !!flags.check;
  const generated = !config.SECRET_KEY;
  if (generated && !check) {
    // Before the platform reads the keys (and after the embedded database's lock: no server is using them).
    beginGeneratedKeyRotation(config);
  }
  return withPlatform(cli, async (p) => {
    const report = await rotateAll(p, { dryRun: check, note: cli.note });
    for (const line of summary(report)) cli.out(line);
    const left = leftOver(report);
    if (left.unreadable.length) {
      for (const u of left.unreadable.slice(0, 20)) cli.note(`  opened by neither key: ${u}`);
      throw new CliError(
        `${left.unreadable.length} stored value${left.unreadable.length === 1 ? '' : 's'} open under neither SECRET_KEY nor SECRET_KEY_PREVIOUS: ` +
          'set SECRET_KEY_PREVIOUS to the key they were sealed with and run this again',
      );
    }
    if (check) {
      cli.out(left.resealed ? `${left.resealed} values are still under the previous key` : 'every stored value is under SECRET_KEY');
      return left.resealed ? 1 : 0;
    }
    // A second look: a process still writing under the previous key (one not yet restarted with SECRET_KEY) shows here.
    const again = leftOver(await rotateAll(p, { dryRun: true, note: () => {} }));
    if (again.resealed) {
      throw new CliError(
        `${again.resealed} values were written under the previous key while this ran (a process still started with it as SECRET_KEY?): restart every process with the new SECRET_KEY, then run this again`,
      );
    }
    if (generated) {
      endGeneratedKeyRotation(config);
      cli.out(`done: every stored value is under the new key in ${config.DATA_DIR}/secret.key; the previous key is deleted`);
    } else if (config.SECRET_KEY_PREVIOUS) {
      cli.out('done: every stored value is under SECRET_KEY. Remove SECRET_KEY_PREVIOUS from every process and restart them.');
    } else {
      cli.out(
        'nothing to rotate from: every stored value is under SECRET_KEY. To change keys, start every process with the new key as SECRET_KEY and the old one as SECRET_KEY_PREVIOUS, then run this again.',
      );
    }
    return 0;
  });
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  const { values: flags, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      yes: { type: 'boolean' },
      check: { type: 'boolean' },
      state: { type: 'string' },
      'older-than': { type: 'string' },
      'display-name': { type: 'string' },
      out: { type: 'string' },
    },
  });
  const cli = cliOf(loadConfigOrExit());
  switch (command) {
    case 'status':
      await withPlatform(cli, async (p) => cli.out(json(await statusReport(p))));
      return 0;
    case 'queues':
      await queues(cli, positionals, flags);
      return 0;
    case 'reset-password': {
      const { user, password } = await withPlatform(cli, (p) => resetPassword(p, positionals[0]));
      cli.out(`new password of ${user.username} (#${user.id}): ${password}`);
      cli.note('It is shown only now. Every session of the user has ended.');
      return 0;
    }
    case 'create-admin': {
      const { user, password } = await withPlatform(cli, (p) => createAdmin(p, positionals[0], flags['display-name'] as string | undefined));
      cli.out(`created admin ${user.username} (#${user.id}), password: ${password}`);
      cli.note('The password is shown only now.');
      return 0;
    }
    case 'rotate-secret-key':
      return rotate(cli, flags);
    case 'export': {
      const out = openOutput(flags.out as string | undefined);
      const { counts, keyless } = await withPlatform(cli, (p) => exportAll(p, out));
      cli.note(
        `exported ${counts.user} users, ${counts.token} API keys, ${counts.channel} channels, ${counts.content} content items. ` +
          "The file holds the channels' upstream keys in the clear and the users' password hashes: keep it as you keep those.",
      );
      if (keyless.length) cli.note(`channels whose key did not open (exported without it; import leaves them out): ${keyless.join(', ')}`);
      return 0;
    }
    case 'import': {
      const file = positionals[0];
      if (!file) throw new CliError('import: name the file (or - for standard input)', 2);
      const input = file === '-' ? process.stdin : fs.createReadStream(file);
      const r = await withPlatform(cli, (p) => importAll(p, input));
      const kinds = ['user', 'token', 'channel', 'content'] as const;
      cli.out(`added: ${kinds.map((k) => `${k} ${r.added[k]}`).join(', ')}`);
      cli.out(`already here, kept as they were: ${kinds.map((k) => `${k} ${r.kept[k]}`).join(', ')}`);
      for (const s of r.skipped) cli.out(`left out: ${s}`);
      return 0;
    }
    default:
      throw new CliError(`unknown command "${command}" (npx switchyard help lists them)`, 2);
  }
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (err) {
  const config = (() => {
    try {
      return loadConfigOrExit();
    } catch {
      return undefined;
    }
  })();
  const known =
    err instanceof CliError || err instanceof RedisUnavailableError || err instanceof AppError
      ? (err as Error).message
      : config && explainStartupError(err, config);
  const usage = err instanceof CliError ? err.exitCode === 2 : (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  process.stderr.write(`switchyard: ${known ?? (err as Error).message}\n`);
  if (!known && !usage) process.stderr.write(`${(err as Error).stack}\n`);
  process.exitCode = usage ? 2 : 1;
}
