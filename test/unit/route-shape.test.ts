// The shape of the route files (issue 23): thin declarations over services. Read with the TypeScript parser: no
// function in a route file is longer than 80 lines, and no handler authorizes or parses for itself (endpoint() in
// src/http/route.ts does both, from the declaration). Lint refuses the named imports; this also catches a namespace
// import or a local copy.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../helpers/spawn.js';

const MAX_LINES = 80;
const BY_HAND = new Set(['authorize', 'authorizeApiKey', 'resolvePrincipal', 'checkSameOrigin', 'parse']);

/** Every file that declares routes: the areas' routes.ts and src/http's *-routes.ts and routers. */
function routeFiles(): string[] {
  const src = path.join(ROOT_DIR, 'src');
  const areas = fs
    .readdirSync(src, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(src, d.name, 'routes.ts')))
    .map((d) => path.join(src, d.name, 'routes.ts'));
  const http = ['health.ts', 'openapi.ts', ...fs.readdirSync(path.join(src, 'http')).filter((f) => f.endsWith('-routes.ts'))].map((f) =>
    path.join(src, 'http', f),
  );
  return [...areas, ...http];
}

interface Found {
  file: string;
  line: number;
  what: string;
}

function inspect(file: string): { long: Found[]; byHand: Found[]; functions: number } {
  const text = fs.readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const rel = path.relative(ROOT_DIR, file);
  const lineOf = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const long: Found[] = [];
  const byHand: Found[] = [];
  let functions = 0;
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      functions++;
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(sf)) + 1;
      if (lines > MAX_LINES) long.push({ file: rel, line: lineOf(node.getStart(sf)), what: `a function of ${lines} lines` });
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) ? callee.name.text : '';
      // schema.parse() of zod is not the platform's parse; a namespace's (validate.parse, auth.authorize) is.
      const zod = ts.isPropertyAccessExpression(callee) && name === 'parse' && !/validate|^v$/i.test(callee.expression.getText(sf));
      if (BY_HAND.has(name) && !zod) byHand.push({ file: rel, line: lineOf(node.getStart(sf)), what: `${callee.getText(sf)}()` });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { long, byHand, functions };
}

describe('route files are thin declarations', () => {
  const files = routeFiles();

  it('finds the route files of every area and of src/http', () => {
    const names = files.map((f) => path.relative(ROOT_DIR, f));
    for (const area of ['accounts', 'channels', 'content', 'embeddings', 'logs', 'mail']) expect(names).toContain(`src/${area}/routes.ts`);
    expect(names).toContain('src/http/jobs-routes.ts');
  });

  it(`no function in a route file is longer than ${MAX_LINES} lines`, () => {
    const all = files.map(inspect);
    expect(all.reduce((n, r) => n + r.functions, 0)).toBeGreaterThan(50);
    expect(all.flatMap((r) => r.long)).toEqual([]);
  });

  it('no handler calls authorize, authorizeApiKey, resolvePrincipal, checkSameOrigin or parse itself', () => {
    expect(files.flatMap((f) => inspect(f).byHand)).toEqual([]);
  });

  it('would see both: a long function and a hand-made check in a sample', () => {
    const sample = path.join(os.tmpdir(), `route-shape-sample-${process.pid}.ts`);
    fs.writeFileSync(sample, `export async function big(ctx: unknown) {\n  await authorize(ctx);\n${'  void 0;\n'.repeat(MAX_LINES)}}\n`);
    try {
      const found = inspect(sample);
      expect(found.long).toHaveLength(1);
      expect(found.byHand.map((f) => f.what)).toEqual(['authorize()']);
    } finally {
      fs.rmSync(sample, { force: true });
    }
  });
});
