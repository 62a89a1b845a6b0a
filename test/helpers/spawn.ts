// Starting the real entry points (src/server.ts, workers/main.ts) as child processes, as a user would.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Spawned {
  proc: ChildProcess;
  output(): string;
  /** Resolves with the first log line that matches. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts an entry point from its TypeScript source (through tsx), or, with `built`, the JavaScript of a build in that
 * folder (relative to the project: what `npm start` runs from dist/).
 */
const ENTRIES = { server: 'src/server.ts', worker: 'workers/main.ts', migrate: 'src/migrate.ts', cli: 'src/cli/main.ts' };

export function spawnEntry(entry: keyof typeof ENTRIES, args: string[], env: Record<string, string | undefined>, built?: string): Spawned {
  const source = ENTRIES[entry];
  const cleanEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...env })) if (v !== undefined) cleanEnv[k] = v;
  // Keep the child's own settings from leaking in from the test runner.
  for (const k of ['DATABASE_URL', 'VITEST', 'VITEST_WORKER_ID', 'VITEST_POOL_ID']) if (!(k in env)) delete cleanEnv[k];
  const command = built ? ['--enable-source-maps', path.join(built, source.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', source];
  const proc = spawn(process.execPath, [...command, ...args], { cwd: ROOT_DIR, env: cleanEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: { re: RegExp; resolve: (line: string) => void }[] = [];
  const onData = (buf: Buffer) => {
    out += buf.toString();
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.re.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    output: () => out,
    waitFor(re, timeoutMs = 60_000) {
      const line = out.split('\n').find((l) => re.test(l));
      if (line !== undefined) return Promise.resolve(line);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re} in output:\n${out}`)), timeoutMs);
        const w = {
          re,
          resolve: (l: string) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(w);
        void exited.then(() => {
          if (waiters.includes(w)) {
            clearTimeout(timer);
            reject(new Error(`process exited before ${re}; output:\n${out}`));
          }
        });
      });
    },
    exited,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/** Starts the server and waits until it listens; returns its base URL. */
export async function spawnServer(args: string[], env: Record<string, string | undefined>, built?: string): Promise<Spawned & { url: string }> {
  // The port is read from the "listening" log line, so the log must say at least that much.
  const s = spawnEntry('server', args, { PORT: '0', HOST: '127.0.0.1', ...env, LOG_LEVEL: 'info' }, built);
  const line = await s.waitFor(/Switchyard listening/);
  const port = JSON.parse(line).port as number;
  return Object.assign(s, { url: `http://127.0.0.1:${port}` });
}

/**
 * Stops a helper started behind a watchdog shell (Dovecot, PgBouncer, the Redis Cluster): closing its stdin
 * tells the watchdog to stop it; past `graceMs` the whole process group (started detached) is killed.
 */
export async function stopWatched(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.stdin!.end();
  });
}
