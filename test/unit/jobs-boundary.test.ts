// The lint boundary of src/jobs (issue 23): the job platform is generic, so `npm run lint` refuses a file under
// src/jobs/ that imports an area (or the composition root, src/job-kinds.ts), and still refuses Koa and src/http there.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../helpers/spawn.js';

const AREA_MESSAGE = 'src/jobs is generic and imports no area';

/**
 * Lints `source` as a file of src/jobs/ (under a git-ignored name, removed whatever happens) with the project's
 * configuration, for the import rule alone (a whole lint scans the project: seconds per probe), and returns biome's
 * verdict. The probe is only linted, never compiled or run.
 */
async function lintInJobs(source: string): Promise<{ failed: boolean; output: string }> {
  const file = path.join(ROOT_DIR, 'src/jobs', `lint-probe-${process.pid}-${Math.random().toString(36).slice(2, 8)}.ts`);
  fs.writeFileSync(file, source);
  try {
    // stdin closed: biome reads a piped stdin to its end.
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
    fs.rmSync(file, { force: true });
  }
}

describe('src/jobs imports no area (biome noRestrictedImports)', () => {
  it("refuses an area's schema, an area's store, and the composition root, saying why", async () => {
    for (const [specifier, shown] of [
      ['../mail/schema.js', 'mail/schema.js'],
      ['../accounts/store.js', 'accounts/store.js'],
      ['../content/jobs.js', 'content/jobs.js'],
      ['../job-kinds.js', 'job-kinds.js'],
    ]) {
      const verdict = await lintInJobs(`import * as probe from '${specifier}';\n\nexport const used = probe;\n`);
      expect(verdict.failed, specifier).toBe(true);
      expect(verdict.output, specifier).toContain(AREA_MESSAGE);
      expect(verdict.output, specifier).toContain(shown);
    }
  });

  it("keeps the src/ rules there: Koa and src/http are refused too; the platform's own modules are not", async () => {
    const koa = await lintInJobs(`import Koa from 'koa';\n\nexport const used = Koa;\n`);
    expect(koa.output).toContain('Koa belongs in src/http/ and routes.ts files only.');
    const http = await lintInJobs(`import * as probe from '../http/route.js';\n\nexport const used = probe;\n`);
    expect(http.output).toContain('src/http/ may only be imported from src/http/ and routes.ts files.');
    const generic = await lintInJobs(
      `import type { Platform } from '../platform.js';\nimport { queueNames } from '../config.js';\n\nexport const used: [Platform?, unknown?] = [undefined, queueNames];\n`,
    );
    expect(generic.failed, generic.output).toBe(false);
  });

  it('leaves no probe behind', () => {
    expect(fs.readdirSync(path.join(ROOT_DIR, 'src/jobs')).filter((f) => f.startsWith(`lint-probe-${process.pid}-`))).toEqual([]);
  });
});
