// One mail job at a time per mailbox, across every worker: a leased Redis lock, renewed while held.
import { randomUUID } from 'node:crypto';
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';

const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

/**
 * Runs `fn` holding the account's lock. Others wait (up to `waitMs`) rather than open a second
 * session: Outlook throttles concurrent sessions per mailbox. A worker that dies holding the
 * lock frees it when the lease runs out (JOB_LOCK_MS, the lease of the job itself), since nobody renews it any more.
 */
export async function withMailboxLock<T>(p: Platform, accountId: number, waitMs: number, fn: () => Promise<T>): Promise<T> {
  const key = p.keys.of('mailbox-lock', accountId);
  const token = randomUUID();
  const leaseMs = p.config.JOB_LOCK_MS;
  const deadline = Date.now() + waitMs;
  for (;;) {
    const ok = await p.redis.set(key, token, 'PX', leaseMs, 'NX');
    if (ok === 'OK') break;
    if (Date.now() > deadline) {
      throw new AppError(503, 'The mailbox is busy with another operation; try again shortly', {
        code: 'mailbox_busy',
        retriable: true,
        headers: { 'Retry-After': '5' },
      });
    }
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 150));
  }
  const renewal = setInterval(() => {
    p.redis.eval(RENEW, 1, key, token, String(leaseMs)).catch(() => {});
  }, leaseMs / 3);
  try {
    return await fn();
  } finally {
    clearInterval(renewal);
    await p.redis.eval(RELEASE, 1, key, token).catch(() => {});
  }
}
