// What one client is, by its address: the address without the port a proxy may write, and the key it is counted under by limits.
import net from 'node:net';
import { embeddedIpv4, ipv6Bytes } from './outbound.js';

const IPV4_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/;
const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/;
// An IPv6 address ending in a dotted IPv4 part can take no more groups: a `:port` after it is a port.
const DOTTED_V6_PORT = /^(.*:\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/;

/** `fe80::1%eth0` → `fe80::1`: a zone names the receiver's interface, not the sender. */
const withoutZone = (v6: string) => v6.replace(/%.*$/, '');

/**
 * The address as a socket or a proxy (X-Forwarded-For) gives it, without its port (`1.2.3.4:5555`,
 * `[2001:db8::1]:443`, `[::1]`), and an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) as its IPv4.
 * Text that is no address is returned as it came (trimmed).
 */
export function bareAddress(text: string): string {
  const s = text.trim();
  const addr = [s, BRACKETED.exec(s)?.[1], IPV4_PORT.exec(s)?.[1], DOTTED_V6_PORT.exec(s)?.[1]].find((a) => a !== undefined && net.isIP(a));
  if (addr === undefined) return s;
  if (net.isIPv6(addr)) {
    const b = ipv6Bytes(withoutZone(addr));
    if (b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return b.slice(12).join('.');
  }
  return addr;
}

/**
 * The key a client address is counted under by limits (failed logins): an IPv4 address as itself,
 * and an IPv6 address as its /64 (`2001:0db8:0000:0001::/64`), the block one subscriber or host gets
 * (RFC 6177): one machine may take any of 2^64 addresses in it, so each address alone would be a
 * fresh count. An IPv6 form of an IPv4 address (mapped, NAT64, 6to4) counts as that IPv4 address.
 * Ports go (see bareAddress); text that is no address is its own key.
 */
export function addressLimitKey(text: string): string {
  const addr = bareAddress(text);
  if (!net.isIPv6(addr)) return addr;
  const v6 = withoutZone(addr);
  const v4 = embeddedIpv4(v6);
  if (v4) return v4;
  const b = ipv6Bytes(v6);
  const groups = [0, 2, 4, 6].map((i) => ((b[i]! << 8) | b[i + 1]!).toString(16).padStart(4, '0'));
  return `${groups.join(':')}::/64`;
}
