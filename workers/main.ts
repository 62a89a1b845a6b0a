// Worker entry point (`npm run worker`): consumes the queues in WORKER_QUEUES until SIGTERM/SIGINT.
import { runProcess } from '../src/process.js';
import { startWorkers } from './index.js';

await runProcess(
  'worker',
  {
    requireServerDb:
      'npm run worker needs a Postgres server (set DATABASE_URL): the embedded PGlite database lives inside one process. Use npm start to run the API and workers together on PGlite.',
  },
  async (p) => {
    const set = await startWorkers(p, p.config.WORKER_QUEUES);
    return { stop: (timeoutMs) => set.close(timeoutMs) };
  },
);
