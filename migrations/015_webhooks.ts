// Webhooks (issue 24): users' endpoints (signing secrets encrypted with SECRET_KEY), the events sent to them (the body
// signed and sent on every attempt, so a retry sends the same bytes) and the log of delivery attempts.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.increments('id').primary();
    t.integer('owner_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('url').notNullable();
    // A JSON array of event types ("job.completed", …).
    t.text('event_types').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('description').notNullable().defaultTo('');
    // whsec_… sealed with SECRET_KEY (src/secrets.ts); the previous one signs too until previous_secret_expires_at.
    t.text('secret_enc').notNullable();
    t.text('previous_secret_enc');
    t.timestamp('previous_secret_expires_at', { useTz: true });
    t.text('disabled_reason');
    // Since when no delivery succeeded (null: the last one did); past WEBHOOK_DISABLE_AFTER_SECONDS the endpoint is disabled.
    t.timestamp('failing_since', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner_id']);
  });

  await knex.schema.createTable('webhook_events', (t) => {
    // The webhook-id: derived from the job and its final state, so a job end announced twice is one event.
    t.text('id').primary();
    t.integer('owner_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('body').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['created_at']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.integer('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('event_id').notNullable().references('webhook_events.id').onDelete('CASCADE');
    t.text('event_type').notNullable();
    t.integer('attempt').notNullable();
    t.integer('status_code');
    t.boolean('ok').notNullable();
    t.integer('duration_ms').notNullable();
    t.text('response_excerpt');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['endpoint_id', 'id']);
    t.index(['event_id', 'endpoint_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_events');
  await knex.schema.dropTable('webhook_endpoints');
}
