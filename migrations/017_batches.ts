// Files and batches (issue 25): OpenAI's Files and Batch APIs for /v1/embeddings. An uploaded file's bytes live in
// Postgres in parts (every API and worker process reads them, the embedded default included); a batch's checked
// requests, one row per input line, are what its chunk jobs read, and each line's outcome is written once (its primary
// key), with its charge in the same transaction; the batch's output and error files are those outcomes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('files', (t) => {
    t.text('id').primary();
    t.integer('owner_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('filename').notNullable();
    // batch (uploaded), batch_output (written by a batch: its output and error files).
    t.text('purpose').notNullable();
    t.bigInteger('bytes').notNullable().defaultTo(0);
    // uploading while its parts arrive; uploaded once whole (only those are listed or read).
    t.text('status').notNullable().defaultTo('uploading');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).nullable();
    // A batch's output (ok) or error (not ok) file has no parts: its bytes are the batch's outcome lines, read in line
    // order (batch_results), written once and never copied.
    t.text('batch_id').nullable();
    t.boolean('batch_ok').nullable();
    t.index(['owner_id', 'id']);
    t.index(['expires_at']);
  });
  await knex.schema.createTable('file_parts', (t) => {
    t.text('file_id').notNullable().references('id').inTable('files').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.binary('data').notNullable();
    t.primary(['file_id', 'seq']);
  });
  await knex.schema.createTable('batches', (t) => {
    t.text('id').primary();
    t.integer('owner_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    // The API key the batch was created with (its models and quota): gone with the key, the batch fails its lines.
    t.integer('token_id').nullable();
    t.text('input_file_id').notNullable();
    t.text('endpoint').notNullable();
    t.text('completion_window').notNullable();
    t.text('status').notNullable();
    t.text('model').nullable();
    t.jsonb('metadata').nullable();
    t.jsonb('errors').nullable();
    t.integer('total').notNullable().defaultTo(0);
    t.integer('completed').notNullable().defaultTo(0);
    t.integer('failed').notNullable().defaultTo(0);
    // How many chunk jobs the batch was split into, and how many have ended (batch_chunks).
    t.integer('chunks').notNullable().defaultTo(0);
    // The first line of each chunk: chunks end at BATCH_CHUNK_LINES lines or at a bound on their vector floats.
    t.jsonb('chunk_starts').nullable();
    // OpenAI's output_expires_after: the output and error files' lifetime, in seconds from when they are made.
    t.integer('output_expires_seconds').nullable();
    t.bigInteger('prompt_tokens').notNullable().defaultTo(0);
    t.text('output_file_id').nullable();
    t.text('error_file_id').nullable();
    for (const at of [
      'created_at',
      'in_progress_at',
      'expires_at',
      'finalizing_at',
      'completed_at',
      'failed_at',
      'expired_at',
      'cancelling_at',
      'cancelled_at',
    ]) {
      t.timestamp(at, { useTz: true }).nullable();
    }
    t.index(['owner_id', 'id']);
  });
  await knex.schema.createTable('batch_requests', (t) => {
    t.text('batch_id').notNullable().references('id').inTable('batches').onDelete('CASCADE');
    t.integer('line').notNullable();
    t.text('custom_id').notNullable();
    // The checked request (EmbeddingsRequest) with its tokens: sealed, as job data is (texts are the user's).
    t.text('request').notNullable();
    t.primary(['batch_id', 'line']);
  });
  await knex.schema.createTable('batch_results', (t) => {
    t.text('batch_id').notNullable().references('id').inTable('batches').onDelete('CASCADE');
    t.integer('line').notNullable();
    t.boolean('ok').notNullable();
    // The output (or error) file's line for this request, without its newline.
    t.text('output').notNullable();
    t.primary(['batch_id', 'line']);
  });
  await knex.schema.createTable('batch_chunks', (t) => {
    t.text('batch_id').notNullable().references('id').inTable('batches').onDelete('CASCADE');
    t.integer('chunk').notNullable();
    t.primary(['batch_id', 'chunk']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ['batch_chunks', 'batch_results', 'batch_requests', 'batches', 'file_parts', 'files']) await knex.schema.dropTable(name);
}
