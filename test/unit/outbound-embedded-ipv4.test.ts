// The outbound policy reads an IPv4 address out of an IPv6 one only for the forms that embed one (mapped, SIIT, NAT64
// 64:ff9b::/96, 6to4), each recognised by its whole prefix: an address one byte off is no such form, and the dotted
// spellings of the forms are read byte for byte (octets of several digits too).
import { describe, expect, it } from 'vitest';
import { blockedAddressReason, embeddedIpv4, ipv6Bytes } from '../../src/outbound.js';

describe('the IPv4 address an IPv6 address embeds', () => {
  it.each([
    ['::ffff:7f00:1', '127.0.0.1'],
    ['::ffff:192.168.10.20', '192.168.10.20'],
    ['0:0:0:0:0:ffff:10.100.200.30', '10.100.200.30'],
    ['::ffff:0:7f00:1', '127.0.0.1'],
    ['::ffff:0:172.20.30.40', '172.20.30.40'],
    ['64:ff9b::7f00:1', '127.0.0.1'],
    ['64:ff9b::10.11.12.13', '10.11.12.13'],
    ['2002:c0a8:0a14::1', '192.168.10.20'],
  ])('%s embeds %s', (v6, v4) => {
    expect(embeddedIpv4(v6)).toBe(v4);
  });

  it.each([
    // ::ffff:0:0/96 (mapped), one byte off
    ['1::ffff:7f00:1', 'a byte of the zero prefix set'],
    ['::1:ffff:7f00:1', 'the byte before ffff set'],
    ['::ff:7f00:1', 'ffff as 00ff'],
    ['::ff00:7f00:1', 'ffff as ff00'],
    // ::ffff:0:0:0/96 (SIIT), one byte off
    ['1::ffff:0:7f00:1', 'a byte of the zero prefix set'],
    ['::ff:0:7f00:1', 'ffff as 00ff'],
    ['::ff00:0:7f00:1', 'ffff as ff00'],
    ['::ffff:1:7f00:1', 'the zero group after ffff set'],
    // 64:ff9b::/96 (NAT64), one byte off
    ['164:ff9b::7f00:1', 'its first byte'],
    ['65:ff9b::7f00:1', 'its second byte'],
    ['64:fe9b::7f00:1', 'its third byte'],
    ['64:ff9c::7f00:1', 'its fourth byte'],
    ['64:ff9b:0:0:0:1:7f00:1', 'a byte of its zero middle'],
    // 2002::/16 (6to4), one byte off
    ['2102:7f00:1::', 'its first byte'],
    ['2003:7f00:1::', 'its second byte'],
    // an ordinary public address whose last 48 bits spell ffff:127.0.0.1
    ['2a00:1450::ffff:7f00:1', 'a public prefix'],
  ])('%s is none of those forms (%s)', (v6) => {
    expect(embeddedIpv4(v6)).toBeUndefined();
  });

  it('a public IPv6 address whose last 48 bits spell ::ffff:127.0.0.1 is not refused as loopback', () => {
    expect(blockedAddressReason('2a00:1450::ffff:7f00:1')).toBeUndefined();
    expect(blockedAddressReason('::ffff:7f00:1')).toMatch(/loopback address \(in an IPv6 form\)/);
  });
});

describe('IPv6 text as bytes', () => {
  it.each([
    ['::', [...new Array(16).fill(0)]],
    ['::1', [...new Array(15).fill(0), 1]],
    ['fe80::', [0xfe, 0x80, ...new Array(14).fill(0)]],
    ['1:2:3:4:5:6:7:8', [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]],
    ['::ffff:192.168.10.20', [...new Array(10).fill(0), 0xff, 0xff, 192, 168, 10, 20]],
    ['64:ff9b::10.11.12.13', [0, 0x64, 0xff, 0x9b, ...new Array(8).fill(0), 10, 11, 12, 13]],
    ['1:2:3:4:5:6:10.11.12.13', [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 10, 11, 12, 13]],
  ])('%s', (text, bytes) => {
    expect(ipv6Bytes(text)).toEqual(bytes);
  });
});
