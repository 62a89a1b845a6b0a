// Running the operator CLI (src/cli/main.ts) as a child process, as an operator runs it: its answer on standard output,
// its notes on standard error, its exit code.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT_DIR } from './spawn.js';

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function childEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...env })) if (v !== undefined) out[k] = v;
  for (const k of ['DATABASE_URL', 'SECRET_KEY_PREVIOUS', 'LOG_LEVEL', 'VITEST', 'VITEST_WORKER_ID', 'VITEST_POOL_ID']) if (!(k in env)) delete out[k];
  return out;
}

/** Starts the CLI from its source (through tsx); `bin` runs bin/switchyard.mjs instead, which builds dist/ when stale. */
export function startCli(args: string[], env: Record<string, string | undefined>, opts: { input?: string; bin?: boolean } = {}) {
  const entry = opts.bin ? [path.join('bin', 'switchyard.mjs')] : ['--import', 'tsx', path.join('src', 'cli', 'main.ts')];
  const proc: ChildProcess = spawn(process.execPath, [...entry, ...args], { cwd: ROOT_DIR, env: childEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (b: Buffer) => {
    stdout += b.toString();
  });
  proc.stderr!.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  proc.stdin!.end(opts.input ?? '');
  const done = new Promise<CliRun>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { proc, done, output: () => ({ stdout, stderr }) };
}

export const runCli = (args: string[], env: Record<string, string | undefined>, opts: { input?: string; bin?: boolean } = {}) => startCli(args, env, opts).done;
