// The lint boundary of src/jobs (issue 23): the job platform is generic, so `npm run lint` refuses a file under
// src/jobs/ that imports an area (or the composition root, src/job-kinds.ts), and still refuses Koa and src/http there.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lintProbe } from '../helpers/lint-probe.js';
import { ROOT_DIR } from '../helpers/spawn.js';

const AREA_MESSAGE = 'src/jobs is generic and imports no area';

const lintInJobs = (source: string) => lintProbe('src/jobs', source);

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
