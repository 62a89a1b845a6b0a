// The outbound policy at its edges, without services (node's DNS lookup replaced where a test needs an answer): the
// numeric and bracketed spellings at the limit, CIDR and allowlist validation, the allowlist as a policy holds it, the
// connect-time lookup's families, DNS failures at save and connect time, and the keep-alive pools of policyRequest.
// The policies are built inside each test, so that what the constructor does is what the test checks.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  allowlistEntryProblem,
  blockedAddressReason,
  numericIpv4,
  OutboundPolicy,
  OutboundRefusedError,
  outboundPolicy,
  parseCidr,
  policyRequest,
  refusedHostField,
} from '../../src/outbound.js';

type Answer = { address: string; family: number }[];

/** node's dns.promises.lookup answers `answer` for `name` (an Error: rejects with it; 'never': never answers). */
function answering(name: string, answer: Answer | Error | 'never') {
  const real = dns.promises.lookup;
  return vi.spyOn(dns.promises, 'lookup').mockImplementation((async (host: string, opts: unknown) => {
    if (host !== name) return (real as (h: string, o: unknown) => Promise<unknown>)(host, opts);
    if (answer === 'never') return new Promise(() => {});
    if (answer instanceof Error) throw answer;
    return answer;
  }) as typeof dns.promises.lookup);
}
afterEach(() => vi.restoreAllMocks());

const refusal = (policy: OutboundPolicy, host: string): string | undefined => {
  try {
    policy.precheck(host);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundRefusedError);
    return (err as OutboundRefusedError).reason;
  }
};

describe('a refusal', () => {
  it('is an OutboundRefusedError with code EOUTBOUND, naming the host and the reason', () => {
    const err = new OutboundRefusedError('db.internal', 'a name of the local machine or network');
    expect(err.code).toBe('EOUTBOUND');
    expect(err.name).toBe('OutboundRefusedError');
    expect(err.message).toBe('"db.internal" is refused by the outbound policy: a name of the local machine or network');
  });

  it('of text that is no address says so', () => {
    expect(blockedAddressReason('mail.example.com')).toBe('not an IP address');
  });
});

describe('numeric IPv4 spellings at the limit', () => {
  it.each([
    ['0.0.0.0.0', null, 'five parts'],
    ['1.16777216', null, 'a last part past its three bytes'],
    ['1.2.65536', null, 'a last part past its two bytes'],
    ['0181.0.0.1', null, 'an octal part with an 8 in it'],
    ['1.16777215', '1.255.255.255', 'a last part filling its three bytes'],
    ['0x', '0.0.0.0', 'a bare 0x'],
    ['0x.0x.0x.0x1', '0.0.0.1', 'bare 0x parts'],
    ['a1.b2', undefined, 'parts that end in a digit'],
    ['1a.2b', undefined, 'parts that start with one'],
  ] as [string, string | null | undefined, string][])('%s reads as %s (%s)', (text, expected) => {
    expect(numericIpv4(text)).toBe(expected);
  });
});

describe('host spellings', () => {
  it('blanks around a host are dropped and case ignored, before anything else', () => {
    const policy = new OutboundPolicy([]);
    expect(policy.precheck(' 8.8.8.8 ')).toMatchObject({ vetted: { host: '8.8.8.8', address: '8.8.8.8' } });
    expect(policy.precheck(' Mail.Example.COM ')).toEqual({ resolve: 'mail.example.com', allowListed: false });
    expect(refusal(policy, ' LOCALHOST ')).toMatch(/local machine/);
  });

  it('only a host in both brackets loses them: one bracket is no host', () => {
    const policy = new OutboundPolicy([]);
    expect(refusal(policy, '[8.8.8.8')).toBe('not a valid host name');
    expect(refusal(policy, '8.8.8.8]')).toBe('not a valid host name');
    expect(refusal(policy, 'mail.example.com]')).toBe('not a valid host name');
    expect(policy.precheck('[2a00:1450::1]')).toMatchObject({ vetted: { address: '2a00:1450::1', family: 6 } });
  });
});

describe('CIDRs', () => {
  it.each(['10.0.0.0/-1', '10.0.0.0/33', '10.0.0.0/8.5', '10.0.0.0/+8', '10.0.0.0/ 8', '10.0.0.0/8 ', '::/129'])('%s is none', (cidr) => {
    expect(parseCidr(cidr)).toBeNull();
  });

  it('a prefix from 0 to the family width; a bare address is its own /32 or /128', () => {
    expect(parseCidr('10.0.0.0/0')).toEqual({ address: '10.0.0.0', prefix: 0, family: 'ipv4' });
    expect(parseCidr('10.0.0.0/32')).toEqual({ address: '10.0.0.0', prefix: 32, family: 'ipv4' });
    expect(parseCidr('fd00::/128')).toEqual({ address: 'fd00::', prefix: 128, family: 'ipv6' });
    expect(parseCidr('fd00::1')).toEqual({ address: 'fd00::1', prefix: 128, family: 'ipv6' });
  });
});

