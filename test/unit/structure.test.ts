// Structure guard: no import cycles, and Koa / src/http/ stay inside the HTTP layer (src/http/ and routes.ts files).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const rel = (file: string): string => path.relative(ROOT, file).split(path.sep).join('/');

function listTs(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : listTs(full);
      return entry.isFile() && entry.name.endsWith('.ts') ? [full] : [];
    })
    .sort();
}

// Every module specifier: static imports, `import type`, `export ... from`, dynamic `import()`.
function specifiers(file: string): string[] {
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return [...new Set(info.importedFiles.map((f) => f.fileName))];
}

const isRelative = (spec: string): boolean => spec === '.' || spec === '..' || /^\.\.?\//.test(spec);

// NodeNext: `./x.js` means `./x.ts` (`./dir/index.js` included); extensionless tries `.ts`, then `/index.ts`.
function resolveRelative(from: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(from), spec);
  const candidates = /\.[mc]?js$/.test(base)
    ? [base.replace(/\.([mc]?)js$/, '.$1ts')]
    : /\.[mc]?ts$/.test(base)
      ? [base]
      : [`${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
}

// Tarjan's strongly connected components.
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>(),
    low = new Map<string, number>();
  const stack: string[] = [],
    onStack = new Set<string>(),
    out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      scc.push(w);
      if (w === v) break;
    }
    out.push(scc);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

// Shortest cycle through `start` inside its component (BFS), as `a.ts -> b.ts -> a.ts`.
function shortestCycle(graph: Map<string, string[]>, scc: Set<string>, start: string): string[] | undefined {
  const prev = new Map<string, string>(),
    queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const w of graph.get(queue[i])!) {
      if (!scc.has(w)) continue;
      if (w === start) {
        const between: string[] = [];
        for (let v = queue[i]; v !== start; v = prev.get(v)!) between.unshift(v);
        return [start, ...between, start];
      }
      if (!prev.has(w)) {
        prev.set(w, queue[i]);
        queue.push(w);
      }
    }
  }
  return undefined;
}

describe('code structure', () => {
  it('has no import cycles in src/, workers/ and migrations/ (type-only and dynamic imports count)', () => {
    // Type-only and dynamic edges are counted on purpose: they vanish at runtime, but a reader (and the
    // refactoring engineer) still has to understand both modules together, and a later `import type` ->
    // `import` change silently turns them into runtime cycles with TDZ / init-order bugs.
    const files = ['src', 'workers', 'migrations'].flatMap((d) => listTs(path.join(ROOT, d)));
    const known = new Set(files);
    const graph = new Map(
      files.map((f) => [
        f,
        [
          ...new Set(
            specifiers(f)
              .filter(isRelative)
              .map((s) => resolveRelative(f, s))
              .filter((t): t is string => t !== undefined && known.has(t)),
          ),
        ],
      ]),
    );
    const cycles = new Set<string>();
    for (const scc of stronglyConnected(graph)) {
      if (scc.length === 1 && !graph.get(scc[0])!.includes(scc[0])) continue;
      const members = new Set(scc);
      for (const start of [...scc].sort()) {
        const chain = shortestCycle(graph, members, start)!.map(rel);
        const body = chain.slice(0, -1),
          first = body.indexOf([...body].sort()[0]);
        const rotated = [...body.slice(first), ...body.slice(0, first)]; // canonical: dedupe rotations
        cycles.add([...rotated, rotated[0]].join(' -> '));
      }
    }
    expect(
      [...cycles].sort(),
      'import cycles (each chain is a shortest cycle through one of its files); ' + 'break them by moving the shared types/code into a lower-level module',
    ).toEqual([]);
  });

  it('keeps Koa and src/http/ out of everything but src/http/ and routes.ts files', () => {
    const koa = /^(koa|@koa\/router|@bull-board\/koa)(\/|$)/;
    const httpDir = path.join(ROOT, 'src', 'http') + path.sep;
    const allowed: Array<[importer: string, imported: string]> = [
      // src/server.ts is the API entry point: it composes the Koa app, so it may pull in the app factory.
      ['src/server.ts', 'src/http/app.ts'],
    ];
    const offenders: string[] = [];
    for (const file of ['src', 'workers'].flatMap((d) => listTs(path.join(ROOT, d)))) {
      if (file.startsWith(httpDir) || path.basename(file) === 'routes.ts') continue;
      for (const spec of specifiers(file)) {
        if (koa.test(spec)) {
          offenders.push(`${rel(file)} -> ${spec}`);
          continue;
        }
        const target = isRelative(spec) ? resolveRelative(file, spec) : undefined;
        if (!target?.startsWith(httpDir)) continue;
        if (allowed.some(([a, b]) => a === rel(file) && b === rel(target))) continue;
        offenders.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(
      offenders.sort(),
      'only src/http/ and routes.ts files may import koa, @koa/router, @bull-board/koa or ' +
        'src/http/ (transport-agnostic code and workers must not depend on the HTTP layer)',
    ).toEqual([]);
  });
});
