// A client address without its port, and the key limits count it under (an IPv6 /64 is one client).
import { describe, expect, it } from 'vitest';
import { addressLimitKey, bareAddress } from '../../src/client-address.js';

describe('bareAddress', () => {
  it.each([
    ['1.2.3.4', '1.2.3.4'],
    [' 1.2.3.4 ', '1.2.3.4'],
    ['1.2.3.4:5555', '1.2.3.4'],
    ['::ffff:1.2.3.4', '1.2.3.4'],
    ['::FFFF:1.2.3.4', '1.2.3.4'],
    ['::ffff:102:304', '1.2.3.4'],
    ['::ffff:1.2.3.4:5555', '1.2.3.4'],
    ['[::ffff:1.2.3.4]:5555', '1.2.3.4'],
    ['2001:db8::1', '2001:db8::1'],
    ['[2001:db8::1]:443', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['unknown', 'unknown'],
    ['1.2.3.4:port', '1.2.3.4:port'],
    ['[not-an-address]:80', '[not-an-address]:80'],
    ['', ''],
  ])('%j → %j', (text, bare) => expect(bareAddress(text)).toBe(bare));
});

describe('addressLimitKey', () => {
  it('is an IPv4 address itself, without its port, in any of its IPv6 forms', () => {
    for (const text of ['1.2.3.4', '1.2.3.4:5555', '1.2.3.4:6666', '::ffff:1.2.3.4', '[::ffff:1.2.3.4]:80', '::ffff:102:304'])
      expect(addressLimitKey(text), text).toBe('1.2.3.4');
    expect(addressLimitKey('1.2.3.5')).toBe('1.2.3.5');
  });

  it('is the /64 of an IPv6 address, expanded and lower-case, without port or zone', () => {
    const key = '2001:0db8:0000:0001::/64';
    for (const text of [
      '2001:db8:0:1::1',
      '2001:DB8:0:1:ffff:ffff:ffff:ffff',
      '2001:0db8:0000:0001:0000:0000:0000:0002',
      '[2001:db8:0:1::3]:443',
      '2001:db8:0:1:a:b:c:d%eth0',
    ])
      expect(addressLimitKey(text), text).toBe(key);
    expect(addressLimitKey('2001:db8:0:2::1')).toBe('2001:0db8:0000:0002::/64');
    expect(addressLimitKey('::1')).toBe('0000:0000:0000:0000::/64');
    expect(addressLimitKey('fe80::1%eth0')).toBe('fe80:0000:0000:0000::/64');
  });

  it('is the IPv4 address of a 6to4 or NAT64 address', () => {
    expect(addressLimitKey('2002:102:304::1')).toBe('1.2.3.4');
    expect(addressLimitKey('64:ff9b::1.2.3.4')).toBe('1.2.3.4');
  });

  it('is unparseable text itself', () => {
    expect(addressLimitKey('unknown')).toBe('unknown');
    expect(addressLimitKey('')).toBe('');
  });
});
