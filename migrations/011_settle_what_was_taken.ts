// A settlement charges what it could take. 009's settle took a cost above the reservation only down to a zero
// balance, but counted the whole cost in used_quota and wrote it in the call's log row: a call whose upstream
// reported more tokens than the user or the key had left was logged (and counted) for quota nobody paid, and a
// limited key gave more than it had. Now the cost above the reservation is taken only as far as the user's quota
// and, for a limited key, the key's remain_quota go; the charge — in used_quota, request counts and the log row's
// quota — is the reservation plus what was taken. A cost below the reservation gives the difference back, as before.
import type { Knex } from 'knex';
import { ledgerFunctionSql, SETTLE_V1 } from './009_ledger.js';

const SETTLE_V2 = `
        elsif o.k = 'settle' then
          -- What is still held for the call: the reservation, or nothing if the sweep gave it back. The user's row
          -- is locked first, as the sweep does: users, then their reservations, then their keys.
          v_held := o.a;
          perform 1 from users where id = o.u for update;
          if o.r is not null then
            delete from quota_reservations where id = o.r returning amount into v_held;
            v_held := coalesce(v_held, 0);
          end if;
          if o.c > v_held then
            -- More than was held: only what the user (and a limited key) still have.
            v_take := least(o.c - v_held, greatest(coalesce((select quota from users where id = o.u), 0), 0));
            if o.t is not null and o.l then
              v_take := least(v_take, greatest(coalesce((select remain_quota from tokens where id = o.t for update), 0), 0));
            end if;
            v_charge := v_held + v_take;
          else
            v_charge := o.c;
          end if;
          update users set quota = quota - (v_charge - v_held), used_quota = used_quota + v_charge, request_count = request_count + 1
          where id = o.u;
          if o.t is not null then
            update tokens set
              used_quota = used_quota + v_charge,
              accessed_time = v_now,
              remain_quota = case when o.l then remain_quota - (v_charge - v_held) else remain_quota end
            where id = o.t;
          end if;
          if v_log is not null and v_charge <> o.c then
            v_log := v_log || jsonb_build_object('quota', v_charge);
          end if;
`;

async function replace(knex: Knex, settle: string) {
  await knex.raw(ledgerFunctionSql(settle, 'create or replace'));
  await knex.raw('alter function switchyard_ledger(jsonb) set plan_cache_mode = force_generic_plan');
}

export async function up(knex: Knex): Promise<void> {
  await replace(knex, SETTLE_V2);
}

export async function down(knex: Knex): Promise<void> {
  await replace(knex, SETTLE_V1);
}
