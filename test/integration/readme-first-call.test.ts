// The README's first call, as a newcomer runs it (issue 23): its shell block, unchanged but for the server's port, run
// with bash and curl against a fresh server on the embedded defaults (PGlite, a new DATA_DIR), ends in an embeddings list.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clearRedisPrefix, REDIS_URL, tempDir } from '../helpers/services.js';
import { ROOT_DIR, spawnServer } from '../helpers/spawn.js';

const HEADING = '## First call in three commands';
const BASE_LINE = 'B=http://127.0.0.1:3000';

/** The first ```sh block under the README's first-call heading. */
function firstCallBlock(): string {
  const readme = fs.readFileSync(path.join(ROOT_DIR, 'README.md'), 'utf8');
  const at = readme.indexOf(`\n${HEADING}\n`);
  expect(at, `README.md has "${HEADING}"`).toBeGreaterThanOrEqual(0);
  const m = /\n```sh\n([\s\S]*?)\n```/.exec(readme.slice(at));
  expect(m, 'a ```sh block under it').not.toBeNull();
  return m![1]!;
}

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe("the README's first call", () => {
  it('logs in as root, creates a key and gets embeddings from local-hash-v1, on a fresh npm start', async () => {
    const block = firstCallBlock();
    const lines = block.split('\n');
    expect(lines[0], 'the block sets the base URL on its first line').toBe(BASE_LINE);
    // Root's password is what the reader puts in P (the initialPassword of the log, or their ROOT_PASSWORD): here the
    // server is started with ROOT_PASSWORD set to the block's P, so the block runs as written.
    const password = /^P='([^']+)'$/m.exec(block)?.[1];
    expect(password, "the block sets P='…'").toBeDefined();

    const dataDir = tempDir('sy-first-call');
    const prefix = `{sytest-first-call-${path.basename(dataDir)}}`;
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    cleanups.push(() => clearRedisPrefix(prefix));
    const server = await spawnServer([], {
      DATA_DIR: dataDir,
      QUEUE_PREFIX: prefix,
      REDIS_URL,
      DATABASE_URL: undefined,
      SECRET_KEY: undefined,
      ROOT_PASSWORD: password,
    });
    cleanups.push(() => server.stop('SIGKILL'));

    const script = [`B=${server.url}`, ...lines.slice(1)].join('\n');
    const workDir = tempDir('sy-first-call-cwd'); // where the block's cookie jar goes
    cleanups.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      execFile('bash', ['-c', script], { cwd: workDir, timeout: 60_000 }, (err, out, errOut) =>
        err ? reject(new Error(`${err.message}\nstdout: ${out}\nstderr: ${errOut}`)) : resolve({ stdout: out, stderr: errOut }),
      ),
    );
    expect(stderr).toBe('');
    const printed = stdout.trim().split('\n');
    // The login's answer, then the embeddings call's: one JSON answer per line.
    expect(JSON.parse(printed[0]!)).toMatchObject({ success: true, data: { username: 'root', role: 100 } });
    // …and is what the README shows it to be (its fields before the "…").
    const readme = fs.readFileSync(path.join(ROOT_DIR, 'README.md'), 'utf8');
    const shownLogin = /\*\*Log in\*\*: the answer is root's user, `([^`]+)`/.exec(readme)?.[1];
    expect(shownLogin, 'the README shows the login answer').toBeDefined();
    expect(JSON.parse(printed[0]!)).toMatchObject(JSON.parse(shownLogin!.replace(',…', '')));
    const last = JSON.parse(printed.at(-1)!);
    expect(last).toMatchObject({ object: 'list', model: 'local-hash-v1', usage: { prompt_tokens: expect.any(Number) } });
    expect(last.data).toHaveLength(2);
    for (const [i, d] of last.data.entries()) {
      expect(d).toMatchObject({ object: 'embedding', index: i });
      expect(d.embedding).toHaveLength(4);
    }
    // What the README shows the answer to be is what it is (local-hash-v1's vectors are the same on every machine).
    expect(readme).toContain(`"embedding":${JSON.stringify(last.data[0].embedding)}`);
    expect(readme).toContain(`"usage":${JSON.stringify(last.usage)}`);
    expect((await server.stop()).code).toBe(0);
  }, 120_000);
});
