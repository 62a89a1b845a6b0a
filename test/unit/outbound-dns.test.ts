// The outbound policy's DNS checks with answers a test chooses (node's DNS lookup replaced for the test): every
// address a name resolves to is vetted, not only the first; and a name whose answer changes between the save-time
// check and the connection (DNS rebinding) is refused at connect time, with nothing sent to the address it moved to.
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { OutboundPolicy, OutboundRefusedError, policyRequest } from '../../src/outbound.js';

const PUBLIC = '93.184.216.34';
type Answer = { address: string; family: number }[];

/** Makes node's dns.promises.lookup answer `answers` in turn (the last one again after that) for `name`. */
function answering(name: string, ...answers: Answer[]) {
  const real = dns.promises.lookup;
  let n = 0;
  return vi.spyOn(dns.promises, 'lookup').mockImplementation((async (host: string, opts: unknown) => {
    if (host !== name) return (real as (h: string, o: unknown) => Promise<unknown>)(host, opts);
    return answers[Math.min(n++, answers.length - 1)];
  }) as typeof dns.promises.lookup);
}

let server: http.Server;
let port: number;
let hits = 0;
beforeAll(async () => {
  server = http.createServer((_req, res) => {
    hits++;
    res.end('reached');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((r) => server.close(r)));
afterEach(() => vi.restoreAllMocks());

describe('every address of a name is vetted', () => {
  for (const [label, answer] of [
    [
      'a private address after a public one',
      [
        { address: PUBLIC, family: 4 },
        { address: '10.0.0.7', family: 4 },
      ],
    ],
    [
      'loopback third',
      [
        { address: PUBLIC, family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
        { address: '127.0.0.1', family: 4 },
      ],
    ],
    [
      'an IPv6 link-local after a public one',
      [
        { address: PUBLIC, family: 4 },
        { address: 'fe80::1', family: 6 },
      ],
    ],
    [
      'the metadata address after a public one',
      [
        { address: PUBLIC, family: 4 },
        { address: '169.254.169.254', family: 4 },
      ],
    ],
  ] as const) {
    it(`refuses a name that resolves to ${label}, at save time and at connect time`, async () => {
      answering('mixed.example.test', [...answer]);
      const policy = new OutboundPolicy([]);
      expect(await policy.vetForSave('mixed.example.test')).toMatch(/./);
      await expect(policy.resolveAll('mixed.example.test')).rejects.toBeInstanceOf(OutboundRefusedError);
    });
  }

  it('takes a name whose every address is public', async () => {
    answering('public.example.test', [
      { address: PUBLIC, family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
    const policy = new OutboundPolicy([]);
    expect(await policy.vetForSave('public.example.test')).toBeUndefined();
    expect((await policy.resolveAll('public.example.test')).map((v) => v.address)).toEqual([PUBLIC, '2606:2800:220:1::1']);
  });
});

describe('a name whose answer changes between check and connect (DNS rebinding)', () => {
  it('passes the save-time check, then is refused when it connects: the address it moved to (a server on loopback) gets nothing', async () => {
    const lookups = answering('rebind.example.test', [{ address: PUBLIC, family: 4 }], [{ address: '127.0.0.1', family: 4 }]);
    const policy = new OutboundPolicy([]);
    expect(await policy.vetForSave('rebind.example.test')).toBeUndefined();
    const before = hits;
    const outcome = await new Promise<unknown>((resolve) => {
      const req = policyRequest(policy, new URL(`http://rebind.example.test:${port}/`), { method: 'GET', headers: {} });
      req.on('response', (res) => resolve(`answered ${res.statusCode}`));
      req.on('error', resolve);
      req.end();
    });
    expect(outcome).toBeInstanceOf(OutboundRefusedError);
    expect(hits).toBe(before);
    // The connection looked the name up again (it did not reuse the save-time answer).
    expect(lookups.mock.calls.filter(([h]) => h === 'rebind.example.test').length).toBeGreaterThanOrEqual(2);
  });
});
