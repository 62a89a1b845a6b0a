// The console shows log rows' details in Chinese by recognising the English sentences the server writes
// (web/src/log-text.ts). The sentences of src/logs/entries.ts are made here by the server's own functions, so a
// sentence changed there without the console fails here; those the services write inline are written out as they are
// (their file named beside each).
import { describe, expect, it } from 'vitest';
import {
  adminActionEntry,
  consumeEntry,
  errorEntry,
  jobActionEntry,
  redemptionEntry,
  systemEntry,
  userChangedEntries,
  userCreatedEntries,
  userDeletedEntry,
} from '../../src/logs/entries.js';
import { AppError } from '../../src/errors.js';
import { parseChange, parseLogContent } from '../../web/src/log-text.js';

const root = { id: 1, username: 'root' };
const user = { id: 7, username: 'ann.b', display_name: 'Ann', email: null, role: 1, status: 1, quota: 0, group: 'default' };
const call = (model: string) => ({ user: root, token: { id: 3, name: 'k' }, model, startedAt: performance.now() });

describe("the console's reading of log sentences", () => {
  const cases: [string, string, Record<string, string>][] = [
    [
      consumeEntry(call('local-hash-v1'), { quota: 2, promptTokens: 6, price: 100, cacheHit: false }).content,
      'logText.consumePriced',
      { tokens: '6', price: '100' },
    ],
    [
      consumeEntry(call('nomic-embed-text:latest'), { quota: 0, promptTokens: 6, price: 0, cacheHit: true }).content,
      'logText.consumeFreeCached',
      { model: 'nomic-embed-text:latest' },
    ],
    [consumeEntry(call('m'), { quota: 1, promptTokens: 9, price: 0.5, cacheHit: true }).content, 'logText.consumePricedCached', { price: '0.5' }],
    [
      errorEntry(call('m'), new AppError(502, 'upstream said: no (really)', { code: 'upstream_error' })).content,
      'logText.failedCode',
      { status: '502', code: 'upstream_error', message: 'upstream said: no (really)' },
    ],
    [errorEntry(call('m'), new AppError(400, 'bad')).content, 'logText.failed', { status: '400', message: 'bad' }],
    [redemptionEntry(7, { id: 4, name: 'launch "x"', quota: 500 }).content, 'logText.redeemed', { id: '4', quota: '500' }],
    [userCreatedEntries(root, user)[0]!.content, 'logText.userCreated', { user: 'ann.b (#7)', actor: 'root (#1)', role: '1' }],
    [userCreatedEntries(root, { ...user, group: 'vip' })[0]!.content, 'logText.userCreatedInGroup', { group: 'vip' }],
    [userCreatedEntries(root, { ...user, quota: 10 })[1]!.content, 'logText.initialQuota', { quota: '10', actor: 'root (#1)' }],
    [userChangedEntries(root, user, { ...user, quota: 40 }, false)[0]!.content, 'logText.quotaChanged', { from: '0', to: '40' }],
    [userChangedEntries(root, user, { ...user, role: 10, display_name: 'A' }, true)[0]!.content, 'logText.userChanged', { user: 'ann.b (#7)' }],
    [userDeletedEntry(root, user).content, 'logText.userDeleted', { user: 'ann.b (#7)' }],
    // src/channels/service.ts
    [adminActionEntry(root, 'Created channel #2 "up" (https://up.example/v1, models a,b)').content, 'logText.channelCreated', { id: '2', name: 'up' }],
    [adminActionEntry(root, 'Changed channel #2 "up": priority 0 → 5, key replaced').content, 'logText.channelChanged', { id: '2' }],
    [adminActionEntry(root, 'Deleted channel #2').content, 'logText.channelDeleted', { id: '2' }],
    // src/accounts/redemptions-service.ts
    [adminActionEntry(root, 'Created 3 redemption code(s) #4-#6 "launch" worth 500 quota each').content, 'logText.codesCreated', { n: '3', range: '#4-#6' }],
    [adminActionEntry(root, 'Changed redemption code #4: status 1 → 2').content, 'logText.codeChanged', { id: '4' }],
    [adminActionEntry(root, 'Deleted redemption code #4').content, 'logText.codeDeleted', { id: '4' }],
    // src/logs/jobs-service.ts
    [jobActionEntry(root, 'Retried job mail-0193 (mail.new)').content, 'logText.jobRetried', { id: 'mail-0193', name: 'mail.new' }],
    // src/channels/store.ts, src/logs/maintenance.ts, src/accounts/usage.ts
    [systemEntry('Channel #2 "up" disabled automatically: 401 invalid key').content, 'logText.channelDisabled', { reason: '401 invalid key' }],
    [systemEntry('Redis unreachable from api-1 since 2026-01-01T00:00:00.000Z').content, 'logText.unreachable', { what: 'Redis', me: 'api-1' }],
    [systemEntry('Postgres reachable again from api-1 after 12 s').content, 'logText.reachable', { s: '12' }],
    ['local-hash-v1: 80 free calls in the minute from 10:04 UTC, 480 tokens', 'logText.freeCalls', { calls: '80', time: '10:04', tokens: '480' }],
  ];
  for (const [content, key, vars] of cases) {
    it(`reads "${content}" as ${key}`, () => {
      const parsed = parseLogContent(content);
      expect(parsed?.key).toBe(key);
      expect(parsed?.vars).toMatchObject(vars);
    });
  }

  it("reads a user change's list item by item", () => {
    const content = userChangedEntries(root, user, { ...user, username: 'ann', role: 10, display_name: 'A', group: 'vip' }, true)[0]!.content;
    const parsed = parseLogContent(content)!;
    expect(parsed.changes!.map((c) => parseChange(c)?.key ?? c)).toEqual([
      'logChange.username',
      'logChange.displayName',
      'logChange.role',
      'logChange.group',
      'logChange.password',
    ]);
    expect(parseChange('role 1 → 10')).toEqual({ key: 'logChange.role', rest: '1 → 10' });
    // A channel's field is shown as it is.
    expect(parseChange('base_url "a" → "b"')).toBeNull();
  });

  it('leaves a sentence of no known shape alone', () => {
    expect(parseLogContent('Something new happened')).toBeNull();
  });
});
