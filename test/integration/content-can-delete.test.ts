// GET /api/content/{id} says whether the caller may delete the item (its Allow header: GET, DELETE or GET; the body
// stays the item), and it says what DELETE would do:
// for every pair of reader and item owner (a common user's own and another's item, an admin over a common user's, an
// admin against another admin's and root's, root on anything, a legacy item of no one), DELETE is allowed exactly
// when the delete would succeed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
const clients: Record<string, HttpClient> = {};
let seq = 0;

const item = () => {
  seq++;
  return { source: 'can-delete', url: `https://example.com/can-delete/${seq}`, title: `T${seq}`, summary: 's', content: `c${seq}`, score: 5 };
};

beforeAll(async () => {
  t = await startTestApp({ workers: false });
  clients.root = t.root;
  for (const [name, role] of [
    ['alice', 1],
    ['bob', 1],
    ['adam', 10],
    ['ada', 10],
  ] as const) {
    expect((await t.root.post('/api/user/', { username: name, password: `${name}-password`, role })).status).toBe(201);
    clients[name] = new HttpClient(t.url);
    await clients[name].login(name, `${name}-password`);
  }
});
afterAll(async () => {
  await t?.close();
});

describe('the Allow header of an item', () => {
  it('names DELETE exactly when the delete succeeds, for every reader and owner, and the body is the item alone', async () => {
    const owners = ['alice', 'adam', 'root', 'legacy'] as const;
    const readers = ['alice', 'bob', 'adam', 'ada', 'root'] as const;
    const seen: string[] = [];
    for (const owner of owners) {
      for (const reader of readers) {
        const made = await clients[owner === 'legacy' ? 'root' : owner]!.post('/api/content', item());
        expect(made.status).toBe(201);
        if (owner === 'legacy') await t.platform.db('content_items').where({ id: made.body.id }).update({ created_by: null });
        const read = await clients[reader]!.get(`/api/content/${made.body.id}`);
        expect(read.status).toBe(200);
        expect(read.body).toEqual(owner === 'legacy' ? { ...made.body, updatedAt: read.body.updatedAt } : made.body);
        const allow = read.headers.get('allow');
        expect(['GET, DELETE', 'GET']).toContain(allow);
        const deleted = await clients[reader]!.delete(`/api/content/${made.body.id}`);
        expect([200, 403]).toContain(deleted.status);
        expect(allow === 'GET, DELETE', `${reader} reading ${owner}'s item`).toBe(deleted.status === 200);
        if (allow === 'GET, DELETE') seen.push(`${reader}:${owner}`);
      }
    }
    // The rule itself (docs/content.md, Ownership): the creator, an admin above the creator's role or of a legacy item, root.
    expect(seen.sort()).toEqual(
      ['alice:alice', 'adam:alice', 'ada:alice', 'root:alice', 'adam:adam', 'root:adam', 'root:root', 'adam:legacy', 'ada:legacy', 'root:legacy'].sort(),
    );
  });
});
