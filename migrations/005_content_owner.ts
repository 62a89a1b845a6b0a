// Content items record who stored them: replacing or deleting another user's item is for admins.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Existing rows get null ("stored by nobody"): only admins may replace or delete them.
  // No index: ownership is checked on rows already found by url or id; a user's deletion
  // (rare, admin-only) scans the table once to set their items' owner to null.
  await knex.schema.alterTable('content_items', (t) => {
    t.integer('created_by').nullable().references('id').inTable('users').onDelete('SET NULL');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('content_items', (t) => {
    t.dropForeign(['created_by']);
    t.dropColumn('created_by');
  });
}
