// Builds the server (esbuild, file by file) and the console (vite) only when their sources changed since the last build, so that
// `npm start` after a restart goes straight to node. `node scripts/build-if-stale.mjs [server|console|all] [--force]`
// (--force builds whatever the stamp says: `npm run build`). Plain JavaScript: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** What each part is built from, a file its build always writes (gone: build again), and how it is built. */
export const PARTS = {
  server: {
    inputs: ['src', 'workers', 'migrations', 'tsconfig.json', 'package-lock.json'],
    output: 'dist/src/server.js',
    command: ['node', ['scripts/build-if-stale.mjs', '--transpile']],
  },
  console: {
    inputs: ['web', 'package-lock.json'],
    output: 'dist/console/index.html',
    command: ['npx', ['vite', 'build', '--config', 'web/vite.config.ts', '--logLevel', 'warn']],
  },
};

const stampFile = (root) => path.join(root, 'dist', '.build-stamp.json');

/** Every file under the inputs, by path, size and modification time: a fingerprint that costs a few milliseconds. */
export function fingerprint(root, inputs) {
  const hash = crypto.createHash('sha256');
  const visit = (rel) => {
    const abs = path.join(root, rel);
    let st;
    try {
      st = fs.statSync(abs);
    } catch {
      hash.update(`${rel}\0missing\n`);
      return;
    }
    if (st.isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) if (name !== 'node_modules' && !name.startsWith('.')) visit(path.join(rel, name));
    } else hash.update(`${rel}\0${st.size}\0${st.mtimeMs}\n`);
  };
  for (const input of inputs) visit(input);
  return hash.digest('hex');
}

function readStamp(root) {
  try {
    return JSON.parse(fs.readFileSync(stampFile(root), 'utf8'));
  } catch {
    return {};
  }
}

/** The part's fingerprint now, and whether it must be built: its sources changed since its last build, or its output is gone. */
export function staleness(root, name) {
  const part = PARTS[name];
  const print = fingerprint(root, part.inputs);
  return { print, stale: readStamp(root)[name] !== print || !fs.existsSync(path.join(root, part.output)) };
}

/** Records a finished build of the part (read again and written whole: another part's stamp, written meanwhile, is kept). */
export function markBuilt(root, name, print) {
  fs.mkdirSync(path.dirname(stampFile(root)), { recursive: true });
  fs.writeFileSync(stampFile(root), JSON.stringify({ ...readStamp(root), [name]: print }));
}

/** Every TypeScript file under the folders (declaration files aside). */
function sourceFiles(root, folders) {
  const out = [];
  const visit = (rel) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) visit(child);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(child);
    }
  };
  for (const folder of folders) visit(folder);
  return out;
}

/**
 * The server's JavaScript, file by file with esbuild (no bundling, no type check: ~1 s where tsc took 10-15 s on two
 * cores). Safe because tsconfig.json sets isolatedModules, so `npm run typecheck` refuses anything a per-file
 * transpiler would get wrong; the types are checked there and in CI, not at every start.
 */
export async function transpileServer(root, outdir = 'dist') {
  const esbuild = await import('esbuild');
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: sourceFiles(root, ['src', 'workers', 'migrations']),
    outdir,
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
}

async function main() {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const args = process.argv.slice(2);
  if (args.includes('--transpile')) return transpileServer(root);
  const force = args.includes('--force');
  const which = args.find((a) => !a.startsWith('--')) ?? 'all';
  const names = which === 'all' ? Object.keys(PARTS) : [which];
  for (const name of names) {
    if (!PARTS[name]) {
      console.error(`build-if-stale: unknown part "${name}" (server, console or all)`);
      process.exit(2);
    }
    // Taken before the build: a source changed while it runs makes the next start build again.
    const { print, stale } = staleness(root, name);
    if (!stale && !force) continue;
    const [cmd, cmdArgs] = PARTS[name].command;
    const run = spawnSync(cmd, cmdArgs, { cwd: root, stdio: 'inherit' });
    if (run.status !== 0) process.exit(run.status ?? 1);
    markBuilt(root, name, print);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href)
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
