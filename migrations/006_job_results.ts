// Large or private job results live here (mail results always; others above JOB_INLINE_RESULT_BYTES); Redis carries their id.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('job_results', (t) => {
    t.text('job_id').primary();
    t.text('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // The job's own retention: past this the row is swept (workers, see sweepJobStorage).
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('job_results');
}
