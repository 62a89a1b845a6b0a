// A webhook receiver for tests: a real HTTP server on loopback that records every request (raw body, headers, when)
// and answers each path from a script (status, headers), 200 once the script runs out.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

type Scripted = number | { status: number; headers?: Record<string, string>; delayMs?: number };

export interface Receiver {
  url: string;
  requests: Received[];
  /** The most requests it held at once (each is held until its answer is sent). */
  maxInFlight(): number;
  /** The answers to give on `path`, in order. */
  answer(path: string, script: Scripted[]): void;
  close(): Promise<void>;
}

export async function startReceiver(host = '127.0.0.1', defaults: { delayMs?: number } = {}): Promise<Receiver> {
  const requests: Received[] = [];
  const scripts = new Map<string, Scripted[]>();
  let inFlight = 0;
  let maxInFlight = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      requests.push({ path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const next = scripts.get(path)?.shift() ?? 200;
      const { status, headers: out = {}, delayMs = defaults.delayMs ?? 0 } = typeof next === 'number' ? { status: next } : next;
      setTimeout(() => {
        inFlight--;
        res.writeHead(status, { 'content-type': 'text/plain', ...out });
        res.end(status < 300 ? 'thanks' : `no (${status})`);
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    requests,
    maxInFlight: () => maxInFlight,
    answer: (path, script) => scripts.set(path, [...script]),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
