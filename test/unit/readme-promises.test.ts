// The README's promises, kept honest mechanically (issue 28). docs/testing.md has a table of every README promise and
// the tests that prove it: each test file it names must exist and each test it quotes must be in that file, so a
// renamed or removed test breaks the table here. And the README facts that are plain data are checked against the code:
// the providers table against the adapters, the areas' paths against the OpenAPI document, the settings' bounds
// against the parser.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { forModel } from '../../src/channels/providers/types.js';
import { PROVIDERS } from '../../src/channels/providers/registry.js';
import { ConfigError, parseConfig } from '../../src/config.js';
import { openApiSpec } from '../../scripts/gen-web-types.js';
import { codeSets, scoreCodes } from '../../bench/eval-codes.js';
import { corpus } from '../fixtures/code-corpus.js';
import { heldout } from '../fixtures/code-heldout.js';
import { heldoutFresh } from '../fixtures/code-heldout-fresh.js';
import { heldoutWorld } from '../fixtures/code-heldout-world.js';
import { ROOT_DIR } from '../helpers/spawn.js';

const read = (file: string) => fs.readFileSync(path.join(ROOT_DIR, file), 'utf8');
const README = read('README.md');

/** The lines of a page's section, from its heading to the next heading of that level. */
function section(text: string, heading: string): string[] {
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `the page has "${heading}"`).toBeGreaterThanOrEqual(0);
  const level = heading.split(' ')[0]!;
  const end = text.indexOf(`\n${level} `, start + heading.length + 1);
  return text.slice(start, end === -1 ? undefined : end).split('\n');
}

