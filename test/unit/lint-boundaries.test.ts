// The lint boundaries around the areas (issue 23): an area reaches another only through its schema files, store,
// services and shared modules, never its routes, jobs or worker code; and a routes file cannot authorize or parse by
// hand (its endpoint() declaration does both). Each rule is shown failing `npm run lint` on a probe file, and letting
// the allowed imports through.
import { describe, expect, it } from 'vitest';
import { lintProbe } from '../helpers/lint-probe.js';

const INTERNALS = "Another area's internals";
const DECLARED = 'Routes declare their auth and their input';
const uses = (imports: string) => `${imports}\n\nexport const used = [probe];\n`;

describe("an area imports no other area's internals", () => {
  it("refuses another area's routes, jobs and worker code, from an area's module and from a routes file", async () => {
    for (const [dir, name, specifier] of [
      ['src/content', undefined, '../mail/jobs.js'],
      ['src/accounts', undefined, '../embeddings/generate.js'],
      ['src/logs', undefined, '../content/routes.js'],
      ['src/mail', 'routes.ts', '../accounts/passwords.js'],
    ] as const) {
      const verdict = await lintProbe(dir, uses(`import * as probe from '${specifier}';`), name);
      expect(verdict.failed, `${dir} → ${specifier}: ${verdict.output}`).toBe(true);
      expect(verdict.output, specifier).toContain(INTERNALS);
    }
  });

  it("lets through another area's schema files, store, services and shared modules", async () => {
    const imports = [
      '../accounts/schema.js',
      '../logs/jobs-schema.js',
      '../accounts/store.js',
      '../channels/service.js',
      '../mail/accounts-service.js',
      '../accounts/ledger.js',
      '../logs/entries.js',
    ];
    const source = `${imports.map((s, i) => `import * as m${i} from '${s}';`).join('\n')}\n\nexport const used = [${imports.map((_, i) => `m${i}`).join(', ')}];\n`;
    const verdict = await lintProbe('src/embeddings', source);
    expect(verdict.failed, verdict.output).toBe(false);
  });

  it('still refuses src/http in an area module that is not its routes file', async () => {
    const verdict = await lintProbe('src/mail', uses(`import * as probe from '../http/route.js';`));
    expect(verdict.output).toContain('src/http/ may only be imported from src/http/ and routes.ts files.');
  });
});

describe('a routes file neither authorizes nor parses by hand', () => {
  it('refuses authorize, authorizeApiKey, checkSameOrigin and parse in routes.ts and src/http/*-routes.ts', async () => {
    for (const [dir, name, line] of [
      ['src/content', 'routes.ts', "import { authorize as probe } from '../http/auth.js';"],
      ['src/embeddings', 'routes.ts', "import { authorizeApiKey as probe } from '../http/auth.js';"],
      ['src/accounts', 'routes.ts', "import { checkSameOrigin as probe } from '../http/auth.js';"],
      ['src/mail', 'routes.ts', "import { parse as probe } from '../validate.js';"],
      ['src/http', 'probe-routes.ts', "import { authorize as probe } from './auth.js';"],
    ] as const) {
      const verdict = await lintProbe(dir, uses(line), name);
      expect(verdict.failed, `${dir}/${name}: ${line}\n${verdict.output}`).toBe(true);
      expect(verdict.output, line).toContain(DECLARED);
    }
  });

  it('lets a routes file import the declaration API and what it needs to answer', async () => {
    const source =
      "import { SESSION_COOKIE } from '../http/auth.js';\nimport { ApiRouter, endpoint } from '../http/route.js';\nimport { rowId } from '../validate.js';\n\nexport const used = [SESSION_COOKIE, ApiRouter, endpoint, rowId];\n";
    const verdict = await lintProbe('src/content', source, 'routes.ts');
    expect(verdict.failed, verdict.output).toBe(false);
  });
});
