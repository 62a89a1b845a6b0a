// Users, sessions, API tokens and redemption codes (one-api's model, with hashed secrets).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.increments('id').primary();
    t.text('username').notNullable();
    t.text('password_hash').notNullable();
    t.text('display_name').notNullable().defaultTo('');
    t.integer('role').notNullable().defaultTo(1);
    t.smallint('status').notNullable().defaultTo(1);
    t.text('email');
    t.bigInteger('quota').notNullable().defaultTo(0);
    t.bigInteger('used_quota').notNullable().defaultTo(0);
    t.bigInteger('request_count').notNullable().defaultTo(0);
    t.specificType('access_token_hash', 'char(64)').unique();
    t.text('group').notNullable().defaultTo('default');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create unique index users_username_lower_uq on users (lower(username))');
  await knex.raw('alter table users add constraint users_quota_nonnegative check (quota >= 0)');

  await knex.schema.createTable('sessions', (t) => {
    t.specificType('id_hash', 'char(64)').primary();
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.text('ip');
    t.text('user_agent');
    t.index(['user_id']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('tokens', (t) => {
    t.increments('id').primary();
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.specificType('key_hash', 'char(64)').notNullable().unique();
    t.text('key_hint').notNullable();
    t.string('name', 50).notNullable().defaultTo('');
    t.smallint('status').notNullable().defaultTo(1);
    t.bigInteger('created_time').notNullable();
    t.bigInteger('accessed_time').notNullable();
    t.bigInteger('expired_time').notNullable().defaultTo(-1);
    t.bigInteger('remain_quota').notNullable().defaultTo(0);
    t.boolean('unlimited_quota').notNullable().defaultTo(false);
    t.bigInteger('used_quota').notNullable().defaultTo(0);
    t.text('models');
    t.text('subnet');
    t.index(['user_id']);
  });
  await knex.raw('alter table tokens add constraint tokens_remain_quota_nonnegative check (remain_quota >= 0)');

  await knex.schema.createTable('redemptions', (t) => {
    t.increments('id').primary();
    t.integer('user_id').references('users.id').onDelete('SET NULL');
    t.specificType('key', 'char(32)').notNullable().unique();
    t.string('name', 20).notNullable();
    t.bigInteger('quota').notNullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.bigInteger('created_time').notNullable();
    t.bigInteger('redeemed_time').notNullable().defaultTo(0);
    t.integer('used_user_id').references('users.id').onDelete('SET NULL');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('redemptions');
  await knex.schema.dropTable('tokens');
  await knex.schema.dropTable('sessions');
  await knex.schema.dropTable('users');
}
