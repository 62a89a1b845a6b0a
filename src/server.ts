// API entry point: `npm start` (API plus in-process workers) and `npm run api` (API alone).
import type { Server } from 'node:http';
import { answerClientErrors, createApp } from './http/app.js';
import { runProcess, type Running } from './process.js';

const mode = process.argv[2] === 'api' ? 'api' : 'all';

await runProcess(
  mode === 'api' ? 'api' : 'switchyard',
  {
    bootstrapRoot: true,
    listenForJobs: true,
    requireServerDb:
      mode === 'api'
        ? 'npm run api needs a Postgres server (set DATABASE_URL): the embedded PGlite database lives inside one process, so a separate API and worker cannot share it. Use npm start for the single-process mode.'
        : undefined,
  },
  async (p): Promise<Running> => {
    const app = createApp(p);
    const server: Server = await new Promise((resolve, reject) => {
      const s = app.listen(p.config.PORT, p.config.HOST, () => resolve(s));
      s.once('error', reject);
    });
    server.keepAliveTimeout = 65_000;
    answerClientErrors(server);
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : p.config.PORT;
    p.log.info(
      { port, host: p.config.HOST, mode, database: p.config.embeddedDb ? 'embedded PGlite' : 'postgres' },
      `Switchyard listening on http://${p.config.HOST === '0.0.0.0' ? '127.0.0.1' : p.config.HOST}:${port}`,
    );
    // The worker code (and the mail libraries it loads) stays out of an API-only process.
    const workers = mode === 'all' ? await (await import('../workers/index.js')).startWorkers(p, p.config.WORKER_QUEUES) : undefined;
    return {
      async stop(timeoutMs) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
        await Promise.all([closed, workers?.close(timeoutMs)]);
        clearTimeout(deadline);
      },
    };
  },
);
