// The console's API types (web/src/api.gen.ts) are what the server's schemas make now: a response schema changed without
// `npm run gen:web-types` fails here, before the console is type-checked against answers the server no longer gives.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, WEB_TYPES_FILE, webTypes } from '../../scripts/gen-web-types.js';

describe(WEB_TYPES_FILE, () => {
  it("is what the server's OpenAPI document generates", async () => {
    const generated = await webTypes();
    const file = path.join(ROOT, WEB_TYPES_FILE);
    const committed = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    if (committed === generated) return;
    const [was, now] = [committed.split('\n'), generated.split('\n')];
    let line = 0;
    while (line < Math.max(was.length, now.length) && was[line] === now[line]) line++;
    expect.fail(
      `${WEB_TYPES_FILE} is out of date with the server's schemas: run \`npm run gen:web-types\` and commit the result.\n` +
        `First difference, line ${line + 1}:\n  committed: ${was[line]?.trim() ?? '(end of file)'}\n  generated: ${now[line]?.trim() ?? '(end of file)'}`,
    );
  });
});
