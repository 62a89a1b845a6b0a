// Content items are one per url as urlKey compares them (case of scheme and host, default port, empty path, fragment):
// `https://EXAMPLE.com:443/a#x` was a second item beside `https://example.com/a`.
import type { Knex } from 'knex';
import { urlKey } from '../src/content/url-key.js';

const BATCH = 1000;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('content_items', (t) => {
    t.text('url_key');
  });
  // Stored items get their key, in id order. Where several already share one, the first keeps it and the others get
  // `<key>#<id>`: a key with a fragment, which no url sent from now on has, so they stay as they were (readable,
  // deletable by id) and the next write of that url updates the first.
  const taken = new Set<string>();
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows: { id: string; url: string }[] = await knex('content_items').where('id', '>', after).orderBy('id').limit(BATCH).select('id', 'url');
    if (rows.length === 0) break;
    const keyed = rows.map((r) => {
      let key: string;
      try {
        key = urlKey(r.url);
      } catch {
        key = r.url;
      }
      if (taken.has(key)) key = `${key}#${r.id}`;
      taken.add(key);
      return { id: r.id, key };
    });
    await knex.raw(`update content_items c set url_key = v.key from (select unnest(?::uuid[]) as id, unnest(?::text[]) as key) v where c.id = v.id`, [
      keyed.map((k) => k.id),
      keyed.map((k) => k.key),
    ]);
    after = rows[rows.length - 1]!.id;
  }
  await knex.raw('alter table content_items alter column url_key set not null');
  // A row written by SQL alone (a bulk load, a test's fixture) without a key is keyed by its url as written.
  await knex.raw(`
    create function content_items_default_url_key() returns trigger language plpgsql as $$
    begin
      new.url_key := coalesce(new.url_key, new.url);
      return new;
    end $$`);
  await knex.raw(`create trigger content_items_url_key before insert on content_items
    for each row when (new.url_key is null) execute function content_items_default_url_key()`);
  await knex.schema.alterTable('content_items', (t) => {
    t.unique(['url_key']);
    // The key decides; url itself need not be unique any more (the same url always has the same key).
    t.dropUnique(['url']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger content_items_url_key on content_items');
  await knex.raw('drop function content_items_default_url_key()');
  await knex.schema.alterTable('content_items', (t) => {
    t.unique(['url']);
    t.dropColumn('url_key');
  });
}
