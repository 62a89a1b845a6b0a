// The outbound policy: which hosts a user-aimed connection (IMAP, SMTP, channel base_url) may reach.
//
// Refused: loopback, private, link-local, shared (CGNAT), "this network", multicast, broadcast and
// other special-purpose addresses, in any spelling (IPv4-mapped and other IPv6 forms that embed an
// IPv4 address, and the decimal / hex / octal / short IPv4 forms resolvers accept), and names that
// only ever mean the local machine or its network (localhost, *.localhost, *.internal, ...).
// OUTBOUND_ALLOWLIST (host names, addresses, CIDRs) lets the operator allow some of them.
//
// Two checks: when an account or channel is saved (vetForSave: refuses what is refused by its
// spelling, and what its DNS answer points at if DNS answers within 2 s), and when connecting
// (resolve / lookup: after DNS, on every address, and the connection goes to the address that
// was checked, so a name that changes its answer between check and connect gains nothing).
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net, { BlockList, type LookupFunction } from 'node:net';
import { tracing } from './telemetry.js';
import { withTimeout } from './timeout.js';

/** What a connection may use: the checked address to connect to, and the name for TLS (SNI, certificate). */
export interface Vetted {
  /** The host as given (normalised: lower case, no brackets, no trailing dot). */
  host: string;
  address: string;
  family: 4 | 6;
  /** The name TLS must present and verify; undefined when the host is an address. */
  servername?: string;
  /** The host or its address is in OUTBOUND_ALLOWLIST (an operator-trusted server: plaintext is allowed). */
  allowListed: boolean;
}

/** The host may not be connected to. `reason` never contains an address the DNS answered. */
export class OutboundRefusedError extends Error {
  readonly code = 'EOUTBOUND';
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`"${host}" is refused by the outbound policy: ${reason}`);
    this.name = 'OutboundRefusedError';
  }
}

// ---- address ranges -----------------------------------------------------------------------------
// node:net's BlockList does the range matching (and already matches ::ffff:a.b.c.d against IPv4
// rules); embedded-IPv4 forms it does not know (NAT64, 6to4, SIIT) are unpacked by hand below.

type Range = [address: string, prefix: number];
const V4: [string, Range[]][] = [
  ['a "this network" address', [['0.0.0.0', 8]]],
  ['a loopback address', [['127.0.0.0', 8]]],
  [
    'a private address',
    [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
    ],
  ],
  ['a shared (CGNAT) address', [['100.64.0.0', 10]]],
  ['a link-local address', [['169.254.0.0', 16]]],
  ['a multicast address', [['224.0.0.0', 4]]],
  ['a reserved or broadcast address', [['240.0.0.0', 4]]],
  [
    'a special-purpose address',
    [
      ['192.0.0.0', 24],
      ['192.0.2.0', 24],
      ['192.88.99.0', 24],
      ['198.18.0.0', 15],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
    ],
  ],
];
const V6: [string, Range[]][] = [
  ['a loopback address', [['::1', 128]]],
  // :: itself, and the deprecated IPv4-compatible ::a.b.c.d
  ['an unspecified or IPv4-compatible address', [['::', 96]]],
  ['a unique-local (private) address', [['fc00::', 7]]],
  [
    'a link-local address',
    [
      ['fe80::', 10],
      ['fec0::', 10],
    ],
  ],
  ['a multicast address', [['ff00::', 8]]],
  [
    'a special-purpose address',
    [
      ['100::', 64],
      ['64:ff9b:1::', 48],
      ['2001::', 32],
      ['2001:10::', 28],
      ['2001:20::', 28],
      ['2001:db8::', 32],
      ['3fff::', 20],
    ],
  ],
];

function compile(table: [string, Range[]][], type: 'ipv4' | 'ipv6'): [string, BlockList][] {
  return table.map(([label, ranges]) => {
    const list = new BlockList();
    for (const [a, prefix] of ranges) list.addSubnet(a, prefix, type);
    return [label, list];
  });
}
const BLOCKED_V4 = compile(V4, 'ipv4');
const BLOCKED_V6 = compile(V6, 'ipv6');