/** The body rows of the first table in `lines`, as their cells. */
function tableRows(lines: string[]): string[][] {
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const l of lines.slice(first + 2)) {
    if (!l.startsWith('|')) break;
    rows.push(
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

/** The names of the tests and describe blocks of a test file, as written (a template literal keeps its ${…}). */
function testNames(source: string): string[] {
  const names: string[] = [];
  const call = /\b(?:it|test|describe)(?:\.(?:only|skip|concurrent|sequential))?\(\s*(['"`])/g;
  for (let m = call.exec(source); m; m = call.exec(source)) {
    const quote = m[1]!;
    let i = call.lastIndex;
    let name = '';
    while (i < source.length && source[i] !== quote) {
      if (source[i] === '\\') i++;
      name += source[i];
      i++;
    }
    names.push(name);
  }
  return names;
}

/** Whether a quoted name ("…" marking a cut at either end) is one of `names`. */
function quoted(quote: string, names: string[]): boolean {
  const head = quote.startsWith('…');
  const tail = quote.endsWith('…');
  const text = quote.slice(head ? 1 : 0, tail ? -1 : undefined);
  return names.some((n) => (head && tail ? n.includes(text) : head ? n.endsWith(text) : tail ? n.startsWith(text) : n === text));
}

/** A table cell's references: `file` (under test/), then the quoted names that follow it. */
function references(cell: string): { file: string; names: string[] }[] {
  const refs: { file: string; names: string[] }[] = [];
  const parts = cell.split(/`([\w./-]+\.ts)`/);
  for (let i = 1; i < parts.length; i += 2) refs.push({ file: parts[i]!, names: [...parts[i + 1]!.matchAll(/"([^"]+)"/g)].map((q) => q[1]!) });
  return refs;
}

describe('the table of README promises in docs/testing.md', () => {
  const rows = tableRows(section(read('docs/testing.md'), '## README promises and their tests'));

  it('names test files that exist and tests that are in them', () => {
    expect(rows.length).toBeGreaterThanOrEqual(40);
    const problems: string[] = [];
    for (const [promise, tests] of rows) {
      const refs = references(tests ?? '');
      if (refs.length === 0 && !/^not tested\b/.test(tests ?? '')) problems.push(`${promise}: names no test (and does not say "not tested" and why)`);
      for (const { file, names } of refs) {
        const at = path.join(ROOT_DIR, 'test', file);
        if (!fs.existsSync(at)) {
          problems.push(`${promise}: test/${file} does not exist`);
          continue;
        }
        const known = testNames(fs.readFileSync(at, 'utf8'));
        for (const name of names) if (!quoted(name, known)) problems.push(`${promise}: test/${file} has no test "${name}"`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('would see a missing file, a renamed test and a row without a test', () => {
    const names = testNames(
      `describe('a block', () => {\n  it('does one thing', () => {});\n  it(\`does \${n} things\`, () => {});\n  it("it's quoted", () => {});\n});`,
    );
    expect(names).toEqual(['a block', 'does one thing', `does \${n} things`, "it's quoted"]);
    expect(quoted('does one thing', names)).toBe(true);
    expect(quoted('does one…', names)).toBe(true);
    expect(quoted('…things', names)).toBe(true);
    expect(quoted(`…\${n}…`, names)).toBe(true);
    expect(quoted('does two things', names)).toBe(false);
    expect(quoted('does one', names)).toBe(false);
    expect(references('`unit/a.test.ts` "x", "y…"; `integration/b.test.ts`')).toEqual([
      { file: 'unit/a.test.ts', names: ['x', 'y…'] },
      { file: 'integration/b.test.ts', names: [] },
    ]);
  });
});

describe("the README's data", () => {
  it('every path of the areas table is in the OpenAPI document', () => {
    const served = Object.keys(openApiSpec().paths ?? {});
    const listed = tableRows(README.split('\n')).flatMap((cells) => [...cells.at(-1)!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
    expect(listed.length).toBeGreaterThanOrEqual(20);
    const missing = listed.filter((p) =>
      p.endsWith('*') ? !served.some((s) => s.startsWith(p.slice(0, -1))) : !served.some((s) => s === p || s.startsWith(`${p}/`)),
    );
    expect(missing).toEqual([]);
  });

  // Models that stand for the README's words where an ability or a limit depends on the upstream model.
  const SAMPLES: Record<string, { yes: string[]; no: string[] } | Record<string, string>> = {
    'embed-v4 and later': { yes: ['embed-v4.0', 'embed-v5.0'], no: ['embed-english-v3.0', 'embed-multilingual-v3.0'] },
    'Titan v2': { yes: ['amazon.titan-embed-text-v2:0'], no: ['amazon.titan-embed-text-v1', 'cohere.embed-english-v3'] },
    'Titan 1, Cohere 96': { 'amazon.titan-embed-text-v2:0': '1', 'amazon.titan-embed-text-v1': '1', 'cohere.embed-english-v3': '96' },
  };

  it('says what each provider type supports as its adapter declares it (dimensions, inputs per upstream call)', () => {
    const rows = tableRows(section(README, '## Upstream providers'));
    expect(rows.map((r) => /^`([a-z0-9-]+)`/.exec(r[0]!)?.[1]).sort()).toEqual(PROVIDERS.map((p) => p.type).sort());
    for (const [typeCell, , dimensions, inputs] of rows) {
      const p = PROVIDERS.find((x) => typeCell!.startsWith(`\`${x.type}\``))!;
      if (typeof p.dimensions === 'boolean') expect(dimensions, p.type).toBe(p.dimensions ? 'yes' : 'no');
      else {
        const s = SAMPLES[dimensions!] as { yes: string[]; no: string[] } | undefined;
        expect(s, `sample models for "${dimensions}"`).toBeDefined();
        for (const m of s!.yes) expect(forModel(p.dimensions, m), `${p.type} ${m}`).toBe(true);
        for (const m of s!.no) expect(forModel(p.dimensions, m), `${p.type} ${m}`).toBe(false);
      }
      if (typeof p.maxInputs === 'number') expect(inputs, p.type).toBe(String(p.maxInputs));
      else {
        const s = SAMPLES[inputs!] as Record<string, string> | undefined;
        expect(s, `sample models for "${inputs}"`).toBeDefined();
        for (const [m, n] of Object.entries(s!)) expect(String(forModel(p.maxInputs, m)), `${p.type} ${m}`).toBe(n);
      }
    }
  });

  it('holds the settings to the bounds the README gives them (SECRET_KEY, METRICS_TOKEN, ROOT_PASSWORD, LOG_LEVEL)', () => {
    const meaning = new Map(tableRows(section(README, '## Settings')).map((r) => [r[0]!.replace(/`/g, ''), r.at(-1)!]));
    const refused = (name: string, value: string) => () => parseConfig({ [name]: value });
    for (const name of ['SECRET_KEY', 'METRICS_TOKEN']) {
      const least = Number(/≥ (\d+) chars/.exec(meaning.get(name) ?? '')?.[1]);
      expect(least, `${name}: "≥ N chars"`).toBeGreaterThan(0);
      expect(refused(name, 'k'.repeat(least - 1))).toThrow(ConfigError);
      expect(refused(name, 'k'.repeat(least - 1))).toThrow(new RegExp(name));
      expect(parseConfig({ [name]: 'k'.repeat(least) })[name as 'SECRET_KEY']).toBe('k'.repeat(least));
    }
    const [, min, max] = (/\((\d+)–(\d+) chars\)/.exec(meaning.get('ROOT_PASSWORD') ?? '') ?? []).map(Number);
    expect(min && max, 'ROOT_PASSWORD: "(min–max chars)"').toBeTruthy();
    for (const n of [min! - 1, max! + 1]) expect(refused('ROOT_PASSWORD', 'p'.repeat(n))).toThrow(/ROOT_PASSWORD/);
    for (const n of [min!, max!]) expect(parseConfig({ ROOT_PASSWORD: 'p'.repeat(n) }).ROOT_PASSWORD).toBe('p'.repeat(n));
    const levels = [...(meaning.get('LOG_LEVEL') ?? '').matchAll(/`([a-z]+)`/g)].map((m) => m[1]!);
    expect(levels).toEqual(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
    for (const level of levels) expect(parseConfig({ LOG_LEVEL: level }).LOG_LEVEL).toBe(level);
    expect(refused('LOG_LEVEL', 'verbose')).toThrow(/LOG_LEVEL/);
  });

  // The sets `npm run eval:codes` measures, by the README's names for them.
  const CODE_SETS: Record<string, typeof corpus> = {
    'tuned-on corpus': corpus,
    'held-out': heldout,
    'world held-out in 38 other languages': heldoutWorld,
    'fresh held-out in 35 more languages': heldoutFresh,
    // The third set is taken from bench/eval-codes.ts, so that no test file opens it by name (it is scored, never read).
    'third held-out in 34 more languages': codeSets.heldoutThird,
    'all five': [...corpus, ...heldout, ...heldoutWorld, ...heldoutFresh, ...codeSets.heldoutThird],
  };

  it("gives the code extractor's precision and recall as npm run eval:codes measures them, set by set", () => {
    const figures = /`npm run eval:codes`: ([^)]*)\)/.exec(README)?.[1];
    expect(figures, 'the README gives eval:codes figures').toBeDefined();
    const stated = figures!.split('; ').map((f) => /^(.+) (\d\.\d{3}) \/ (\d\.\d{3})$/.exec(f));
    expect(
      stated.every((m) => m !== null),
      figures,
    ).toBe(true);
    for (const [, label, precision, recall] of stated as RegExpExecArray[]) {
      const set = CODE_SETS[label!];
      expect(set, `"${label}" is one of the sets this test knows (add it to CODE_SETS)`).toBeDefined();
      const score = scoreCodes(set!);
      expect([score.precision.toFixed(3), score.recall.toFixed(3)], label).toEqual([precision, recall]);
    }
    // "38 other languages", "35 more", "34 more": languages none of the sets before has.
    // (The corpus's messages carry no language tag: counted as English, the language of most.)
    const languages = (set: readonly object[]) => new Set(set.map((m) => ((m as { lang?: string }).lang ?? 'en').split('-')[0]));
    const [before, world, fresh, third] = [
      languages([...corpus, ...heldout]),
      languages(heldoutWorld),
      languages(heldoutFresh),
      languages(codeSets.heldoutThird),
    ];
    expect([world.size, fresh.size, third.size]).toEqual([38, 35, 34]);
    expect([...world].filter((l) => before.has(l))).toEqual([]);
    expect([...fresh].filter((l) => before.has(l) || world.has(l))).toEqual([]);
    expect([...third].filter((l) => before.has(l) || world.has(l) || fresh.has(l)).length).toBe(0);
  });
});