describe('allowlist entries', () => {
  it('a bad one is named with what was wrong, the prefix limit of its family included', () => {
    expect(allowlistEntryProblem('10.0.0.0/33')).toBe('"10.0.0.0/33" is not a CIDR (address/prefix, prefix at most 32)');
    expect(allowlistEntryProblem('fd00::/129')).toBe('"fd00::/129" is not a CIDR (address/prefix, prefix at most 128)');
    expect(allowlistEntryProblem('0x7f000001')).toBe('"0x7f000001" is not a dotted-decimal IPv4 address');
    expect(allowlistEntryProblem('foo..bar')).toBe('"foo..bar" is not a host name, IP address or CIDR');
    expect(allowlistEntryProblem('mail.example.com.')).toBeUndefined();
  });

  it('a policy refuses to be built with a bad one, naming the variable', () => {
    expect(() => new OutboundPolicy(['mail.example.com', 'bad host'])).toThrow('OUTBOUND_ALLOWLIST: "bad host" is not a host name, IP address or CIDR');
  });

  it('a listed name is allowed however it is spelt in the list (case, trailing dot); other names are not', () => {
    const policy = new OutboundPolicy(['Mail.Corp.Internal.', '10.0.0.0/8']);
    expect(policy.precheck('mail.corp.internal')).toEqual({ resolve: 'mail.corp.internal', allowListed: true });
    expect(refusal(policy, 'other.corp.internal')).toMatch(/local machine/);
  });

  it('a listed IPv4 range covers its addresses in IPv6 forms too; a text that is no address is never listed', () => {
    const policy = new OutboundPolicy(['10.0.0.0/8']);
    expect(policy.addressAllowListed('::ffff:10.1.2.3')).toBe(true);
    expect(policy.addressAllowListed('64:ff9b::10.1.2.3')).toBe(true);
    expect(policy.addressAllowListed('::ffff:11.1.2.3')).toBe(false);
    expect(policy.addressAllowListed('10.1.2.3.example')).toBe(false);
  });

  it('outboundPolicy builds one policy per distinct list and gives it again for the same list', () => {
    const a = outboundPolicy(['a.example.test', 'b.example.test']);
    const b = outboundPolicy(['a.example.testb.example.test']);
    expect(outboundPolicy(['a.example.test', 'b.example.test'])).toBe(a);
    expect(b).not.toBe(a);
    expect(b.precheck('a.example.test')).toEqual({ resolve: 'a.example.test', allowListed: false });
  });
});

describe('DNS at save and connect time', () => {
  it('an address host needs no lookup: it is its own answer', async () => {
    const lookup = vi.spyOn(dns.promises, 'lookup');
    expect(await new OutboundPolicy([]).resolveAll('8.8.4.4')).toEqual([{ host: '8.8.4.4', address: '8.8.4.4', family: 4, allowListed: false }]);
    expect(lookup).not.toHaveBeenCalled();
  });

  it('a name is looked up for every address, in the order the resolver gives them', async () => {
    const lookup = answering('order.example.test', [{ address: '93.184.216.34', family: 4 }]);
    await new OutboundPolicy([]).resolveAll('order.example.test');
    expect(lookup).toHaveBeenCalledWith('order.example.test', { all: true, verbatim: true });
  });

  it('a name that resolves to a refused address is refused as resolving to it', async () => {
    answering('inside.example.test', [{ address: '10.1.2.3', family: 4 }]);
    expect(await new OutboundPolicy([]).vetForSave('inside.example.test')).toBe('it resolves to a private address');
  });

  it('an empty answer is ENOTFOUND; a lookup that does not answer times out, saying after how long', async () => {
    answering('empty.example.test', []);
    await expect(new OutboundPolicy([]).resolveAll('empty.example.test')).rejects.toMatchObject({
      code: 'ENOTFOUND',
      message: 'no address for empty.example.test',
    });
    answering('silent.example.test', 'never');
    await expect(new OutboundPolicy([]).resolveAll('silent.example.test', 50)).rejects.toMatchObject({
      code: 'ETIMEDOUT',
      message: 'DNS lookup timed out after 50 ms',
    });
  });

  it('a name DNS cannot resolve passes the save-time check (connect time decides)', async () => {
    answering('gone.example.test', Object.assign(new Error('getaddrinfo ENOTFOUND gone.example.test'), { code: 'ENOTFOUND' }));
    expect(await new OutboundPolicy([]).vetForSave('gone.example.test')).toBeUndefined();
  });
});

