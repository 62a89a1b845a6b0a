// Upstream channels for area A (one-api's channel model, keys encrypted) and the embeddings cache.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('channels', (t) => {
    t.increments('id').primary();
    t.text('type').notNullable().defaultTo('openai');
    t.text('name').notNullable();
    t.text('base_url').notNullable();
    t.text('key_enc').notNullable();
    t.text('key_hint').notNullable();
    t.text('models').notNullable();
    t.text('model_mapping').notNullable().defaultTo('{}');
    t.integer('priority').notNullable().defaultTo(0);
    t.integer('weight').notNullable().defaultTo(1);
    t.double('price');
    t.smallint('status').notNullable().defaultTo(1);
    t.text('status_reason');
    t.bigInteger('used_quota').notNullable().defaultTo(0);
    t.bigInteger('created_time').notNullable();
    t.bigInteger('updated_time').notNullable();
  });

  await knex.schema.createTable('embedding_cache', (t) => {
    t.text('model').notNullable();
    t.integer('dimensions').notNullable();
    t.specificType('input_hash', 'char(64)').notNullable();
    t.binary('vector').notNullable();
    t.integer('tokens').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['model', 'dimensions', 'input_hash']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('embedding_cache');
  await knex.schema.dropTable('channels');
}
