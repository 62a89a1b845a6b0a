// The embeddings cache read and written through functions (src/embeddings/store.ts), alone or with the call's quota
// (switchyard_ledger): their statements are planned once per connection, not once per call, and each carries many calls.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Each hash is looked up in the primary key on its own (a LATERAL probe): `input_hash = any(…)` or a join on a
  // list of keys may be planned as a scan of all of a model's rows while the table's statistics are young.
  await knex.raw(`
    create function switchyard_cache_read(p_model text, p_dimensions integer, p_hashes text[])
    returns table (hash text, vec bytea, toks integer)
    language plpgsql stable as $$
    begin
      return query
        select c.input_hash::text, c.vector, c.tokens
        from unnest(p_hashes) as k(h),
        lateral (select e.input_hash, e.vector, e.tokens from embedding_cache e
                 where e.model = p_model and e.dimensions = p_dimensions and e.input_hash = k.h::char(64) limit 1) as c;
    end
    $$`);
  // p_rows: [{m: model, d: dimensions, h: hash, v: base64 float32, t: tokens}]. A row lost to a crash of Postgres is
  // only asked for again, so the statement does not wait for the WAL flush (NO_FLUSH in src/db.ts).
  await knex.raw(`
    create function switchyard_cache_write(p_rows jsonb)
    returns void
    language plpgsql as $$
    begin
      perform set_config('synchronous_commit', 'off', true);
      insert into embedding_cache (model, dimensions, input_hash, vector, tokens)
      select k.m, k.d, k.h, decode(k.v, 'base64'), k.t from jsonb_to_recordset(p_rows) as k(m text, d integer, h text, v text, t integer)
      -- In key order: two statements writing some of the same new keys wait for each other in the same order, never in a cycle.
      order by k.m, k.d, k.h
      on conflict (model, dimensions, input_hash) do nothing;
    end
    $$`);
  // The round trips of upstream calls, many calls to a statement: each call's begin (what the cache has of its
  // inputs and, in the same statement, the charge when it has all of them — the cost is known, nothing goes
  // upstream — or else the reservation) and each call's finish (its new vectors and its settlement). One
  // statement a round, so a process's calls never wait for each other's row locks across statements.
  // p_rows: new vectors (switchyard_cache_write). p_begins: [{i, m: model, d: dimensions, h: [hashes],
  // charge: ledger op, reserve: ledger op or null}]. p_settles: ledger ops ({i, …}). Answers the cached
  // vectors found (i, hash, vec, toks) and every operation's outcome (i, outcome, left_amount).
  await knex.raw(`
    create function switchyard_embeddings_round(p_rows jsonb, p_begins jsonb, p_settles jsonb)
    returns table (i integer, hash text, vec bytea, toks integer, outcome text, left_amount bigint)
    language plpgsql as $$
    declare
      c record;
      v_found integer;
      v_ops jsonb := p_settles;
    begin
      if jsonb_array_length(p_rows) > 0 then
        perform switchyard_cache_write(p_rows);
      end if;
      for c in select * from jsonb_to_recordset(p_begins) as x(i integer, m text, d integer, h text[], charge jsonb, reserve jsonb) loop
        v_found := 0;
        for hash, vec, toks in select r.hash, r.vec, r.toks from switchyard_cache_read(c.m, c.d, c.h) as r loop
          i := c.i;
          v_found := v_found + 1;
          return next;
        end loop;
        if v_found = cardinality(c.h) then
          v_ops := v_ops || jsonb_build_array(c.charge || jsonb_build_object('i', c.i));
        elsif c.reserve is not null then
          v_ops := v_ops || jsonb_build_array(c.reserve || jsonb_build_object('i', c.i));
        end if;
      end loop;
      hash := null;
      vec := null;
      toks := null;
      for i, outcome, left_amount in select l.op, l.outcome, l.left_amount from switchyard_ledger(v_ops) as l loop
        return next;
      end loop;
    end
    $$`);
  for (const f of ['switchyard_cache_read(text, integer, text[])', 'switchyard_cache_write(jsonb)', 'switchyard_embeddings_round(jsonb, jsonb, jsonb)'])
    await knex.raw(`alter function ${f} set plan_cache_mode = force_generic_plan`);
  // A 1536-float vector (6 KB) stays in its row, uncompressed: compressing float32 gains nothing, and an
  // out-of-line (TOAST) copy costs a write of its own per chunk. Bigger vectors still go out of line.
  await knex.raw('alter table embedding_cache set (toast_tuple_target = 8160)');
  await knex.raw('alter table embedding_cache alter column vector set storage external');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table embedding_cache alter column vector set storage extended');
  await knex.raw('alter table embedding_cache reset (toast_tuple_target)');
  await knex.raw('drop function switchyard_embeddings_round(jsonb, jsonb, jsonb)');
  await knex.raw('drop function switchyard_cache_write(jsonb)');
  await knex.raw('drop function switchyard_cache_read(text, integer, text[])');
}
