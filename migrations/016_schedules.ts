// Schedules (issue 24): a job kind and its parameters run every interval or on a cron expression, by BullMQ job
// schedulers whose ticks come back here; schedule_runs holds one row per tick (what it did, and how often it ran).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('schedules', (t) => {
    t.increments('id').primary();
    // null: a system schedule (housekeeping), shown to admins only; its system_key names it.
    t.integer('owner_id').nullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('system_key').nullable().unique();
    t.text('name').notNullable();
    // The schedulable kind (mail.fetch, mail.purge, logs.maintain) and its parameters as the user gave them: the
    // job's payload is made from them at each tick, as the API would make it for a request then.
    t.text('kind').notNullable();
    t.jsonb('params').notNullable().defaultTo('{}');
    t.text('cron').nullable();
    t.text('tz').nullable();
    t.bigInteger('interval_ms').nullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    // Why the platform paused it (its owner lost access): shown until the owner resumes it.
    t.text('paused_reason').nullable();
    t.timestamp('last_run_at', { useTz: true }).nullable();
    t.text('last_outcome').nullable();
    t.text('last_message').nullable();
    t.text('last_job_id').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner_id', 'id']);
  });
  await knex.raw('alter table schedules add constraint schedules_one_timing check ((cron is null) <> (interval_ms is null))');
  await knex.schema.createTable('schedule_runs', (t) => {
    t.integer('schedule_id').notNullable().references('id').inTable('schedules').onDelete('CASCADE');
    // The tick's time (ms since the epoch), as BullMQ's scheduler named it: one row per tick.
    t.bigInteger('tick_at').notNullable();
    t.text('outcome').notNullable();
    t.text('message').nullable();
    t.text('job_id').nullable();
    // How many times this tick's job ran (1 unless a worker died mid-tick and another ran it again).
    t.integer('runs').notNullable().defaultTo(1);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['schedule_id', 'tick_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('schedule_runs');
  await knex.schema.dropTable('schedules');
}
