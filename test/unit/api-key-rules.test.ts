// The API key rules of src/accounts/tokens.ts, without services: the key's shape and hint, expiry and exhaustion at
// their boundaries, the status a client sees, which keys count as limited, the subnet and model allow-lists.
import { describe, expect, it } from 'vitest';
import { TOKEN_STATUS, type TokenRow } from '../../src/accounts/schema.js';
import {
  effectiveStatus,
  generateApiKey,
  hasLimits,
  ipAllowed,
  isApiKey,
  isExhausted,
  isExpired,
  modelAllowed,
  publicToken,
} from '../../src/accounts/tokens.js';
import { sha256Hex } from '../../src/secrets.js';

describe('an API key', () => {
  it('is sk- and 48 letters and digits; only its SHA-256 and a hint of its ends are kept', () => {
    const { key, hash, hint } = generateApiKey();
    expect(key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    expect(hash).toBe(sha256Hex(key));
    expect(hint).toBe(`${key.slice(0, 7)}********${key.slice(-4)}`);
    expect(generateApiKey().key).not.toBe(key);
  });

  it('is recognised only in that exact shape', () => {
    const body = 'a'.repeat(48);
    expect(isApiKey(`sk-${body}`)).toBe(true);
    for (const not of [`sk-${body}x`, `sk-${body.slice(1)}`, `xsk-${body}`, `sk-${body.slice(1)}-`, `SK-${body}`, `sk_${body}`, body])
      expect(isApiKey(not), not).toBe(false);
  });
});

describe('expiry and quota', () => {
  it('a key expires at its expired_time (not a second later); -1 never expires', () => {
    expect(isExpired({ expired_time: 100 }, 99)).toBe(false);
    expect(isExpired({ expired_time: 100 }, 100)).toBe(true);
    expect(isExpired({ expired_time: -1 }, 10 ** 12)).toBe(false);
    expect(isExpired({ expired_time: Math.floor(Date.now() / 1000) - 5 })).toBe(true);
    expect(isExpired({ expired_time: Math.floor(Date.now() / 1000) + 60 })).toBe(false);
  });

  it('a limited key is exhausted at 0 left; an unlimited one never', () => {
    expect(isExhausted({ unlimited_quota: false, remain_quota: 1 })).toBe(false);
    expect(isExhausted({ unlimited_quota: false, remain_quota: 0 })).toBe(true);
    expect(isExhausted({ unlimited_quota: false, remain_quota: -3 })).toBe(true);
    expect(isExhausted({ unlimited_quota: true, remain_quota: 0 })).toBe(false);
  });

  it('the status a client sees: disabled as stored, then expired, then exhausted, else enabled', () => {
    const t = { status: TOKEN_STATUS.enabled, expired_time: -1, unlimited_quota: false, remain_quota: 10 };
    expect(effectiveStatus(t)).toBe(TOKEN_STATUS.enabled);
    expect(effectiveStatus({ ...t, status: TOKEN_STATUS.disabled, expired_time: 1, remain_quota: 0 })).toBe(TOKEN_STATUS.disabled);
    expect(effectiveStatus({ ...t, expired_time: 1, remain_quota: 0 })).toBe(TOKEN_STATUS.expired);
    expect(effectiveStatus({ ...t, remain_quota: 0 })).toBe(TOKEN_STATUS.exhausted);
  });

  it('the key as shown: the hint unless the whole key is given (at creation), the effective status, blanks for no lists', () => {
    const row = {
      id: 7,
      user_id: 3,
      key_hint: 'sk-abcd********wxyz',
      name: 'ci',
      status: TOKEN_STATUS.enabled,
      created_time: 1,
      accessed_time: 2,
      expired_time: 5,
      remain_quota: 9,
      unlimited_quota: false,
      used_quota: 4,
      models: null,
      subnet: null,
    } as unknown as TokenRow;
    expect(publicToken(row)).toEqual({
      id: 7,
      user_id: 3,
      key: 'sk-abcd********wxyz',
      name: 'ci',
      status: TOKEN_STATUS.expired,
      created_time: 1,
      accessed_time: 2,
      expired_time: 5,
      remain_quota: 9,
      unlimited_quota: false,
      used_quota: 4,
      models: '',
      subnet: '',
    });
    expect(publicToken(row, 'sk-full').key).toBe('sk-full');
  });
});

describe('a key with limits of its own', () => {
  const plain = { unlimited_quota: true, models: '', subnet: '', expired_time: -1 };
  it('is one with a quota, a models list, a subnet or an expiry; a key with none of them is not', () => {
    expect(hasLimits(plain)).toBe(false);
    expect(hasLimits({ ...plain, models: null, subnet: null })).toBe(false);
    expect(hasLimits({ ...plain, unlimited_quota: false })).toBe(true);
    expect(hasLimits({ ...plain, models: 'm' })).toBe(true);
    expect(hasLimits({ ...plain, subnet: '10.0.0.0/8' })).toBe(true);
    expect(hasLimits({ ...plain, expired_time: 0 })).toBe(true);
  });
});

describe('the subnet list', () => {
  it('no list lets any address in', () => {
    expect(ipAllowed(null, '203.0.113.9')).toBe(true);
    expect(ipAllowed('', '203.0.113.9')).toBe(true);
  });

  it('lets in the addresses of its entries (blanks around them ignored), IPv4-mapped forms as their IPv4 address', () => {
    const list = '10.0.0.0/8, 192.168.1.7 ,2001:db8::/32';
    expect(ipAllowed(list, '10.200.3.4')).toBe(true);
    expect(ipAllowed(list, '::ffff:10.200.3.4')).toBe(true);
    expect(ipAllowed(list, '192.168.1.7')).toBe(true);
    expect(ipAllowed(list, '2001:db8::5')).toBe(true);
    expect(ipAllowed(list, '11.0.0.1')).toBe(false);
    expect(ipAllowed(list, '192.168.1.8')).toBe(false);
    expect(ipAllowed(list, '2001:db9::5')).toBe(false);
    expect(ipAllowed(list, '::ffff:11.0.0.1')).toBe(false);
  });

  it('an IPv6 list holds IPv6 addresses; text that is no address is never let in', () => {
    expect(ipAllowed('::ffff:0:0/96', '::ffff:7f00:1')).toBe(true);
    expect(ipAllowed('0.0.0.0/0', 'not-an-address')).toBe(false);
    expect(ipAllowed('0.0.0.0/0', '')).toBe(false);
  });

  it('entries that are not addresses are skipped, the others still hold', () => {
    expect(ipAllowed('nonsense, 10.0.0.0/8', '10.1.1.1')).toBe(true);
    expect(ipAllowed('nonsense, 10.0.0.0/8', '11.1.1.1')).toBe(false);
  });

  it('many distinct lists are each read right (the cache of parsed lists is bounded, not wrong)', () => {
    for (let i = 0; i < 1_100; i++) expect(ipAllowed(`10.${i % 250}.0.0/16`, `10.${i % 250}.1.1`)).toBe(true);
    expect(ipAllowed('10.0.0.0/16', '10.1.0.1')).toBe(false);
  });
});

describe('the models list', () => {
  it('no list allows every model; a list only its own names, exactly', () => {
    expect(modelAllowed(null, 'text-embedding-3-small')).toBe(true);
    expect(modelAllowed('', 'text-embedding-3-small')).toBe(true);
    expect(modelAllowed('a,text-embedding-3-small', 'text-embedding-3-small')).toBe(true);
    expect(modelAllowed('a,text-embedding-3-small', 'text-embedding-3')).toBe(false);
    expect(modelAllowed('a,b', 'a,b')).toBe(false);
  });
});
