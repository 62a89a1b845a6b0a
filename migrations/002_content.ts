// Content items (area C), per-source counters kept by statement triggers, trigram search, job payloads.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // pg_trgm is a trusted extension (PG 13+): a database owner may create it.
  await knex.raw('create extension if not exists pg_trgm');

  await knex.schema.createTable('content_items', (t) => {
    t.uuid('id').primary();
    t.string('source', 64).notNullable();
    t.text('url').notNullable().unique();
    t.text('title');
    t.text('summary').notNullable();
    t.text('content').notNullable();
    t.double('score').notNullable();
    t.text('analyzed_by');
    t.timestamp('analyzed_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw('alter table content_items add constraint content_items_score_range check (score >= 0 and score <= 10)');
  // Keyset pagination: one (sort key, id) index per orderBy, scanned in either direction.
  await knex.raw('create index content_items_score_id on content_items (score, id)');
  await knex.raw('create index content_items_created_id on content_items (created_at, id)');
  await knex.raw('create index content_items_analyzed_id on content_items (analyzed_at, id)');
  await knex.raw('create index content_items_source_score_id on content_items (source, score, id)');
  // One trigram index over the three searchable fields; \x1f keeps a match from spanning two fields.
  await knex.raw(
    `create index content_items_search_trgm on content_items
       using gin ((coalesce(title, '') || E'\\x1f' || summary || E'\\x1f' || content) gin_trgm_ops)`,
  );

  // Counts per source, maintained by statement-level triggers: /api/stats never counts the table.
  await knex.schema.createTable('content_stats', (t) => {
    t.string('source', 64).primary();
    t.bigInteger('count').notNullable().defaultTo(0);
  });
  await knex.raw(`
    create function content_stats_apply() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        insert into content_stats as s (source, count)
          select source, count(*) from new_rows group by source
          on conflict (source) do update set count = s.count + excluded.count;
      elsif tg_op = 'DELETE' then
        update content_stats s set count = s.count - d.n
          from (select source, count(*) as n from old_rows group by source) d where s.source = d.source;
      elsif tg_op = 'UPDATE' then
        -- only a changed source moves a count
        update content_stats s set count = s.count - d.n
          from (select o.source, count(*) as n from old_rows o join new_rows n using (id)
                where o.source <> n.source group by o.source) d
          where s.source = d.source;
        insert into content_stats as s (source, count)
          select n.source, count(*) from old_rows o join new_rows n using (id)
          where o.source <> n.source group by n.source
          on conflict (source) do update set count = s.count + excluded.count;
      end if;
      delete from content_stats where count <= 0;
      return null;
    end $$`);
  await knex.raw(`create trigger content_stats_ins after insert on content_items
    referencing new table as new_rows for each statement execute function content_stats_apply()`);
  await knex.raw(`create trigger content_stats_del after delete on content_items
    referencing old table as old_rows for each statement execute function content_stats_apply()`);
  await knex.raw(`create trigger content_stats_upd after update on content_items
    referencing old table as old_rows new table as new_rows for each statement execute function content_stats_apply()`);

  // Large job payloads live here; the queue carries only their id.
  await knex.schema.createTable('job_payloads', (t) => {
    t.text('job_id').primary();
    t.text('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('job_payloads');
  await knex.raw('drop trigger if exists content_stats_upd on content_items');
  await knex.raw('drop trigger if exists content_stats_del on content_items');
  await knex.raw('drop trigger if exists content_stats_ins on content_items');
  await knex.schema.dropTable('content_stats');
  await knex.raw('drop function if exists content_stats_apply()');
  await knex.schema.dropTable('content_items');
  // pg_trgm stays: other objects in the database may use it.
}
