// Vectors cached before only root's channels filled the cache may have come from an admin's channel: those of the
// models an admin's (or a lower user's) channel serves are dropped, to be asked again of a channel that serves the caller.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // The cache does not say which channel answered: every vector of such a model goes. Channels deleted before this
  // ran left no trace of their models here (an operator who suspects one can empty embedding_cache: it refills).
  await knex.raw(`
    delete from embedding_cache where model in (
      select unnest(string_to_array(c.models, ','))
      from channels c join users u on u.id = c.created_by
      where u.role < 100)`);
}

export async function down(): Promise<void> {
  // Nothing to restore: the cache refills from the upstreams.
}
