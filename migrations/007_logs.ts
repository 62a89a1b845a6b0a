// Usage and audit logs (one-api's log table), partitioned by UTC day of created_at; and who submitted which job.
import type { Knex } from 'knex';
import { createPartitionSql, DAYS_AHEAD, DAY_SECONDS, daysBetween } from '../src/logs/partitions.js';

export async function up(knex: Knex): Promise<void> {
  // A partitioned table's key must hold the partition key: (created_at, id) is also the admin listing's order.
  await knex.raw('create sequence logs_id_seq');
  await knex.raw(`
    create table logs (
      id bigint not null default nextval('logs_id_seq'),
      created_at bigint not null,
      type smallint not null,
      user_id integer not null default 0,
      username text not null default '',
      token_id integer,
      token_name text not null default '',
      model_name text not null default '',
      channel_id integer,
      quota bigint not null default 0,
      prompt_tokens integer not null default 0,
      completion_tokens integer not null default 0,
      elapsed_time integer not null default 0,
      request_count integer not null default 1,
      cache_hit boolean not null default false,
      status_code smallint,
      request_id text,
      content text not null default '',
      primary key (created_at, id)
    ) partition by range (created_at)`);
  await knex.raw('alter sequence logs_id_seq owned by logs.id');
  // A user's rows newest first; the included columns let /stat and the dashboard sum without the heap.
  await knex.raw(
    'create index logs_user_time on logs (user_id, created_at, id) include (type, quota, prompt_tokens, completion_tokens, request_count, channel_id)',
  );
  // The rare types (everything but consume), so filtering for them never walks the consume rows.
  await knex.raw('create index logs_user_rare_time on logs (user_id, created_at, id) where type <> 2');
  await knex.raw('create index logs_rare_type_time on logs (type, created_at, id) where type <> 2');
  // Rows whose day has no partition (clock jumps, a process that missed its maintenance) still land somewhere.
  await knex.raw('create table logs_default partition of logs default');
  const now = Math.floor(Date.now() / 1000);
  for (const day of daysBetween(now - DAY_SECONDS, now + DAYS_AHEAD * DAY_SECONDS)) await knex.raw(createPartitionSql(day));

  // GET /api/jobs: the jobs a user submitted, newest first (BullMQ cannot list by owner).
  await knex.schema.createTable('job_owners', (t) => {
    t.bigIncrements('seq').primary();
    t.text('job_id').notNullable().unique();
    t.integer('owner_id').notNullable();
    t.text('queue').notNullable();
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner_id', 'seq']);
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('job_owners');
  // Dropping the parent drops every partition with it; the sequence is owned by logs.id.
  await knex.raw('drop table logs');
}
