// Worker entry point (`npm run worker`): consumes the queues in WORKER_QUEUES until SIGTERM/SIGINT.
import { runProcess } from '../src/process.js';
import { startWorkers } from './index.js';
import { serveMetrics } from '../src/metrics.js';

await runProcess(
  'worker',
  {
    requireServerDb:
      'npm run worker needs a Postgres server (set DATABASE_URL): the embedded PGlite database lives inside one process. Use npm start to run the API and workers together on PGlite.',
  },
  async (p) => {
    const set = await startWorkers(p, p.config.WORKER_QUEUES);
    const metrics = p.config.METRICS_PORT ? serveMetrics(p.config.METRICS_PORT, p.config.HOST, p.config.METRICS_TOKEN) : undefined;
    return {
      async stop(timeoutMs) {
        metrics?.close();
        await set.close(timeoutMs);
      },
    };
  },
);
