// Lints a probe file with the project's Biome configuration, for the import rule alone: the boundary tests write a
// file where a rule applies (under a git-ignored lint-probe name, removed whatever happens) and read the verdict.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT_DIR } from './spawn.js';

/** `dir` relative to the project; `name` the file name (a unique lint-probe-… name unless given, e.g. routes.ts). */
export async function lintProbe(dir: string, source: string, name?: string): Promise<{ failed: boolean; output: string }> {
  const unique = `lint-probe-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  // A file with a fixed name goes in a probe directory of its own, so it never replaces a real one.
  const folder = name ? path.join(ROOT_DIR, dir, unique) : path.join(ROOT_DIR, dir);
  const file = path.join(folder, name ?? `${unique}.ts`);
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(file, source);
  try {
    // stdin closed: biome reads a piped stdin to its end. A whole lint scans the project (seconds per probe).
    const biome = spawn(path.join(ROOT_DIR, 'node_modules/.bin/biome'), ['lint', '--colors=off', '--only=style/noRestrictedImports', file], {
      cwd: ROOT_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    biome.stdout.on('data', (b: Buffer) => (output += b));
    biome.stderr.on('data', (b: Buffer) => (output += b));
    const code = await new Promise<number | null>((resolve, reject) => {
      biome.once('error', reject);
      biome.once('close', resolve);
    });
    return { failed: code !== 0, output };
  } finally {
    fs.rmSync(name ? folder : file, { recursive: true, force: true });
  }
}