describe('the connect-time lookup', () => {
  const both: Answer = [
    { address: '2a00:1450::1', family: 6 },
    { address: '93.184.216.34', family: 4 },
  ];
  const lookup = (policy: OutboundPolicy, host: string, options: { family?: number; all?: boolean }) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) => {
      policy.lookup(
        host,
        options as Parameters<OutboundPolicy['lookup']>[1],
        ((err: NodeJS.ErrnoException | null, address: unknown, family?: number) => resolve({ err, address, family })) as Parameters<
          OutboundPolicy['lookup']
        >[2],
      );
    });

  it('answers the first vetted address, or the first of the family asked for', async () => {
    answering('both.example.test', both);
    const policy = new OutboundPolicy([]);
    expect(await lookup(policy, 'both.example.test', {})).toEqual({ err: null, address: '2a00:1450::1', family: 6 });
    expect(await lookup(policy, 'both.example.test', { family: 4 })).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await lookup(policy, 'both.example.test', { family: 6 })).toEqual({ err: null, address: '2a00:1450::1', family: 6 });
  });

  it('with all, answers every vetted address of the family asked for', async () => {
    answering('both.example.test', both);
    const policy = new OutboundPolicy([]);
    expect((await lookup(policy, 'both.example.test', { all: true })).address).toEqual([
      { address: '2a00:1450::1', family: 6 },
      { address: '93.184.216.34', family: 4 },
    ]);
    expect((await lookup(policy, 'both.example.test', { all: true, family: 4 })).address).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('no address of the family asked for is ENOTFOUND; a refusal is passed on as it is', async () => {
    answering('v4only.example.test', [{ address: '93.184.216.34', family: 4 }]);
    const policy = new OutboundPolicy([]);
    const none = await lookup(policy, 'v4only.example.test', { family: 6 });
    expect(none.err).toMatchObject({ code: 'ENOTFOUND', message: 'no address for v4only.example.test' });
    answering('inside.example.test', [{ address: '10.1.2.3', family: 4 }]);
    expect((await lookup(policy, 'inside.example.test', {})).err).toBeInstanceOf(OutboundRefusedError);
  });
});

describe('refusedHostField', () => {
  it('with dns: false checks the spelling only; otherwise what the name resolves to as well', async () => {
    answering('rebind.example.test', [{ address: '127.0.0.1', family: 4 }]);
    expect(await refusedHostField([], { 'smtp.host': 'rebind.example.test' }, { dns: false })).toBeUndefined();
    expect(await refusedHostField([], { 'smtp.host': 'rebind.example.test' })).toEqual({
      field: 'smtp.host',
      message: 'smtp.host: "rebind.example.test" is refused by the outbound policy (it resolves to a loopback address)',
    });
  });

  it('names the first field when it is the one refused', async () => {
    expect(await refusedHostField([], { 'imap.host': '10.0.0.1', 'smtp.host': '8.8.8.8' }, { dns: false })).toEqual({
      field: 'imap.host',
      message: 'imap.host: "10.0.0.1" is refused by the outbound policy (it is a private address)',
    });
  });
});

describe('policyRequest', () => {
  const request = (policy: OutboundPolicy, url: string) => {
    const req = policyRequest(policy, new URL(url), { method: 'GET', headers: {} });
    req.on('error', () => {});
    req.destroy();
    return req as http.ClientRequest & { agent: http.Agent & { keepAlive?: boolean } };
  };

  it("takes its sockets from the policy's own keep-alive pools, one for http and one for https", () => {
    const policy = new OutboundPolicy(['127.0.0.1']);
    const plain = request(policy, 'http://127.0.0.1:9/');
    const again = request(policy, 'http://127.0.0.1:9/other');
    const secure = request(policy, 'https://127.0.0.1:9/');
    expect(plain.agent).toBe(again.agent);
    expect(plain.agent).toBeInstanceOf(http.Agent);
    expect(plain.agent).not.toBeInstanceOf(https.Agent);
    expect(plain.agent).not.toBe(http.globalAgent);
    expect(plain.agent.keepAlive).toBe(true);
    expect(secure.agent).toBeInstanceOf(https.Agent);
    expect(secure.agent).not.toBe(https.globalAgent);
    expect(secure.agent.keepAlive).toBe(true);
    expect(request(new OutboundPolicy(['127.0.0.1']), 'http://127.0.0.1:9/').agent).not.toBe(plain.agent);
  });
});
