// The quota ledger in one round trip for many calls: a function that applies a batch of reservations, charges,
// settlements and refunds, and writes the log rows of those that took effect (src/accounts/ledger.ts); the
// reservations it holds until their calls settle, and the sweep that returns those whose process died.
import type { Knex } from 'knex';
import * as m008 from './008_quota_functions.js';

export async function up(knex: Knex): Promise<void> {
  // A reservation taken and not yet settled or refunded. Its process settles it (or refunds it) when its call
  // ends; one that outlives expires_at belonged to a process that died mid-call, and the sweep gives it back.
  await knex.raw(`
    create table quota_reservations (
      id uuid primary key,
      user_id integer not null,
      token_id integer,
      limited boolean not null,
      amount bigint not null,
      expires_at bigint not null
    )`);
  await knex.raw('create index quota_reservations_expiry on quota_reservations (expires_at)');

  // p_ops is a JSON array of operations, each {i, k, u, t, l, a, c, r, x, log}: i its place in the batch, k its
  // kind, u the user, t the API key (l: the key has a limited remain_quota), a the amount (reserved, or
  // charged), c the actual cost (settle), r the reservation's id (reserve, settle, refund), x in how many seconds
  // an unsettled reservation is given back (reserve; on the database's clock, which the sweep reads too), log the
  // row to write when the operation takes effect.
  //
  // - reserve: takes a from the user and, for a limited key, from the key: both or neither (conditional
  //   UPDATEs, so concurrent calls never take a balance below zero); a shortfall answers which and what is
  //   left. The reservation is recorded (quota_reservations) until its call settles or refunds it.
  // - charge: a reservation and its settlement at once, for a cost known in advance, with its log row.
  // - settle: a reservation's real cost: gives back (or takes, never below zero) the difference, counts the
  //   spend in used_quota and request_count, and writes the call's log row. A reservation the sweep has
  //   already given back is charged in full.
  // - refund: gives a reservation back (unless the sweep already did), with the call's error row.
  //
  // The operations run in (user, key) order, whatever their order in the batch, so two batches never wait
  // for each other's rows in a cycle. All of it is one statement: one transaction, committed without
  // waiting for the WAL flush (see NO_FLUSH in src/db.ts). Each answer row is one operation: {op, outcome,
  // left_amount}, outcome 'ok', or 'user' / 'token' for a shortfall.
  await knex.raw(ledgerFunctionSql(SETTLE_V1));
  // Its statements' plans do not depend on the values: planned once per connection, not once per call.
  await knex.raw('alter function switchyard_ledger(jsonb) set plan_cache_mode = force_generic_plan');

  // Gives back up to p_limit reservations past their expiry (their process died before settling them), each
  // with an error row (type 5) on its user saying so; answers how many it returned. Rows are locked in the
  // ledger's order — a user, then that user's reservation, then its key — so a sweep never waits in a cycle
  // with a ledger batch or another sweep; a reservation settled or swept meanwhile is skipped.
  await knex.raw(`
    create function switchyard_sweep_reservations(p_limit integer)
    returns integer
    language plpgsql as $$
    declare
      v_now bigint := extract(epoch from now())::bigint;
      c record;
      v record;
      v_count integer := 0;
    begin
      perform set_config('synchronous_commit', 'off', true);
      for c in
        select id, user_id from quota_reservations where expires_at <= v_now
        order by user_id, token_id nulls first, id limit p_limit
      loop
        perform 1 from users where id = c.user_id for update;
        delete from quota_reservations where id = c.id returning * into v;
        continue when v.id is null;
        update users set quota = quota + v.amount where id = v.user_id;
        if v.token_id is not null and v.limited then
          update tokens set remain_quota = remain_quota + v.amount where id = v.token_id;
        end if;
        insert into logs (created_at, type, user_id, username, token_id, token_name, content)
        select v_now, 5, v.user_id, coalesce((select username from users where id = v.user_id), ''), v.token_id,
               coalesce((select name from tokens where id = v.token_id), ''),
               'A call stopped before it was settled (its API process ended): the ' || v.amount || ' quota reserved for it was given back';
        v_count := v_count + 1;
      end loop;
      return v_count;
    end
    $$`);

  // 008's single reservation is replaced by these.
  await knex.raw('drop function switchyard_reserve_quota(integer, integer, bigint)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function switchyard_sweep_reservations(integer)');
  await knex.raw('drop function switchyard_ledger(jsonb)');
  // Quota still held goes back to its users and keys with the table that held it.
  await knex.raw(
    'update users set quota = quota + r.amount from (select user_id, sum(amount) as amount from quota_reservations group by user_id) r where users.id = r.user_id',
  );
  await knex.raw(
    'update tokens set remain_quota = remain_quota + r.amount from (select token_id, sum(amount) as amount from quota_reservations where limited group by token_id) r where tokens.id = r.token_id',
  );
  await knex.raw('drop table quota_reservations');
  await m008.up(knex);
}

