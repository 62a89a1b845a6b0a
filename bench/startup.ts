// Start-up figures: `npm start` as a user runs it, first after install (nothing built, no data) and then again (a
// restart), each timed from the command to /readyz answering 200. `npm run bench` calls startupFigures();
// `npx tsx bench/startup.ts` runs them alone. The build stamp is removed for the first start, so it builds everything.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { clearRedisPrefix } from '../test/helpers/services.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface StartupFigure {
  name: string;
  value: number;
  unit: string;
  goal: string;
  pass: boolean;
  note?: string;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Runs `npm start` and answers how long it took until /readyz said 200; the process is stopped afterwards. */
async function timedStart(env: Record<string, string>, port: number): Promise<number> {
  const started = performance.now();
  // Its own process group: npm, its shell and node all stop together.
  const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}: ${stderr.slice(-2000)}`);
      if (performance.now() - started > 180_000) throw new Error('npm start not ready within 180 s');
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return (performance.now() - started) / 1000;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // gone already
    }
    await exited;
    // npm is gone; the server under it may still be closing: the next start must not find it answering.
    const deadline = Date.now() + 30_000;
    while (
      Date.now() < deadline &&
      (await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => true,
        () => false,
      ))
    )
      await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startupFigures(opts: { redisUrl: string; log: (msg: string) => void }): Promise<StartupFigure[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-bench-start-'));
  const prefix = `{sybench-start-${path.basename(dataDir)}}`;
  const port = await freePort();
  const env = {
    DATA_DIR: dataDir,
    QUEUE_PREFIX: prefix,
    REDIS_URL: opts.redisUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    ROOT_PASSWORD: 'bench-root-password',
  };
  try {
    fs.rmSync(path.join(ROOT, 'dist', '.build-stamp.json'), { force: true });
    opts.log('start-up: npm start after install (builds everything, creates and migrates the embedded database)');
    const first = await timedStart(env, port);
    opts.log('start-up: npm start again (a restart: nothing to build, database ready)');
    const restart = await timedStart(env, port);
    return [
      {
        name: 'startup_first_start_s',
        value: first,
        unit: 's',
        goal: '<= 20 s from npm start to /readyz, first start after install',
        pass: first <= 20,
        note: 'no build stamp, empty DATA_DIR: the server and console builds, PGlite initdb and every migration',
      },
      { name: 'startup_restart_s', value: restart, unit: 's', goal: '<= 6 s from npm start to /readyz', pass: restart <= 6 },
    ];
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await clearRedisPrefix(prefix, opts.redisUrl).catch(() => {});
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const figures = await startupFigures({ redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', log: (m) => process.stderr.write(`${m}\n`) });
  for (const f of figures) process.stdout.write(`${JSON.stringify(f)}\n`);
}
