// Idempotency-Key's cost (docs/jobs.md#idempotent-requests): the p50 of a job submission (POST /api/content/batch with
// Prefer: respond-async, answered 202 once the job is queued) and of an item create (POST /api/content), each with a
// new key per request against the same request without one. Sequential, one connection, the two kinds alternated
// request by request (which goes first alternating too), so both see the same machine.
import crypto from 'node:crypto';
import http from 'node:http';
import { percentile } from './load.js';

interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline: number;
  ratio: number;
  goal: string;
  pass: boolean;
  note: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(base: string, path: string, body: string, headers: Record<string, string>): Promise<{ status: number; ms: number }> {
  const url = new URL(path, base);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let seq = 0;
const item = () => {
  seq++;
  return { source: 'bench', url: `https://bench.example/idem/${Date.now()}-${seq}`, title: `t${seq}`, summary: 's', content: 'c', score: 5 };
};

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** p50 of `n` keyed and `n` plain requests, alternated; `expect` is the status each must answer. */
async function compare(base: string, path: string, body: () => string, headers: Record<string, string>, n: number, expect: number) {
  const plain: number[] = [];
  const keyed: number[] = [];
  const one = async (withKey: boolean, into: number[] | undefined) => {
    const h = withKey ? { ...headers, 'idempotency-key': crypto.randomUUID() } : headers;
    const r = await post(base, path, body(), h);
    if (r.status !== expect) throw new Error(`${path}: ${r.status}, expected ${expect}`);
    into?.push(r.ms);
  };
  for (let i = 0; i < 50; i++) await one(i % 2 === 0, undefined);
  for (let i = 0; i < n; i++) {
    const keyFirst = i % 2 === 0;
    await one(keyFirst, keyFirst ? keyed : plain);
    await one(!keyFirst, keyFirst ? plain : keyed);
  }
  return { keyed: median(keyed), plain: median(plain) };
}

export async function idempotencyFigures(opts: { base: string; accessToken: string; n?: number; log: (m: string) => void }): Promise<Figure[]> {
  const n = opts.n ?? 400;
  const auth = { authorization: opts.accessToken };
  opts.log(`Idempotency-Key: job submission and item create p50, keyed vs plain (${n} each, alternated)`);
  const submit = await compare(opts.base, '/api/content/batch', () => JSON.stringify([item()]), { ...auth, prefer: 'respond-async' }, n, 202);
  const create = await compare(opts.base, '/api/content', () => JSON.stringify(item()), auth, n, 201);
  const figure = (name: string, r: { keyed: number; plain: number }, what: string): Figure => ({
    name,
    value: r.keyed,
    unit: 'ms',
    baseline: r.plain,
    ratio: r.keyed / r.plain,
    goal: '<= plain + 1 ms',
    pass: r.keyed <= r.plain + 1,
    note: `${what}; added ${(r.keyed - r.plain).toFixed(2)} ms`,
  });
  return [
    figure('idempotent_submit_p50', submit, 'POST /api/content/batch, Prefer: respond-async (202), a new Idempotency-Key each'),
    figure('idempotent_create_p50', create, 'POST /api/content (201), a new Idempotency-Key each'),
  ];
}