/**
 * 009's settle: a reservation's real cost, the difference given back or taken (never below zero), the whole
 * cost counted in used_quota and the log row. 011 replaced it: what could not be taken was still counted.
 */
export const SETTLE_V1 = `        elsif o.k = 'settle' then
          -- What is still held for the call: the reservation, or nothing if the sweep gave it back. The user's row
          -- is locked first, as the sweep does: users, then their reservations, then their keys.
          v_held := o.a;
          if o.r is not null then
            perform 1 from users where id = o.u for update;
            delete from quota_reservations where id = o.r returning amount into v_held;
            v_held := coalesce(v_held, 0);
          end if;
          update users set quota = greatest(quota - (o.c - v_held), 0), used_quota = used_quota + o.c, request_count = request_count + 1
          where id = o.u;
          if o.t is not null then
            update tokens set
              used_quota = used_quota + o.c,
              accessed_time = v_now,
              remain_quota = case when o.l then greatest(remain_quota - (o.c - v_held), 0) else remain_quota end
            where id = o.t;
          end if;
`;

/** switchyard_ledger, with its settle branch given (011 replaced 009's); `verb` 'create or replace' to replace it. */
export function ledgerFunctionSql(settle: string, verb = 'create'): string {
  return `    ${verb} function switchyard_ledger(p_ops jsonb)
    returns table (op integer, outcome text, left_amount bigint)
    language plpgsql as $$
    declare
      o record;
      v_now bigint := extract(epoch from now())::bigint;
      v_logs jsonb := '[]';
      v_held bigint;
      v_take bigint;
      v_charge bigint;
      v_log jsonb;
    begin
      perform set_config('synchronous_commit', 'off', true);
      for o in
        select * from jsonb_to_recordset(p_ops) as x(i integer, k text, u integer, t integer, l boolean, a bigint, c bigint, r uuid, x bigint, log jsonb)
        order by x.u, x.t nulls first, x.i
      loop
        op := o.i;
        v_log := o.log;
        outcome := 'ok';
        left_amount := 0;
        if o.k = 'reserve' or o.k = 'charge' then
          update users set
            quota = quota - o.a,
            used_quota = used_quota + case when o.k = 'charge' then o.a else 0 end,
            request_count = request_count + case when o.k = 'charge' then 1 else 0 end
          where id = o.u and quota >= o.a;
          if not found then
            outcome := 'user';
            left_amount := coalesce((select quota from users where id = o.u), 0);
          elsif o.t is not null and (o.l or o.k = 'charge') then
            update tokens set
              remain_quota = remain_quota - case when o.l then o.a else 0 end,
              used_quota = used_quota + case when o.k = 'charge' then o.a else 0 end,
              accessed_time = case when o.k = 'charge' then v_now else accessed_time end
            where id = o.t and (not o.l or remain_quota >= o.a);
            if not found then
              -- The key is short: the user's part goes back before anyone can see it.
              update users set
                quota = quota + o.a,
                used_quota = used_quota - case when o.k = 'charge' then o.a else 0 end,
                request_count = request_count - case when o.k = 'charge' then 1 else 0 end
              where id = o.u;
              outcome := 'token';
              left_amount := coalesce((select remain_quota from tokens where id = o.t), 0);
            end if;
          end if;
          if outcome = 'ok' and o.k = 'reserve' and o.r is not null then
            insert into quota_reservations (id, user_id, token_id, limited, amount, expires_at) values (o.r, o.u, o.t, o.l, o.a, v_now + o.x);
          end if;
${settle}        elsif o.k = 'refund' then
          v_held := o.a;
          if o.r is not null then
            perform 1 from users where id = o.u for update;
            delete from quota_reservations where id = o.r returning amount into v_held;
            v_held := coalesce(v_held, 0);
          end if;
          if v_held > 0 then
            update users set quota = quota + v_held where id = o.u;
            if o.t is not null and o.l then
              update tokens set remain_quota = remain_quota + v_held where id = o.t;
            end if;
          end if;
        else
          raise exception 'unknown ledger operation %', o.k;
        end if;
        if outcome = 'ok' and v_log is not null then
          v_logs := v_logs || jsonb_build_array(v_log);
        end if;
        return next;
      end loop;
      if jsonb_array_length(v_logs) > 0 then
        insert into logs (created_at, type, user_id, username, token_id, token_name, model_name, channel_id, quota, prompt_tokens,
                          completion_tokens, elapsed_time, request_count, cache_hit, status_code, request_id, content)
        select r.created_at, r.type, r.user_id, coalesce(r.username, (select username from users where id = r.user_id), ''), r.token_id,
               r.token_name, r.model_name, r.channel_id, r.quota, r.prompt_tokens, r.completion_tokens, r.elapsed_time, r.request_count,
               r.cache_hit, r.status_code, r.request_id, r.content
        from jsonb_populate_recordset(null::logs, v_logs) as r;
      end if;
    end
    $$`;
}
