// Prometheus metrics: HTTP latency by route, queue depth by state, job durations and failures, process stats.
import http from 'node:http';
import client from 'prom-client';
import type { Queue } from 'bullmq';
import { safeEqual, sha256Hex } from './secrets.js';
import { withTimeout } from './timeout.js';

/** One registry per process: the API's, its in-process workers', or a worker process's. */
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: 'switchyard_' });

const httpDuration = new client.Histogram({
  name: 'switchyard_http_request_duration_seconds',
  help: 'HTTP request latency by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

const jobDuration = new client.Histogram({
  name: 'switchyard_job_duration_seconds',
  help: 'Time a processor took, by queue, job name and outcome',
  labelNames: ['queue', 'name', 'outcome'] as const,
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  registers: [registry],
});

const jobFailures = new client.Counter({
  name: 'switchyard_job_failures_total',
  help: 'Failed job attempts, by queue, job name and whether they will be retried',
  labelNames: ['queue', 'name', 'final'] as const,
  registers: [registry],
});

/** 1 once this worker process has a built-in model loaded and ready (use-lite), else 0. */
export const modelReady = new client.Gauge({
  name: 'switchyard_model_ready',
  help: 'Whether this process has the model loaded (1) or not (0)',
  labelNames: ['model'] as const,
  registers: [registry],
});

export function recordJob(queue: string, name: string, seconds: number, outcome: 'completed' | 'failed', final: boolean) {
  jobDuration.observe({ queue, name, outcome }, seconds);
  if (outcome === 'failed') jobFailures.inc({ queue, name, final: String(final) });
}

const STATES = ['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized', 'waiting-children'] as const;

const watched = new Set<Queue>();

new client.Gauge({
  name: 'switchyard_queue_jobs',
  help: 'Jobs in each queue, by state',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const q of watched) {
      try {
        const counts = await withTimeout(q.getJobCounts(...STATES), 1_000);
        for (const state of STATES) this.set({ queue: q.name, state }, counts[state] ?? 0);
      } catch {
        // Redis away: the series are missing from this scrape rather than the scrape failing.
      }
    }
  },
});

/** Reports these queues' depth per state (read from Redis when scraped); returns the undo. */
export function watchQueues(queues: Queue[]): () => void {
  for (const q of queues) watched.add(q);
  return () => {
    for (const q of queues) watched.delete(q);
  };
}

const httpChildren = new Map<string, client.Histogram.Internal<'method' | 'route' | 'status'>>();

/** Records one request under its route template (not its path: ids would explode the series). */
export function observeHttp(method: string, route: string, status: number, seconds: number) {
  // Resolving labels hashes them on every call; a child per label set is looked up by one string.
  const key = `${method} ${status} ${route}`;
  let child = httpChildren.get(key);
  if (!child) httpChildren.set(key, (child = httpDuration.labels({ method, route, status: String(status) })));
  child.observe(seconds);
}

/** A bare /metrics endpoint for worker processes (METRICS_PORT), which have no API to hang it on. */
/**
 * Whether an Authorization header carries the metrics token (`Bearer <token>`); always true when
 * no token is set. Compared in constant time.
 */
export function metricsAuthorized(header: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const presented = /^Bearer\s+(.+)$/i.exec(header?.trim() ?? '')?.[1] ?? '';
  // Hashed first, so the comparison takes the same time whatever the presented length.
  return safeEqual(sha256Hex(presented), sha256Hex(token));
}

export function serveMetrics(port: number, host: string, token?: string): http.Server {
  return http
    .createServer(async (req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
        return;
      }
      if (!metricsAuthorized(req.headers.authorization, token)) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"METRICS_TOKEN required"}');
        return;
      }
      res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
    })
    .listen(port, host);
}
