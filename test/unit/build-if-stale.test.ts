// npm start builds only when sources changed: the staleness rule of scripts/build-if-stale.mjs, on a tree of its own.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { markBuilt, PARTS, staleness } from '../../scripts/build-if-stale.mjs';

describe('build-if-stale', () => {
  let root: string;
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  /** A tree with the server's inputs and a finished build of it. */
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-build-'));
    write('src/server.ts', 'export {};');
    write('migrations/001.ts', 'export {};');
    write('package-lock.json', '{}');
    write(PARTS.server.output, '// built');
    markBuilt(root, 'server', staleness(root, 'server').print);
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('is not stale after a build with nothing changed', () => {
    expect(staleness(root, 'server').stale).toBe(false);
  });

  it('is stale when a source is edited, added or removed, or the lock file changes', () => {
    const edits = [
      () => write('src/server.ts', 'export const x = 1;'),
      () => write('src/new-file.ts', 'export {};'),
      () => fs.rmSync(path.join(root, 'migrations/001.ts')),
      () => write('package-lock.json', '{"lockfileVersion":3}'),
    ];
    for (const edit of edits) {
      edit();
      expect(staleness(root, 'server').stale, edit.toString()).toBe(true);
      markBuilt(root, 'server', staleness(root, 'server').print);
    }
  });

  it('is stale when the build output is gone, and keeps the other part stamped', () => {
    write('web/index.html', '<!doctype html>');
    write(PARTS.console.output, '<!doctype html>');
    markBuilt(root, 'console', staleness(root, 'console').print);
    fs.rmSync(path.join(root, PARTS.server.output));
    expect(staleness(root, 'server').stale).toBe(true);
    expect(staleness(root, 'console').stale).toBe(false);
  });

  it('does not look into node_modules or dot folders (their churn would rebuild every start)', () => {
    write('web/index.html', '<!doctype html>');
    write(PARTS.console.output, '<!doctype html>');
    markBuilt(root, 'console', staleness(root, 'console').print);
    write('web/node_modules/.vite/deps.json', '{}');
    write('src/.cache/x', '1');
    expect(staleness(root, 'console').stale).toBe(false);
    expect(staleness(root, 'server').stale).toBe(false);
  });
});
