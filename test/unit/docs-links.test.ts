// The manual's links hold (issue 23): every relative link in README.md and docs/*.md points to a file that exists,
// every #anchor (same page or page.md#anchor) names a heading of its target page by GitHub's slug rules, and no
// page cites a document that is not in the repository (SPEC).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../helpers/spawn.js';

/** The Markdown files of the manual, relative to the project. */
function manualFiles(root = ROOT_DIR): string[] {
  const docs = fs.existsSync(path.join(root, 'docs')) ? fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')) : [];
  return ['README.md', ...docs.sort().map((f) => `docs/${f}`)];
}

/** A page's lines outside fenced code blocks (``` or ~~~), with their line numbers. */
function proseLines(text: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | null = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1]![0]!;
      else if (m[1]![0] === fence) fence = null;
      return;
    }
    if (fence === null) out.push({ line, n: i + 1 });
  });
  return out;
}

/** GitHub's anchor for a heading: its text lower-cased, punctuation but `-` and `_` dropped, each space a `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image in a heading: its text
    .replace(/`/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors of a page's headings, in order; a repeated slug gets -1, -2, … as on GitHub. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { line } of proseLines(text)) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Every inline link and image target of a page's prose (code spans and fenced blocks left out). */
function links(text: string): { target: string; n: number }[] {
  const out: { target: string; n: number }[] = [];
  for (const { line, n } of proseLines(text)) {
    // A code span shows text, not a link; a link whose text is a code span keeps its target.
    const prose = line.replace(/`[^`]*`/g, 'code');
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1]!, n });
  }
  return out;
}

/** What is wrong with the links of the manual under `root`: one line per broken link, missing anchor or SPEC citation. */
function brokenLinks(root = ROOT_DIR): string[] {
  const problems: string[] = [];
  const read = (rel: string) => fs.readFileSync(path.join(root, rel), 'utf8');
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (rel: string) => {
    if (!anchorCache.has(rel)) anchorCache.set(rel, anchors(read(rel)));
    return anchorCache.get(rel)!;
  };
  for (const file of manualFiles(root)) {
    const text = read(file);
    text.split('\n').forEach((line, i) => {
      if (/SPEC\s*§|SPEC\.md/.test(line)) problems.push(`${file}:${i + 1}: cites SPEC, a document not in the repository: ${line.trim()}`);
    });
    for (const { target, n } of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const hash = target.indexOf('#');
      const filePart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const rel = filePart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), filePart));
      if (rel.startsWith('..') || !fs.existsSync(path.join(root, rel))) {
        problems.push(`${file}:${n}: ${target}: no such file (${rel})`);
        continue;
      }
      if (anchor === null) continue;
      if (!rel.endsWith('.md')) problems.push(`${file}:${n}: ${target}: an anchor into a file that is not Markdown`);
      else if (!anchorsOf(rel).has(anchor)) problems.push(`${file}:${n}: ${target}: ${rel} has no heading with the anchor #${anchor}`);
    }
  }
  return problems;
}

describe('the links of README.md and docs/*.md', () => {
  it('point to files that exist and to headings their pages have; nothing cites SPEC', () => {
    const files = manualFiles();
    expect(files.length).toBeGreaterThan(10);
    expect(brokenLinks()).toEqual([]);
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Upstream channels (admin): `/api/channel/`')).toBe('upstream-channels-admin-apichannel');
    expect(slug('What bounds `embeddings_local_hash_rps`')).toBe('what-bounds-embeddings_local_hash_rps');
    expect(slug('Usage and audit logs at 5,000,000 rows')).toBe('usage-and-audit-logs-at-5000000-rows');
    expect(slug('Failures, and what happens')).toBe('failures-and-what-happens');
    expect(slug('A & B')).toBe('a--b');
    expect([...anchors('# Notes\n\n## Notes\n\n```sh\n# Notes\n```\n\n### Notes\n')]).toEqual(['notes', 'notes-1', 'notes-2']);
  });

  it('finds a broken file link, a missing anchor, a bad anchor into another page and a SPEC citation', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-docs-links-'));
    try {
      fs.mkdirSync(path.join(root, 'docs'));
      fs.writeFileSync(
        path.join(root, 'README.md'),
        [
          '# Title',
          '## Good part',
          'Fine: [a](docs/a.md), [b](docs/a.md#section-one), [c](#good-part), [d](https://example.com/x#y), `[not](a-link.md)`.',
          'Broken: [e](docs/missing.md), [f](#no-such-heading), [g](docs/a.md#section-two).',
          '```sh',
          '[h](inside-a-fence.md)',
          '```',
          'As SPEC §5 says.',
        ].join('\n'),
      );
      fs.writeFileSync(path.join(root, 'docs/a.md'), '# A\n\n## Section one\n\nBack to [the README](../README.md#title), see SPEC.md.\n');
      const problems = brokenLinks(root);
      expect(problems).toHaveLength(5);
      expect(problems.join('\n')).toMatch(/README\.md:4: docs\/missing\.md: no such file/);
      expect(problems.join('\n')).toMatch(/README\.md:4: #no-such-heading: README\.md has no heading/);
      expect(problems.join('\n')).toMatch(/README\.md:4: docs\/a\.md#section-two: docs\/a\.md has no heading/);
      expect(problems.join('\n')).toMatch(/README\.md:8: cites SPEC/);
      expect(problems.join('\n')).toMatch(/docs\/a\.md:5: cites SPEC/);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
