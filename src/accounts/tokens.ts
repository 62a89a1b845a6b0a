// API key rules: generation, masking, effective status (expired/exhausted) and subnet checks.
import net from 'node:net';
import { randomAlnum, sha256Hex } from '../secrets.js';
import type { TokenRow, TokenView } from './schema.js';
import { parseCidr } from '../outbound.js';
import { TOKEN_STATUS } from './schema.js';

/** `sk-` + 48 letters and digits; only its SHA-256 is stored. */
export function generateApiKey(): { key: string; hash: string; hint: string } {
  const key = `sk-${randomAlnum(48)}`;
  return { key, hash: sha256Hex(key), hint: `${key.slice(0, 7)}${'*'.repeat(8)}${key.slice(-4)}` };
}

export const isApiKey = (s: string) => /^sk-[A-Za-z0-9]{48}$/.test(s);

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export const isExpired = (t: Pick<TokenRow, 'expired_time'>, now = nowSeconds()) => t.expired_time !== -1 && t.expired_time <= now;
export const isExhausted = (t: Pick<TokenRow, 'unlimited_quota' | 'remain_quota'>) => !t.unlimited_quota && t.remain_quota <= 0;

/**
 * A key with limits of its own (a quota, a models allow-list, a subnet, an expiry). Such a key reaches only /v1: anything
 * under /api (its user's mail, other keys, account) would reach past those limits (src/http/auth.ts: authorize).
 */
export const hasLimits = (t: Pick<TokenRow, 'unlimited_quota' | 'models' | 'subnet' | 'expired_time'>) =>
  !t.unlimited_quota || (t.models ?? '') !== '' || (t.subnet ?? '') !== '' || t.expired_time !== -1;

/**
 * Status as the client should see it: a disabled token is 2; an enabled one that has expired or run
 * out of quota reports 3 or 4, and becomes usable again as soon as its expiry or quota is fixed.
 */
export function effectiveStatus(t: Pick<TokenRow, 'status' | 'expired_time' | 'unlimited_quota' | 'remain_quota'>): number {
  if (t.status !== TOKEN_STATUS.enabled) return t.status;
  if (isExpired(t)) return TOKEN_STATUS.expired;
  if (isExhausted(t)) return TOKEN_STATUS.exhausted;
  return TOKEN_STATUS.enabled;
}

export function publicToken(t: TokenRow, fullKey?: string): TokenView {
  return {
    id: t.id,
    user_id: t.user_id,
    key: fullKey ?? t.key_hint,
    name: t.name,
    status: effectiveStatus(t),
    created_time: t.created_time,
    accessed_time: t.accessed_time,
    expired_time: t.expired_time,
    remain_quota: t.remain_quota,
    unlimited_quota: t.unlimited_quota,
    used_quota: t.used_quota,
    models: t.models ?? '',
    subnet: t.subnet ?? '',
  };
}

const blockLists = new Map<string, net.BlockList>();

/** Whether `ip` is inside the token's subnet list (no list: any address). */
export function ipAllowed(subnet: string | null, ip: string): boolean {
  if (!subnet) return true;
  let list = blockLists.get(subnet);
  if (!list) {
    list = new net.BlockList();
    for (const cidr of subnet.split(',')) {
      const c = parseCidr(cidr.trim());
      if (c) list.addSubnet(c.address, c.prefix, c.family);
    }
    if (blockLists.size > 1000) blockLists.clear();
    blockLists.set(subnet, list);
  }
  const addr = ip.startsWith('::ffff:') && net.isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  const family = net.isIPv4(addr) ? 'ipv4' : net.isIPv6(addr) ? 'ipv6' : undefined;
  return family ? list.check(addr, family) : false;
}

export function modelAllowed(models: string | null, model: string): boolean {
  return !models || models.split(',').includes(model);
}
