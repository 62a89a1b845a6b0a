// A closed-loop HTTP load generator: N connections, each sending its next request when the last answers.
import fs from 'node:fs';
import http from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  statuses: Record<number, number>;
}

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** A body per request (so each may differ); undefined for none. */
  body?: (i: number) => string | undefined;
  connections: number;
  durationMs: number;
  warmupMs?: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  let counter = 0;
  let measuring = false;
  const send = (i: number) =>
    new Promise<void>((resolve) => {
      const body = opts.body?.(i);
      const started = performance.now();
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method: opts.method ?? 'GET',
          headers: { ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}), ...opts.headers },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (measuring) {
              latencies.push(performance.now() - started);
              statuses[res.statusCode!] = (statuses[res.statusCode!] ?? 0) + 1;
              if (res.statusCode! >= 400) errors++;
            }
            resolve();
          });
        },
      );
      req.on('error', () => {
        if (measuring) errors++;
        resolve();
      });
      req.end(body);
    });
  let stop = false;
  const loops = Array.from({ length: opts.connections }, async () => {
    while (!stop) await send(counter++);
  });
  await new Promise((r) => setTimeout(r, opts.warmupMs ?? 1_000));
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, opts.durationMs));
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(loops);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    statuses,
  };
}

/** A process's CPU time so far (user + system), in ms. */
export function cpuMs(pid: number): number {
  const fields = fs
    .readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  // After "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12 here; clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
