// The providers' table in docs/providers.md says what the registry holds: a row per provider, with its one-api number
// and what it supports as its adapter declares it (the manual must be true as providers are added).
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROVIDERS } from '../../src/channels/providers/registry.js';

const doc = fs.readFileSync(new URL('../../docs/providers.md', import.meta.url), 'utf8');
const rows = new Map(
  doc
    .split('\n')
    .filter((l) => /^\| `[a-z0-9-]+` \|/.test(l))
    .map((l) => {
      const cells = l.split('|').map((c) => c.trim());
      return [cells[1]!.replace(/`/g, ''), cells.slice(2)] as const;
    }),
);

describe('README.md', () => {
  it('lists every registered provider in its providers table, with its one-api number where it has one', () => {
    const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const listed = readme
      .split('\n')
      .map((l) => /^\| `([a-z0-9-]+)`( \((\d+)\))? \|/.exec(l))
      .filter((m) => m !== null)
      .map((m) => [m[1], m[3] === undefined ? null : Number(m[3])]);
    expect(listed.sort()).toEqual(PROVIDERS.map((p) => [p.type, p.oneApiType]).sort());
  });
});

describe('docs/providers.md', () => {
  it('has a row for every registered provider and none for a provider that is not registered', () => {
    expect([...rows.keys()].sort()).toEqual(PROVIDERS.map((p) => p.type).sort());
  });

  for (const p of PROVIDERS) {
    it(`says what ${p.type} supports as its adapter declares it (one-api number, dimensions, base64)`, () => {
      const [oneApi, , dimensions, base64] = rows.get(p.type) ?? [];
      expect(oneApi).toBe(p.oneApiType === null ? '—' : String(p.oneApiType));
      // A per-model ability is described in words; a fixed one is yes or no.
      if (typeof p.dimensions === 'boolean') expect(dimensions?.startsWith(p.dimensions ? 'yes' : 'no')).toBe(true);
      else expect(dimensions).not.toMatch(/^(yes|no)$/);
      expect(base64?.startsWith(p.base64 ? 'yes' : 'no')).toBe(true);
    });
  }
});
