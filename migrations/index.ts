// The ordered list of migrations, imported statically so they run the same from TypeScript or compiled JS.
import type { Knex } from 'knex';
import * as m001 from './001_accounts.js';
import * as m002 from './002_content.js';
import * as m003 from './003_embeddings.js';
import * as m004 from './004_mail.js';
import * as m005 from './005_content_owner.js';
import * as m006 from './006_job_results.js';
import * as m007 from './007_logs.js';
import * as m008 from './008_quota_functions.js';
import * as m009 from './009_ledger.js';
import * as m010 from './010_embeddings_functions.js';
import * as m011 from './011_settle_what_was_taken.js';
import * as m012 from './012_channel_creator.js';
import * as m013 from './013_content_url_key.js';
import * as m014 from './014_channel_cache_purge.js';
import * as m015 from './015_webhooks.js';
import * as m016 from './016_schedules.js';
import * as m017 from './017_batches.js';
import * as m018 from './018_channel_providers.js';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: [string, Migration][] = [
  ['001_accounts', m001],
  ['002_content', m002],
  ['003_embeddings', m003],
  ['004_mail', m004],
  ['005_content_owner', m005],
  ['006_job_results', m006],
  ['007_logs', m007],
  ['008_quota_functions', m008],
  ['009_ledger', m009],
  ['010_embeddings_functions', m010],
  ['011_settle_what_was_taken', m011],
  ['012_channel_creator', m012],
  ['013_content_url_key', m013],
  ['014_channel_cache_purge', m014],
  ['015_webhooks', m015],
  ['016_schedules', m016],
  ['017_batches', m017],
  ['018_channel_providers', m018],
];

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => migrations.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations.find(([n]) => n === name)![1],
};
