// `npm run migrate` (apply pending migrations) and `npm run migrate -- down` (roll all back).
import { createDb, migrateLatest, migrateRollbackAll } from './db.js';
import { loadConfigOrExit, lockEmbeddedDb, startupFailed } from './process.js';

const config = loadConfigOrExit();
await lockEmbeddedDb(config);
const db = await createDb(config);
try {
  if (process.argv[2] === 'down') {
    await migrateRollbackAll(db);
    process.stdout.write('rolled back all migrations\n');
  } else {
    const done = await migrateLatest(db);
    process.stdout.write(done.length ? `applied: ${done.join(', ')}\n` : 'already up to date\n');
  }
} catch (err) {
  await db.destroy().catch(() => {});
  startupFailed(err, config);
} finally {
  await db.destroy();
}