/** The 16 bytes of a valid IPv6 text (net.isIP(text) === 6). Hand-written: node has no inet_pton. */
export function ipv6Bytes(text: string): number[] {
  let s = text;
  const tail: number[] = [];
  const dotted = s.match(/:(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    tail.push(...dotted[1]!.split('.').map(Number));
    s = `${s.slice(0, -dotted[1]!.length)}0:0`;
  }
  const [head = '', rest] = s.split('::');
  const a = head ? head.split(':') : [];
  const b = rest ? rest.split(':') : [];
  const groups = rest === undefined ? a : [...a, ...new Array(8 - a.length - b.length).fill('0'), ...b];
  const bytes = groups.flatMap((g) => {
    const n = Number.parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** The IPv4 address an IPv6 address stands for (mapped, SIIT, NAT64 64:ff9b::/96, 6to4), if any. */
export function embeddedIpv4(v6: string): string | undefined {
  const b = ipv6Bytes(v6);
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const quad = (at: number) => b.slice(at, at + 4).join('.');
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return quad(12); // ::ffff:a.b.c.d
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return quad(12); // ::ffff:0:a.b.c.d
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return quad(12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return quad(2); // 2002:aabb:ccdd::/48
  return undefined;
}

/**
 * Why an address (valid IPv4 or IPv6 text) is never a destination, or undefined when it may be
 * one. The allowlist is not consulted here.
 */
export function blockedAddressReason(address: string): string | undefined {
  const family = net.isIP(address);
  if (family === 4) return BLOCKED_V4.find(([, list]) => list.check(address, 'ipv4'))?.[0];
  if (family !== 6) return 'not an IP address';
  const v4 = embeddedIpv4(address);
  if (v4) {
    const inner = blockedAddressReason(v4);
    return inner ? `${inner} (in an IPv6 form)` : undefined;
  }
  return BLOCKED_V6.find(([, list]) => list.check(address, 'ipv6'))?.[0];
}

// ---- host names -----------------------------------------------------------------------------------

const LOCAL_NAMES = new Set(['localhost', 'ip6-localhost', 'ip6-loopback', 'metadata', 'metadata.goog', 'instance-data', 'broadcasthost']);
const LOCAL_SUFFIXES = ['.localhost', '.localdomain', '.internal', '.local', '.home.arpa'];
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * An IPv4 address as inet_aton (and so getaddrinfo) reads it: 1 to 4 parts, each decimal, 0x hex
 * or 0-led octal, the last filling the remaining bytes (2130706433, 0x7f000001, 0177.0.0.1, 127.1).
 * Hand-written because net.isIP only knows the dotted-decimal form. undefined: not numeric at all;
 * null: numeric but not a valid address (refused rather than guessed).
 */
export function numericIpv4(host: string): string | undefined | null {
  const parts = host.split('.');
  if (!parts.every((p) => /^(0x[0-9a-f]*|[0-9]+)$/i.test(p))) return undefined;
  if (parts.length > 4) return null;
  const values: number[] = [];
  for (const p of parts) {
    let v: number;
    if (/^0x/i.test(p)) v = p.length === 2 ? 0 : Number.parseInt(p.slice(2), 16);
    else if (p.length > 1 && p.startsWith('0')) {
      if (!/^[0-7]+$/.test(p)) return null;
      v = Number.parseInt(p, 8);
    } else v = Number(p);
    if (!Number.isSafeInteger(v)) return null;
    values.push(v);
  }
  const last = values.pop()!;
  if (values.some((v) => v > 255) || last >= 256 ** (4 - values.length)) return null;
  const n = values.reduce((acc, v, i) => acc + v * 256 ** (3 - i), 0) + last;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

type Parsed = { kind: 'address'; host: string; address: string; family: 4 | 6 } | { kind: 'name'; host: string };

/** Lower case, no [brackets], no trailing dot; numeric IPv4 spellings become dotted quads. */
function parseHost(raw: string): Parsed {
  let host = raw.trim().toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host.endsWith('.') && !host.endsWith('..')) host = host.slice(0, -1);
  if (host === '') throw new OutboundRefusedError(raw, 'no host');
  if (host.includes('%')) throw new OutboundRefusedError(raw, 'an address with a zone index');
  const family = net.isIP(host);
  if (family) return { kind: 'address', host, address: host, family: family as 4 | 6 };
  const v4 = numericIpv4(host);
  if (v4 === null) throw new OutboundRefusedError(raw, 'a numeric host that is not a valid IPv4 address');
  if (v4) return { kind: 'address', host, address: v4, family: 4 };
  if (!HOSTNAME.test(host)) throw new OutboundRefusedError(raw, 'not a valid host name');
  return { kind: 'name', host };
}

function localName(host: string): boolean {
  return LOCAL_NAMES.has(host) || LOCAL_SUFFIXES.some((s) => host.endsWith(s));
}

// ---- the allowlist ------------------------------------------------------------------------------------

/** OUTBOUND_ALLOWLIST's entries: a comma list, blanks and repeats dropped. */
export function splitAllowlist(text: string | undefined): string[] {
  const entries = (text ?? '').split(',').map((s) => s.trim());
  return [...new Set(entries.filter(Boolean))];
}

/** An address or `address/prefix` (API key subnets, OUTBOUND_ALLOWLIST); null when it is neither. */
export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefixText] = cidr.split('/');
  const version = net.isIP(address);
  if (!version) return null;
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (prefixText !== undefined && !/^\d+$/.test(prefixText))) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** Why an OUTBOUND_ALLOWLIST entry is invalid (for src/config.ts), or undefined. */
export function allowlistEntryProblem(entry: string): string | undefined {
  if (entry.includes('/')) {
    if (parseCidr(entry) && entry.split('/').length === 2) return undefined;
    return `"${entry}" is not a CIDR (address/prefix, prefix at most ${net.isIP(entry.split('/')[0] ?? '') === 6 ? 128 : 32})`;
  }
  if (net.isIP(entry)) return undefined;
  if (numericIpv4(entry.toLowerCase()) !== undefined) return `"${entry}" is not a dotted-decimal IPv4 address`;
  if (!HOSTNAME.test(entry.toLowerCase().replace(/\.$/, ''))) return `"${entry}" is not a host name, IP address or CIDR`;
  return undefined;
}

/** The outbound policy for one OUTBOUND_ALLOWLIST. Get it with outboundPolicy(config.OUTBOUND_ALLOWLIST). */
export class OutboundPolicy {
  private readonly names = new Set<string>();
  private readonly nets = new BlockList();

  constructor(allowlist: readonly string[]) {
    for (const entry of allowlist) {
      const problem = allowlistEntryProblem(entry);
      if (problem) throw new Error(`OUTBOUND_ALLOWLIST: ${problem}`);
      const cidr = parseCidr(entry);
      if (!cidr) this.names.add(entry.toLowerCase().replace(/\.$/, ''));
      else this.nets.addSubnet(cidr.address, cidr.prefix, cidr.family);
    }
  }

  /** The address is allow-listed (an IPv4-mapped address counts as its IPv4 address). */
  addressAllowListed(address: string): boolean {
    const family = net.isIP(address);
    if (family === 4) return this.nets.check(address, 'ipv4');
    if (family !== 6) return false;
    const v4 = embeddedIpv4(address);
    return this.nets.check(address, 'ipv6') || (v4 !== undefined && this.nets.check(v4, 'ipv4'));
  }

  /** Throws OutboundRefusedError unless the address may be connected to (allowlist first). */
  private vetAddress(host: string, address: string, viaDns: boolean): boolean {
    if (this.addressAllowListed(address)) return true;
    const reason = blockedAddressReason(address);
    if (reason) throw new OutboundRefusedError(host, viaDns ? `it resolves to ${reason}` : `it is ${reason}`);
    return false;
  }

  /**
   * The check that needs no DNS: the spelling. Throws OutboundRefusedError for a refused address
   * or name; answers the address to use for an address, or that the name must be resolved.
   */
  precheck(host: string): { vetted: Vetted } | { resolve: string; allowListed: boolean } {
    const parsed = parseHost(host);
    if (parsed.kind === 'address') {
      const allowListed = this.vetAddress(host, parsed.address, false);
      return { vetted: { host: parsed.host, address: parsed.address, family: parsed.family, allowListed } };
    }
    if (this.names.has(parsed.host)) return { resolve: parsed.host, allowListed: true };
    if (localName(parsed.host)) throw new OutboundRefusedError(host, 'a name of the local machine or network');
    return { resolve: parsed.host, allowListed: false };
  }

  /** Vets every address a name resolved to; answers them in the resolver's order. */
  private vetAnswer(host: string, name: { resolve: string; allowListed: boolean }, answer: dns.LookupAddress[]): Vetted[] {
    if (answer.length === 0) throw Object.assign(new Error(`no address for ${host}`), { code: 'ENOTFOUND' });
    return answer.map((a) => {
      const listed = name.allowListed || this.vetAddress(host, a.address, true);
      return { host: name.resolve, address: a.address, family: a.family as 4 | 6, servername: name.resolve, allowListed: listed };
    });
  }

  /**
   * The connect-time check: resolves the host and vets every address it resolves to. Connect to
   * the answer's `address` with `servername` for TLS. Throws OutboundRefusedError, or the DNS
   * error (code ENOTFOUND, EAI_AGAIN, ETIMEDOUT, ...).
   */
  async resolve(host: string, timeoutMs = 10_000): Promise<Vetted> {
    return (await this.resolveAll(host, timeoutMs))[0]!;
  }

  async resolveAll(host: string, timeoutMs = 10_000): Promise<Vetted[]> {
    const pre = this.precheck(host);
    if ('vetted' in pre) return [pre.vetted];
    const answer = await withTimeout(dns.promises.lookup(pre.resolve, { all: true, verbatim: true }), timeoutMs, `DNS lookup timed out after ${timeoutMs} ms`);
    return this.vetAnswer(host, pre, answer);
  }

  /**
   * The save-time check: why the host is refused, or undefined. Works offline: a name whose DNS
   * does not answer (within `timeoutMs`) is accepted, and connect time decides.
   */
  async vetForSave(host: string, timeoutMs = 2_000): Promise<string | undefined> {
    try {
      await this.resolveAll(host, timeoutMs);
      return undefined;
    } catch (err) {
      if (err instanceof OutboundRefusedError) return err.reason;
      return undefined;
    }
  }

  /**
   * A `lookup` for node:net / node:http(s) connections that resolves and vets in one step, so the
   * socket connects only to addresses that were checked. Node does not call it for an address
   * host: run precheck() on the host first.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolveAll(hostname).then(
      (list) => {
        const wanted = options.family === 4 || options.family === 6 ? list.filter((v) => v.family === options.family) : list;
        const first = wanted[0];
        if (!first) callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
        else if (options.all)
          callback(
            null,
            wanted.map((v) => ({ address: v.address, family: v.family })),
          );
        else callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 4),
    );
  };
}

const policies = new Map<string, OutboundPolicy>();

/** The policy for an allowlist (config.OUTBOUND_ALLOWLIST), built once per distinct list. */
export function outboundPolicy(allowlist: readonly string[]): OutboundPolicy {
  const key = allowlist.join(',');
  let p = policies.get(key);
  if (!p) policies.set(key, (p = new OutboundPolicy(allowlist)));
  return p;
}

/**
 * The save-time check of several host fields at once (field → host): the first one refused, as a
 * message naming the field, or undefined. `dns: false` checks the spelling only (no lookup).
 */
export async function refusedHostField(
  allowlist: readonly string[],
  hosts: Record<string, string | undefined>,
  opts: { dns?: boolean; timeoutMs?: number } = {},
): Promise<{ field: string; message: string } | undefined> {
  const policy = outboundPolicy(allowlist);
  const entries = Object.entries(hosts).filter((e): e is [string, string] => e[1] !== undefined);
  const reasons = await Promise.all(
    entries.map(async ([, host]) => {
      if (opts.dns !== false) return policy.vetForSave(host, opts.timeoutMs);
      try {
        policy.precheck(host);
        return undefined;
      } catch (err) {
        if (err instanceof OutboundRefusedError) return err.reason;
        throw err;
      }
    }),
  );
  const i = reasons.findIndex((r) => r !== undefined);
  if (i < 0) return undefined;
  const [field, host] = entries[i]!;
  return { field, message: `${field}: "${host}" is refused by the outbound policy (${reasons[i]})` };
}

// Keep-alive pools per policy: a pooled socket was connected to an address its policy vetted.
const agents = new WeakMap<OutboundPolicy, { http: http.Agent; https: https.Agent }>();

/**
 * An HTTP(S) request through the outbound policy: the URL's host is checked first (throws OutboundRefusedError, at
 * once), and the socket connects only to an address the policy's lookup vetted after DNS (TLS still verifies the
 * URL's host name), from a keep-alive pool of this policy's. Redirects are not followed (node never does).
 */
export function policyRequest(policy: OutboundPolicy, target: URL, init: { method: string; headers: Record<string, string> }): http.ClientRequest {
  policy.precheck(target.hostname);
  let pool = agents.get(policy);
  if (!pool) {
    pool = { http: new http.Agent({ keepAlive: true, lookup: policy.lookup }), https: new https.Agent({ keepAlive: true, lookup: policy.lookup }) };
    agents.set(policy, pool);
  }
  const secure = target.protocol === 'https:';
  const request = (secure ? https : http).request(target, { ...init, agent: secure ? pool.https : pool.http, lookup: policy.lookup });
  // Traces on: a client span (relayed upstream calls, webhook deliveries) naming the host, port and path only.
  tracing()?.outgoing(request, target, init.method);
  return request;
}
