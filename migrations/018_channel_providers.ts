// Channels of other providers than OpenAI's wire format (src/channels/providers): each keeps its provider's settings in
// `config` (JSON); a direct test records when it ran and how long the upstream took; `group` lists the user groups a
// channel serves (one-api's field: comma-separated, `default` for everyone as before).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('channels', (t) => {
    t.text('config').notNullable().defaultTo('{}');
    t.bigInteger('test_time').nullable();
    t.integer('response_time').nullable();
    t.text('group').notNullable().defaultTo('default');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('channels', (t) => {
    t.dropColumn('config');
    t.dropColumn('test_time');
    t.dropColumn('response_time');
    t.dropColumn('group');
  });
}
