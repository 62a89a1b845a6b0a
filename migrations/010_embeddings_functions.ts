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
      on conflict (model, dimensions, input_hash) do nothing;
    end
    $$`);
  // An upstream call's first round trip: what the cache has of its inputs and, in the same statement, the
  // charge when it has all of them (the cost is known: nothing goes upstream) or else the reservation.
  // p_calls: [{i, m: model, d: dimensions, h: [hashes], charge: ledger op, reserve: ledger op}] (ledger ops
  // as switchyard_ledger takes them; either may be null: nothing to take). Answers the cached vectors
  // (i, hash, vec, toks) and each call's ledger outcome (i, outcome, left_amount).
  await knex.raw(`
    create function switchyard_embeddings_begin(p_calls jsonb)
    returns table (i integer, hash text, vec bytea, toks integer, outcome text, left_amount bigint)
    language plpgsql as $$
    declare
      c record;
      v_found integer;
      v_ops jsonb := '[]';
    begin
      for c in select * from jsonb_to_recordset(p_calls) as x(i integer, m text, d integer, h text[], charge jsonb, reserve jsonb) loop
        v_found := 0;
        for hash, vec, toks in select r.hash, r.vec, r.toks from switchyard_cache_read(c.m, c.d, c.h) as r loop
          i := c.i;
          v_found := v_found + 1;
          return next;
        end loop;
        if v_found = cardinality(c.h) then
          if c.charge is not null then v_ops := v_ops || jsonb_build_array(c.charge || jsonb_build_object('i', c.i)); end if;
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
  // Its last: the new vectors and the settlement (with its log row) in one statement.
  await knex.raw(`
    create function switchyard_embeddings_finish(p_rows jsonb, p_ops jsonb)
    returns table (op integer, outcome text, left_amount bigint)
    language plpgsql as $$
    begin
      perform switchyard_cache_write(p_rows);
      return query select l.op, l.outcome, l.left_amount from switchyard_ledger(p_ops) as l;
    end
    $$`);
  for (const f of [
    'switchyard_cache_read(text, integer, text[])',
    'switchyard_cache_write(jsonb)',
    'switchyard_embeddings_begin(jsonb)',
    'switchyard_embeddings_finish(jsonb, jsonb)',
  ])
    await knex.raw(`alter function ${f} set plan_cache_mode = force_generic_plan`);
  // A 1536-float vector (6 KB) stays in its row, uncompressed: compressing float32 gains nothing, and an
  // out-of-line (TOAST) copy costs a write of its own per chunk. Bigger vectors still go out of line.
  await knex.raw('alter table embedding_cache set (toast_tuple_target = 8160)');
  await knex.raw('alter table embedding_cache alter column vector set storage external');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table embedding_cache alter column vector set storage extended');
  await knex.raw('alter table embedding_cache reset (toast_tuple_target)');
  await knex.raw('drop function switchyard_embeddings_finish(jsonb, jsonb)');
  await knex.raw('drop function switchyard_embeddings_begin(jsonb)');
  await knex.raw('drop function switchyard_cache_write(jsonb)');
  await knex.raw('drop function switchyard_cache_read(text, integer, text[])');
}
