// A job's envelope verifies only as the API signed it: same id, same name, same fields, same SECRET_KEY.
import { describe, expect, it } from 'vitest';
import { signEnvelope, verifyEnvelope, type JobEnvelope } from '../../src/jobs/wire.js';
import { createSecrets } from '../../src/secrets.js';

const ours = createSecrets('a-secret-key-for-the-api-and-workers-0123');
const theirs = createSecrets('another-secret-key-of-some-other-host-4567');

/** Signed, then through JSON as BullMQ stores it. */
function signed(envelope: JobEnvelope, id = 'mail-1', name = 'mail.fetch'): JobEnvelope {
  signEnvelope(ours, id, name, envelope);
  return JSON.parse(JSON.stringify(envelope));
}

describe('job envelope signatures', () => {
  const base = (): JobEnvelope => ({ owner: 7, requestId: 'r1', payload: { accountId: 3, mailbox: 'INBOX', limit: 0.1 + 0.2 } });

  it('verify after a trip through JSON, with an undefined field dropped on the way', () => {
    expect(verifyEnvelope(ours, 'mail-1', 'mail.fetch', signed(base()))).toBe(true);
    expect(verifyEnvelope(ours, 'mail-1', 'mail.fetch', signed({ owner: null, requestId: undefined, sealed: 'v1.x.y.z' }))).toBe(true);
  });

  it('fail when the owner, the payload or any field is changed, added or removed', () => {
    const edits: ((e: JobEnvelope) => void)[] = [
      (e) => (e.owner = 8),
      (e) => (e.owner = null),
      (e) => ((e.payload as { accountId: number }).accountId = 4),
      (e) => (e.replyTo = 'elsewhere'),
      (e) => (e.payloadRef = 'mail-2'),
      (e) => delete e.requestId,
      (e) => delete e.sig,
      (e) => (e.sig = `${e.sig!.slice(0, -1)}A`),
    ];
    for (const edit of edits) {
      const e = signed(base());
      edit(e);
      expect(verifyEnvelope(ours, 'mail-1', 'mail.fetch', e), edit.toString()).toBe(false);
    }
  });

  it('fail for another job id or name (a signed envelope copied into another job), or another SECRET_KEY', () => {
    const e = signed(base());
    expect(verifyEnvelope(ours, 'mail-2', 'mail.fetch', e)).toBe(false);
    expect(verifyEnvelope(ours, 'mail-1', 'mail.purge', e)).toBe(false);
    expect(verifyEnvelope(theirs, 'mail-1', 'mail.fetch', e)).toBe(false);
  });

  it('fail for data that is not an envelope', () => {
    for (const data of [null, undefined, 'x', 42, [], {}]) expect(verifyEnvelope(ours, 'mail-1', 'mail.fetch', data)).toBe(false);
  });
});
