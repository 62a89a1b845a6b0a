// docs/content.md claims about GET /api/content's keyset cursor: pages neither skip nor repeat items while others
// are added, and a deep page costs what the first one does (shown by the plan, not by a stopwatch).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/content/store.js';
import type { HttpClient, Res } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let db: pg.Client;

beforeAll(async () => {
  t = await startTestApp();
  db = new pg.Client({ connectionString: t.testEnv.dbUrl });
  await db.connect();
});

afterAll(async () => {
  await db?.end().catch(() => {});
  await t?.close();
});

const SCORES = [1, 5, 5.5, 9];
let seq = 0;
function newItem(source: string, over: Record<string, unknown> = {}) {
  const n = ++seq;
  return {
    source,
    url: `https://example.com/${source}/${n}-${randomUUID()}`,
    title: `item ${n}`,
    summary: `A summary of item ${n} that is long enough to look like the real thing in a list.`,
    content: `content ${n}`,
    score: SCORES[n % SCORES.length],
    // Few distinct analyzedAt values: many ties, so the id tie-break matters on every page.
    analyzedAt: new Date(Date.UTC(2026, 0, 1 + (n % 3))).toISOString(),
    ...over,
  };
}

/** Follows rel="next" from `first` to the end. */
async function walk(client: HttpClient, first: string) {
  const pages: { id: string }[][] = [];
  let path: string | undefined = first;
  while (path) {
    const res: Res<{ id: string }[]> = await client.get(path);
    expect(res.status, res.text).toBe(200);
    pages.push(res.body);
    path = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return pages;
}

describe('keyset cursor while items are added', () => {
  it('paging with the cursor neither skips nor repeats an item while other items are inserted concurrently (every orderBy, both orders)', async () => {
    const source = 'paging';
    const seeded: string[] = [];
    for (let b = 0; b < 3; b++) {
      const res = await t.root.post(
        '/api/content/batch',
        Array.from({ length: 100 }, () => newItem(source)),
      );
      expect(res.body.success, res.text).toBe(100);
      seeded.push(...res.body.created.map((c: { id: string }) => c.id));
    }

    for (const orderBy of ['score', 'createdAt', 'analyzedAt']) {
      for (const order of ['desc', 'asc']) {
        const label = `${orderBy} ${order}`;
        // Inserts run alongside the paging (not between requests only): each loop adds one item as soon as the last is stored.
        let paging = true;
        const added: string[] = [];
        const inserter = (async () => {
          while (paging) {
            const res = await t.root.post('/api/content', newItem(source));
            expect(res.status).toBe(201);
            added.push(res.body.id);
          }
        })();
        let pages: { id: string }[][];
        try {
          pages = await walk(t.root, `/api/content?source=${source}&orderBy=${orderBy}&order=${order}&limit=17`);
        } finally {
          paging = false;
          await inserter;
        }
        const ids = pages.flat().map((i) => i.id);
        // No repeats...
        expect(ids.length - new Set(ids).size, `${label}: repeated items`).toBe(0);
        // ...and nothing that was there before paging began is skipped.
        const seen = new Set(ids);
        const present = [...seeded];
        expect(
          present.filter((id) => !seen.has(id)),
          `${label}: skipped items`,
        ).toEqual([]);
        expect(added.length, `${label}: items were added while paging`).toBeGreaterThan(3);
        expect(pages.length, label).toBeGreaterThan(10);
        // The next walk starts from everything stored so far.
        seeded.push(...added);
      }
    }
  });
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Index Cond'?: string;
  Filter?: string;
  'Rows Removed by Filter'?: number;
  'Actual Rows': number;
  'Actual Loops': number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

/** The plan's shape and the rows each node produced: what must not change with the page's depth. */
function shape(node: PlanNode): unknown {
  return {
    type: node['Node Type'],
    index: node['Index Name'],
    direction: node['Scan Direction'],
    rows: node['Actual Rows'],
    loops: node['Actual Loops'],
    filtered: node['Rows Removed by Filter'] ?? 0,
    children: (node.Plans ?? []).map(shape),
  };
}
const blocks = (node: PlanNode) => node['Shared Hit Blocks'] + node['Shared Read Blocks'];
function scanOf(node: PlanNode): PlanNode {
  if (node['Node Type'].includes('Scan')) return node;
  for (const child of node.Plans ?? []) {
    const found = scanOf(child);
    if (found) return found;
  }
  throw new Error(`no scan in ${JSON.stringify(node)}`);
}

describe('page 1000 costs the same as page 1', () => {
  const ROWS = 50_000;
  const LIMIT = 50;

  beforeAll(async () => {
    // 50,000 items in one statement; scores with many ties, timestamps at whole milliseconds like the app's.
    await db.query(
      `insert into content_items (id, source, url, title, summary, content, score, analyzed_by, analyzed_at, created_at, updated_at)
       select gen_random_uuid(), 'deep', 'https://example.com/deep/' || i, 'deep ' || i, 'a summary of item ' || i, 'content ' || i,
              (i % 101) / 10.0, 'seed', ts - (i % 977) * interval '1 second', ts + i * interval '1 millisecond', ts
       from generate_series(1, $1::int) as i, (select date_trunc('second', now()) as ts) as t`,
      [ROWS],
    );
    await db.query('analyze content_items');
  }, 120_000);

  /** Runs one list request and returns the SQL it sent for the page (not the count) with its parameters. */
  async function pageQuery(path: string): Promise<{ sql: string; bindings: unknown[]; body: { id: string }[] }> {
    const seen: { sql: string; bindings: unknown[] }[] = [];
    const listen = (q: { sql: string; bindings?: unknown[] }) => {
      if (/from "content_items"/.test(q.sql) && /order by/i.test(q.sql)) seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
    };
    t.platform.db.on('query', listen);
    try {
      const res = await t.root.get(path);
      expect(res.status, res.text).toBe(200);
      expect(seen, 'the page query').toHaveLength(1);
      return { ...seen[0]!, body: res.body };
    } finally {
      t.platform.db.off('query', listen);
    }
  }

  async function explain(q: { sql: string; bindings: unknown[] }): Promise<PlanNode> {
    // knex's query event carries the native SQL ($1, $2 ...) for pg.
    const { rows } = await db.query(`explain (analyze, buffers, format json) ${q.sql}`, q.bindings as unknown[]);
    return rows[0]['QUERY PLAN'][0].Plan as PlanNode;
  }

  const cases = [
    { orderBy: 'score', order: 'desc', column: 'score', index: 'content_items_score_id' },
    { orderBy: 'score', order: 'asc', column: 'score', index: 'content_items_score_id' },
    { orderBy: 'createdAt', order: 'desc', column: 'created_at', index: 'content_items_created_id' },
    { orderBy: 'createdAt', order: 'asc', column: 'created_at', index: 'content_items_created_id' },
    { orderBy: 'analyzedAt', order: 'desc', column: 'analyzed_at', index: 'content_items_analyzed_id' },
    { orderBy: 'analyzedAt', order: 'asc', column: 'analyzed_at', index: 'content_items_analyzed_id' },
  ] as const;

  it.each(cases)(
    'orderBy=$orderBy order=$order: page 1000 (after 49,950 items) runs the same plan over the same rows as page 1, through $index',
    async ({ orderBy, order, column, index }) => {
      const total = Number((await db.query('select count(*) as n from content_items')).rows[0].n);
      expect(total).toBeGreaterThanOrEqual(ROWS);
      // The item that ends page 999 of 50, in this order: page 1000's cursor.
      const dir = order === 'desc' ? 'desc' : 'asc';
      const {
        rows: [last],
      } = await db.query(`select id, ${column} as v from content_items order by ${column} ${dir}, id ${dir} offset $1 limit 1`, [999 * LIMIT - 1]);
      const { rows: expected } = await db.query(`select id from content_items order by ${column} ${dir}, id ${dir} offset $1 limit $2`, [999 * LIMIT, LIMIT]);
      const cursor = encodeCursor({ orderBy, order, value: last.v instanceof Date ? last.v.toISOString() : Number(last.v), id: last.id });

      const base = `/api/content?orderBy=${orderBy}&order=${order}&limit=${LIMIT}`;
      const first = await pageQuery(base);
      const deep = await pageQuery(`${base}&cursor=${cursor}`);
      // It is page 1000: the 50 items after the first 49,950.
      expect(deep.body.map((i) => i.id)).toEqual(expected.map((r: { id: string }) => r.id));

      const [p1, p1000] = [await explain(first), await explain(deep)];
      expect(shape(p1000)).toEqual(shape(p1));
      const scan1 = scanOf(p1);
      const scan1000 = scanOf(p1000);
      // An index scan in the requested direction, stopped by the LIMIT after 51 rows, on both pages...
      expect(scan1000['Node Type']).toBe('Index Scan');
      expect(scan1000['Index Name']).toBe(index);
      expect(scan1000['Scan Direction']).toBe(order === 'desc' ? 'Backward' : 'Forward');
      expect(scan1000['Actual Rows']).toBe(LIMIT + 1);
      // ...the deep page starts at its cursor through the index condition, instead of reading and dropping 49,950 rows.
      expect(scan1000['Index Cond']).toMatch(new RegExp(`ROW\\(${column}, id\\) [<>]`));
      expect(scan1000.Filter).toBeUndefined();
      expect(scan1000['Rows Removed by Filter'] ?? 0).toBe(0);
      // Buffers read on either page: the index descent (a few levels) and at most one heap page per row returned.
      // (Not equal to each other: how many rows share a heap page depends on the data, not on the depth.)
      for (const scan of [scan1, scan1000])
        expect(blocks(scan), `blocks: page 1 ${blocks(scan1)}, page 1000 ${blocks(scan1000)}`).toBeLessThanOrEqual(LIMIT + 1 + 10);
    },
  );
});
