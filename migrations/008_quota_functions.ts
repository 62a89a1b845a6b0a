// Reserving quota in one round trip: a function that takes a call's cost from the user and, for a limited
// key, from the key too, or from neither (src/accounts/store.ts reserveQuota).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Runs as one statement (so as one transaction, also behind a transaction-pooling PgBouncer). Each
  // UPDATE is conditional, so concurrent calls never take a balance below zero; a key short of the cost
  // gives the user's part back before the statement ends, so no one ever sees half a reservation.
  // It commits without waiting for the WAL flush (see NO_FLUSH in src/db.ts).
  await knex.raw(`
    create function switchyard_reserve_quota(p_user integer, p_token integer, p_amount bigint)
    returns table (which text, left_amount bigint)
    language plpgsql as $$
    begin
      perform set_config('synchronous_commit', 'off', true);
      update users set quota = quota - p_amount where id = p_user and quota >= p_amount;
      if not found then
        return query select 'user'::text, coalesce((select quota from users where id = p_user), 0)::bigint;
        return;
      end if;
      if p_token is not null then
        update tokens set remain_quota = remain_quota - p_amount where id = p_token and remain_quota >= p_amount;
        if not found then
          update users set quota = quota + p_amount where id = p_user;
          return query select 'token'::text, coalesce((select remain_quota from tokens where id = p_token), 0)::bigint;
          return;
        end if;
      end if;
      return query select 'ok'::text, 0::bigint;
    end
    $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function switchyard_reserve_quota(integer, integer, bigint)');
}
