// Webhooks' figures (docs/webhooks.md): delivery throughput to a loopback receiver (every endpoint of one user takes
// every job's end, so each job makes ENDPOINTS deliveries), and what one webhook adds to a job: the p50 of a job
// waited for (POST /api/content/batch answered 200 with its result) of a user with one endpoint against a user with
// none, alternated request by request (one at a time), in the same run.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { percentile } from './load.js';

interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  goal: string;
  pass: boolean;
  note: string;
}

async function call(
  base: string,
  method: string,
  path: string,
  auth: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: any; ms: number }> {
  const started = performance.now();
  const res = await fetch(new URL(path, base), {
    method,
    headers: { 'content-type': 'application/json', ...auth },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, ms: performance.now() - started };
}

let seq = 0;
const item = () => ({ source: 'bench-hook', url: `https://bench.example/hook/${Date.now()}-${++seq}`, title: 't', summary: 's', content: 'c', score: 5 });

/** A user of the bench's, with an access token for scripts. */
async function user(base: string, rootToken: string, name: string): Promise<Record<string, string>> {
  const made = await call(base, 'POST', '/api/user/', { authorization: rootToken }, { username: name, password: `${name}-password` });
  if (made.status !== 200 && made.status !== 201) throw new Error(`user ${name}: ${made.status}`);
  const login = await fetch(new URL('/api/user/login', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: name, password: `${name}-password` }),
  });
  const cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const token = (await (await fetch(new URL('/api/user/token', base), { headers: { cookie } })).json()) as { data: string };
  return { authorization: token.data };
}

export async function webhookFigures(opts: { base: string; accessToken: string; n?: number; jobs?: number; log: (m: string) => void }): Promise<Figure[]> {
  const { base, log } = opts;
  const n = opts.n ?? 200;
  const jobs = opts.jobs ?? 200;
  const ENDPOINTS = 10;
  let received = 0;
  let first = 0;
  let last = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const now = performance.now();
      if (received++ === 0) first = now;
      last = now;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const hooked = await user(base, opts.accessToken, 'benchhook');
    const plain = await user(base, opts.accessToken, 'benchplain');
    const first1 = await call(base, 'POST', '/api/webhooks', hooked, { url });
    if (first1.status !== 201) throw new Error(`webhook: ${first1.status} ${JSON.stringify(first1.body)}`);

    log(`webhooks: a job waited for, with one webhook vs none (${n} each, alternated)`);
    const withHook: number[] = [];
    const without: number[] = [];
    const job = async (auth: Record<string, string>, into?: number[]) => {
      const r = await call(base, 'POST', '/api/content/batch', auth, [item()]);
      if (r.status !== 200) throw new Error(`batch: ${r.status}`);
      into?.push(r.ms);
    };
    for (let i = 0; i < 20; i++) await job(i % 2 ? hooked : plain);
    for (let i = 0; i < n; i++) {
      const hookFirst = i % 2 === 0;
      await job(hookFirst ? hooked : plain, hookFirst ? withHook : without);
      await job(hookFirst ? plain : hooked, hookFirst ? without : withHook);
    }
    const p50 = (xs: number[]) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        50,
      );

    // Throughput: ENDPOINTS endpoints, `jobs` jobs submitted at once (202), every end delivered to each.
    for (let i = 1; i < ENDPOINTS; i++) await call(base, 'POST', '/api/webhooks', hooked, { url });
    for (let i = 0; i < 200 && received < 20 + 2 * n; i++) await new Promise((r) => setTimeout(r, 50));
    received = 0;
    log(`webhooks: delivery throughput, ${jobs} jobs × ${ENDPOINTS} endpoints to a loopback receiver`);
    await Promise.all(
      Array.from({ length: jobs }, () =>
        fetch(new URL('/api/content/batch', base), {
          method: 'POST',
          headers: { 'content-type': 'application/json', prefer: 'respond-async', ...hooked },
          body: JSON.stringify([item()]),
        }).then((r) => r.text()),
      ),
    );
    const want = jobs * ENDPOINTS;
    const deadline = Date.now() + 120_000;
    while (received < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const rate = received > 1 ? ((received - 1) / (last - first)) * 1000 : 0;
    const added = p50(withHook) - p50(without);
    return [
      {
        name: 'webhook_deliveries_per_s',
        value: rate,
        unit: 'deliveries/s',
        goal: 'recorded',
        pass: received >= want,
        note: `${received} of ${want} deliveries, first to last arrival; WEBHOOK_CONCURRENCY ${32} in one worker process, ${ENDPOINTS} endpoints × WEBHOOK_ENDPOINT_CONCURRENCY 4`,
      },
      {
        name: 'job_with_webhook_p50',
        value: p50(withHook),
        unit: 'ms',
        baseline: p50(without),
        ratio: p50(withHook) / p50(without),
        goal: 'recorded',
        pass: true,
        note: `POST /api/content/batch waited for (200): a user with one webhook endpoint vs one with none; added ${added.toFixed(2)} ms`,
      },
    ];
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}
