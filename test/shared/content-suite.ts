// The content API's contract over HTTP; run against Postgres (content.test.ts) and embedded PGlite (content-embedded.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkItem } from '../../src/content/schema.js';
import { upsertItems } from '../../src/content/store.js';
import type { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

const MISSING = 'Missing required fields: source, url, summary, content, score';
const SCORE = 'Score must be between 0 and 10';

let seq = 0;
export function item(over: Record<string, unknown> = {}) {
  seq++;
  return {
    source: 'twitter',
    url: `https://example.com/post/${Date.now()}-${seq}`,
    title: `Title ${seq}`,
    summary: `A summary of about fifty characters for item number ${seq}.`,
    content: `Full content of item ${seq}.`,
    score: 5,
    analyzedBy: 'gpt-test',
    ...over,
  };
}

export function contentSuite(label: string, opts: { embedded: boolean }) {
  describe(`content on ${label}`, () => {
    let t: TestApp;
    let c: HttpClient;
    const count = async () => Number((await t.platform.db('content_items').count({ n: '*' }))[0]!.n);
    const stats = async () => (await c.get('/api/stats')).body as { total: number; bySource: Record<string, number> };

    beforeAll(async () => {
      t = await startTestApp({ embedded: opts.embedded });
      c = t.root;
    });
    afterAll(async () => {
      await t?.close();
    });

    describe('create and upsert', () => {
      it('POST creates: 201 with the stored item, a UUIDv7 id and ISO timestamps', async () => {
        const body = item({ score: 8.25, analyzedAt: '2026-01-02T03:04:05.678Z' });
        const res = await c.post('/api/content', body);
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject({ ...body, analyzedAt: '2026-01-02T03:04:05.678Z' });
        expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        for (const k of ['createdAt', 'updatedAt']) expect(res.body[k]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect((await c.get(`/api/content/${res.body.id}`)).body).toEqual(res.body);
      });

      it('an existing url is updated in place: 200, same id and createdAt', async () => {
        const first = (await c.post('/api/content', item({ url: 'https://example.com/upsert-me', score: 1 }))).body;
        await new Promise((r) => setTimeout(r, 5));
        const again = await c.post('/api/content', item({ url: 'https://example.com/upsert-me', score: 9.5, title: 'Changed' }));
        expect(again.status).toBe(200);
        expect(again.body).toMatchObject({ id: first.id, createdAt: first.createdAt, score: 9.5, title: 'Changed' });
        expect(again.body.updatedAt > first.updatedAt).toBe(true);
        expect(await t.platform.db('content_items').where({ url: 'https://example.com/upsert-me' }).count({ n: '*' })).toEqual([{ n: 1 }]);
      });

      it('score 0, numeric strings and missing optional fields are accepted', async () => {
        const res = await c.post('/api/content', { source: 'x', url: 'https://example.com/zero', summary: 's', content: 'c', score: 0 });
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject({ score: 0, title: null, analyzedBy: null });
        expect((await c.post('/api/content', item({ score: '7.5' }))).body.score).toBe(7.5);
      });

      it('missing fields: 400 with the exact message, and nothing stored', async () => {
        const before = await count();
        for (const field of ['source', 'url', 'summary', 'content', 'score']) {
          for (const value of [undefined, null, '']) {
            const body: Record<string, unknown> = item();
            if (value === undefined) delete body[field];
            else body[field] = value;
            const res = await c.post('/api/content', body);
            expect(res.status, `${field}=${String(value)}`).toBe(400);
            expect(res.body).toEqual({ error: MISSING });
          }
        }
        expect((await c.post('/api/content', {})).body).toEqual({ error: MISSING });
        expect(await count()).toBe(before);
      });

      it('score outside 0–10 or not a number: 400 with the exact message', async () => {
        const before = await count();
        for (const score of [-0.1, 10.01, 'abc', true, [5], { v: 5 }, 'NaN', '1e400']) {
          const res = await c.post('/api/content', item({ score }));
          expect(res.status, String(score)).toBe(400);
          expect(res.body).toEqual({ error: SCORE });
        }
        expect(await count()).toBe(before);
      });

      it('wrong types, non-http urls and hard bounds: 400 naming the field', async () => {
        const before = await count();
        const cases: [Record<string, unknown>, string][] = [
          [{ url: 'ftp://example.com/x' }, 'url'],
          [{ url: 'not a url' }, 'url'],
          [{ url: '/relative/path' }, 'url'],
          [{ url: 'javascript:alert(1)' }, 'url'],
          [{ url: `https://example.com/${'a'.repeat(2049)}` }, 'url'],
          [{ url: 42 }, 'url'],
          [{ source: 7 }, 'source'],
          [{ source: 's'.repeat(65) }, 'source'],
          [{ source: '   ' }, 'source'],
          [{ title: 5 }, 'title'],
          [{ title: 't'.repeat(501) }, 'title'],
          [{ summary: ['a'] }, 'summary'],
          [{ summary: 's'.repeat(2001) }, 'summary'],
          [{ content: { text: 'x' } }, 'content'],
          [{ content: 'x'.repeat(1024 * 1024 + 1) }, 'content'],
          [{ content: '汉'.repeat(400_000) }, 'content'],
          [{ analyzedBy: 3 }, 'analyzedBy'],
          [{ analyzedAt: 'yesterday' }, 'analyzedAt'],
        ];
        for (const [over, field] of cases) {
          const res = await c.post('/api/content', item(over));
          expect(res.status, JSON.stringify(over).slice(0, 80)).toBe(400);
          expect(res.body.error).toMatch(new RegExp(`^Invalid field ${field}: `));
        }
        for (const body of ['[1,2]', '"text"', '42']) {
          expect((await c.post('/api/content', body)).status).toBe(400);
        }
        expect(await count()).toBe(before);
      });

      it('SQL-looking values are stored as text, not run', async () => {
        const evil = item({ title: "'); DROP TABLE content_items; --", source: "x' OR '1'='1" });
        const res = await c.post('/api/content', evil);
        expect(res.status).toBe(201);
        expect(res.body.title).toBe(evil.title);
        expect(await count()).toBeGreaterThan(0);
      });

      it('malformed JSON is 400 and a 12 MB body is 413, both as {error}', async () => {
        const bad = await c.post('/api/content', '{"source": "x", ');
        expect(bad.status).toBe(400);
        expect(Object.keys(bad.body)).toEqual(['error']);
        const big = await c.post('/api/content', JSON.stringify(item({ content: 'x'.repeat(12 * 1024 * 1024) })));
        expect(big.status).toBe(413);
        expect(Object.keys(big.body)).toEqual(['error']);
      });
    });

    describe('batch', () => {
      it('rejects a non-array, an empty array and more than 100 entries with the exact messages', async () => {
        const before = await count();
        expect((await c.post('/api/content/batch', item())).body).toEqual({ error: 'Request body must be an array' });
        expect((await c.post('/api/content/batch', '"x"')).body).toEqual({ error: 'Request body must be an array' });
        expect((await c.post('/api/content/batch', [])).body).toEqual({ error: 'Array cannot be empty' });
        const big = await c.post(
          '/api/content/batch',
          Array.from({ length: 101 }, () => item()),
        );
        expect(big.status).toBe(400);
        expect(big.body).toEqual({ error: 'Batch size cannot exceed 100' });
        expect(await count()).toBe(before);
      });

      it('validates each entry on its own and writes the valid ones; errors carry index and url', async () => {
        const before = await count();
        const dup = item();
        const entries = [item(), { ...item(), score: 11 }, dup, item({ url: 'mailto:x@example.com' }), { ...dup, title: 'again' }, 'not an object', item()];
        const res = await c.post('/api/content/batch', entries);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ success: 3, failed: 4, total: 7 });
        expect(res.body.errors).toEqual([
          { index: 1, url: (entries[1] as { url: string }).url, error: SCORE },
          { index: 3, url: 'mailto:x@example.com', error: 'Invalid field url: must be an absolute http(s) URL' },
          { index: 4, url: dup.url, error: 'Duplicate url in batch' },
          { index: 5, url: 'unknown', error: 'Item must be a JSON object' },
        ]);
        expect(res.body.created.map((x: { index: number }) => x.index)).toEqual([0, 2, 6]);
        for (const cr of res.body.created) {
          const got = (await c.get(`/api/content/${cr.id}`)).body;
          expect(got.url).toBe(cr.url);
        }
        expect(await count()).toBe(before + 3);
      });

      it('a batch upserts: a url already stored keeps its id', async () => {
        const existing = (await c.post('/api/content', item())).body;
        const res = await c.post('/api/content/batch', [{ ...item(), url: existing.url, score: 2 }]);
        expect(res.body.created[0].id).toBe(existing.id);
        expect((await c.get(`/api/content/${existing.id}`)).body.score).toBe(2);
      });

      it('100 entries land in full', async () => {
        const before = await count();
        const res = await c.post(
          '/api/content/batch',
          Array.from({ length: 100 }, () => item({ source: 'bulk' })),
        );
        expect(res.body).toMatchObject({ success: 100, failed: 0, total: 100 });
        expect(await count()).toBe(before + 100);
      });
    });

    describe('reading, deleting, stats', () => {
      it('GET by id; unknown or malformed ids are 404, never 500', async () => {
        for (const id of ['01900000-0000-7000-8000-000000000000', 'abc', '1', "1' or '1'='1", 'x'.repeat(300)]) {
          const res = await c.get(`/api/content/${encodeURIComponent(id)}`);
          expect(res.status, id).toBe(404);
          expect(res.body).toEqual({ error: 'Content not found' });
        }
      });

      it('DELETE answers {success:true}, then 404', async () => {
        const created = (await c.post('/api/content', item())).body;
        expect((await c.delete(`/api/content/${created.id}`)).body).toEqual({ success: true });
        expect((await c.delete(`/api/content/${created.id}`)).status).toBe(404);
        expect((await c.delete('/api/content/not-a-uuid')).body).toEqual({ error: 'Content not found' });
      });

      it('stats stay exact after creates, upserts, source changes, batches and deletes', async () => {
        const src = `stats-${Date.now()}`;
        const other = `${src}-other`;
        const base = await stats();
        const a = (await c.post('/api/content', item({ source: src }))).body;
        await c.post('/api/content', item({ source: src }));
        let s = await stats();
        expect(s.bySource[src]).toBe(2);
        expect(s.total).toBe(base.total + 2);
        await c.post('/api/content', { ...item({ source: src }), url: a.url }); // upsert, same source
        expect((await stats()).bySource[src]).toBe(2);
        await c.post('/api/content', { ...item({ source: other }), url: a.url }); // upsert moves it
        s = await stats();
        expect(s.bySource[src]).toBe(1);
        expect(s.bySource[other]).toBe(1);
        await c.post('/api/content/batch', [item({ source: src }), item({ source: other }), item({ source: other })]);
        s = await stats();
        expect([s.bySource[src], s.bySource[other]]).toEqual([2, 3]);
        await c.delete(`/api/content/${a.id}`);
        s = await stats();
        expect(s.bySource[other]).toBe(2);
        expect(s.total).toBe(base.total + 4);
        const n = await count();
        expect(s.total).toBe(n);
        expect(Object.values(s.bySource).reduce((x, y) => x + y, 0)).toBe(n);
      });
    });

    describe('listing', () => {
      const src = `list-${Math.random().toString(36).slice(2, 8)}`;
      const scores = [3, 7.5, 7.5, 7.5, 1, 9, 0, 10, 4.25, 7.5, 6, 2];
      const made: { id: string; score: number; url: string }[] = [];

      beforeAll(async () => {
        for (const [i, score] of scores.entries()) {
          const body = item({
            source: src,
            score,
            title: i === 3 ? '关于独特的分析' : `English Title ${i}`,
            content: i === 5 ? '这是一个独特的中文内容示例' : `plain content ${i}`,
            summary: i === 7 ? 'Mentions QUANTUM computing in the summary' : `summary ${i}`,
            analyzedAt: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
          });
          made.push((await c.post('/api/content', body)).body);
        }
      });

      const ids = (res: { body: { id: string }[] }) => res.body.map((x) => x.id);

      it('is a bare array ordered by score desc, ties by id desc, with X-Total-Count', async () => {
        const res = await c.get(`/api/content?source=${src}`);
        expect(res.status).toBe(200);
        expect(Array.isArray(res.body)).toBe(true);
        const expected = [...made].sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : -1)).map((x) => x.id);
        expect(ids(res)).toEqual(expected);
        expect(res.headers.get('x-total-count')).toBe(String(scores.length));
        expect(res.headers.get('link')).toBeNull();
      });

      it('orders by createdAt and analyzedAt, either way', async () => {
        const byAnalyzed = await c.get(`/api/content?source=${src}&orderBy=analyzedAt`);
        expect(ids(byAnalyzed)).toEqual([...made].reverse().map((x) => x.id));
        const asc = await c.get(`/api/content?source=${src}&orderBy=analyzedAt&order=asc`);
        expect(ids(asc)).toEqual(made.map((x) => x.id));
        const created = await c.get(`/api/content?source=${src}&orderBy=createdAt&order=asc`);
        expect(ids(created)).toEqual(made.map((x) => x.id));
      });

      it('refuses unknown orderBy/order values with 400 and leaves the table alone', async () => {
        const before = await count();
        for (const qs of [
          'orderBy=password',
          'orderBy=score;%20DROP%20TABLE%20content_items',
          'orderBy=id',
          'order=sideways',
          'limit=0',
          'limit=1001',
          'limit=abc',
          'minScore=eleven',
          'maxScore=11',
          'since=not-a-date',
          'cursor=garbage',
        ]) {
          const res = await c.get(`/api/content?${qs}`);
          expect(res.status, qs).toBe(400);
          expect(res.body.error).toMatch(/^Invalid /);
        }
        expect(await count()).toBe(before);
      });

      it('filters by score range and analyzedAt window', async () => {
        const res = await c.get(`/api/content?source=${src}&minScore=4&maxScore=7.5`);
        expect(res.body.map((x: { score: number }) => x.score).sort()).toEqual([4.25, 6, 7.5, 7.5, 7.5, 7.5]);
        expect(res.headers.get('x-total-count')).toBe('6');
        const window = await c.get(`/api/content?source=${src}&since=2026-01-03T00:00:00Z&until=2026-01-05T00:00:00Z&orderBy=analyzedAt&order=asc`);
        expect(ids(window)).toEqual(made.slice(2, 5).map((x) => x.id));
      });

      it('q finds Chinese substrings and is case-insensitive in English, across title, summary and content', async () => {
        const zh = await c.get(`/api/content?source=${src}&q=${encodeURIComponent('独特')}`);
        expect(ids(zh).sort()).toEqual([made[3]!.id, made[5]!.id].sort());
        const en = await c.get(`/api/content?source=${src}&q=quantum`);
        expect(ids(en)).toEqual([made[7]!.id]);
        expect((await c.get(`/api/content?source=${src}&q=${encodeURIComponent('100%')}`)).body).toEqual([]);
      });

      it('the search can be served by the trigram index', async () => {
        const plan = await t.platform.db.transaction(async (trx) => {
          await trx.raw('set local enable_seqscan = off');
          const r = await trx.raw(`explain select id from content_items where (coalesce(title, '') || E'\\x1f' || summary || E'\\x1f' || content) ilike ?`, [
            '%独特%',
          ]);
          return (r.rows as { 'QUERY PLAN': string }[]).map((x) => x['QUERY PLAN']).join('\n');
        });
        expect(plan).toMatch(/content_items_search_trgm/);
      });

      it('a keyset cursor in Link walks every item exactly once, ties included', async () => {
        for (const [orderBy, order] of [
          ['score', 'desc'],
          ['score', 'asc'],
          ['analyzedAt', 'desc'],
          ['createdAt', 'asc'],
        ] as const) {
          const seen: string[] = [];
          let next: string | null = `/api/content?source=${src}&limit=5&orderBy=${orderBy}&order=${order}`;
          let pages = 0;
          while (next) {
            const res: { status: number; headers: Headers; body: { id: string }[] } = await c.get(next);
            expect(res.status).toBe(200);
            expect(res.headers.get('x-total-count')).toBe(String(scores.length));
            seen.push(...ids(res));
            const link: string | null = res.headers.get('link');
            next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
            pages++;
          }
          expect(pages, `${orderBy} ${order}`).toBe(3);
          expect(seen.length).toBe(scores.length);
          expect(new Set(seen).size).toBe(scores.length);
          expect(seen.sort()).toEqual(made.map((x) => x.id).sort());
        }
      });

      it('a cursor from another ordering is refused', async () => {
        const first = await c.get(`/api/content?source=${src}&limit=2`);
        const cursor = new URL(`http://x${/^<([^>]+)>/.exec(first.headers.get('link')!)![1]}`).searchParams.get('cursor');
        expect((await c.get(`/api/content?source=${src}&limit=2&orderBy=createdAt&cursor=${cursor}`)).status).toBe(400);
      });

      it('limit defaults to exactly 100 and caps at exactly 1000 (1100 items stored)', async () => {
        // Seeded through the store in one multi-row upsert: 1100 items of one source, more than the cap.
        const capSource = `cap-${Math.random().toString(36).slice(2, 8)}`;
        const seeded = Array.from({ length: 1100 }, () => {
          const check = checkItem(item({ source: capSource }));
          if (!check.ok) throw new Error(check.error);
          return check.item;
        });
        expect(await upsertItems(t.platform.db, seeded, { id: null, role: 100 })).toHaveLength(1100);
        const nextOf = (res: { headers: Headers }) => /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1] ?? null;

        const byDefault = await c.get(`/api/content?source=${capSource}`);
        expect(byDefault.status).toBe(200);
        expect(byDefault.body).toHaveLength(100);
        expect(byDefault.headers.get('x-total-count')).toBe('1100');
        expect(nextOf(byDefault)).not.toBeNull();
        const unfiltered = await c.get('/api/content');
        expect(unfiltered.body).toHaveLength(100);
        expect(Number(unfiltered.headers.get('x-total-count'))).toBe(await count());
        expect(nextOf(unfiltered)).not.toBeNull();

        const max = await c.get(`/api/content?source=${capSource}&limit=1000`);
        expect(max.status).toBe(200);
        expect(max.body).toHaveLength(1000);
        const rest = await c.get(nextOf(max)!);
        expect(rest.body).toHaveLength(100);
        expect(nextOf(rest)).toBeNull();
        expect(new Set([...ids(max), ...ids(rest)]).size).toBe(1100);
        const over = await c.get(`/api/content?source=${capSource}&limit=1001`);
        expect(over.status).toBe(400);
        expect(over.body).toEqual({ error: 'Invalid limit: must be an integer between 1 and 1000' });
      });
    });

    describe('credentials', () => {
      it('needs credentials (401 as {error}); takes API keys and access tokens', async () => {
        const res = await t.anon.get('/api/content');
        expect(res.status).toBe(401);
        expect(Object.keys(res.body)).toEqual(['error']);
        expect((await t.anon.post('/api/content', item())).status).toBe(401);
        const key = (await c.post('/api/token/', { name: 'content', unlimited_quota: true })).body.data.key;
        expect((await t.anon.get('/api/stats', { authorization: `Bearer ${key}` })).status).toBe(200);
        const access = (await c.get('/api/user/token')).body.data;
        expect((await t.anon.post('/api/content', item(), { authorization: access })).status).toBe(201);
      });
    });
  });
}
