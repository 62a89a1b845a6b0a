// Mail accounts (credentials encrypted), messages fetched from them, and the record of sends.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mail_accounts', (t) => {
    t.increments('id').primary();
    t.integer('owner_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('auth_type').notNullable();
    t.text('client_id');
    t.text('secret_enc').notNullable();
    t.text('imap_host').notNullable();
    t.integer('imap_port').notNullable();
    t.boolean('imap_secure').notNullable();
    t.text('smtp_host').notNullable();
    t.integer('smtp_port').notNullable();
    t.boolean('smtp_secure').notNullable();
    t.text('last_error');
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['owner_id', 'email']);
    t.index(['email']);
  });
  await knex.raw("alter table mail_accounts add constraint mail_accounts_auth_type check (auth_type in ('password', 'oauth2'))");

  await knex.schema.createTable('mail_messages', (t) => {
    t.uuid('id').primary();
    t.integer('account_id').notNullable().references('mail_accounts.id').onDelete('CASCADE');
    t.text('mailbox').notNullable();
    t.bigInteger('uidvalidity').notNullable();
    t.bigInteger('uid').notNullable();
    t.text('message_id');
    t.text('from_name');
    t.text('from_address');
    t.text('to_json').notNullable().defaultTo('[]');
    t.text('subject');
    t.timestamp('date', { useTz: true });
    t.timestamp('received_at', { useTz: true });
    t.text('text');
    t.text('html');
    t.timestamp('fetched_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['account_id', 'mailbox', 'uidvalidity', 'uid']);
  });
  await knex.raw('create index mail_messages_newest on mail_messages (account_id, mailbox, received_at desc, uid desc)');

  await knex.schema.createTable('mail_sends', (t) => {
    t.text('job_id').primary();
    t.integer('account_id').references('mail_accounts.id').onDelete('SET NULL');
    t.text('status').notNullable();
    t.text('message_id').notNullable();
    t.text('result_json');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('mail_sends');
  await knex.schema.dropTable('mail_messages');
  await knex.schema.dropTable('mail_accounts');
}
