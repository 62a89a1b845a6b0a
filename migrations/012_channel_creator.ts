// Channels record who made them, for the role rule: an admin changes and deletes only their own and those of users below them.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Existing rows get null: made before anyone was recorded, they are root's (as is a channel whose maker is deleted).
  // No index: channels are few, and a user's deletion (rare) scans them once.
  await knex.schema.alterTable('channels', (t) => {
    t.integer('created_by').nullable().references('id').inTable('users').onDelete('SET NULL');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('channels', (t) => {
    t.dropForeign(['created_by']);
    t.dropColumn('created_by');
  });
}
