// Sealed job payloads (payloadIn 'sealed'): opened with the SECRET_KEY that sealed them; another key is a clear, final failure.
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db.js';
import { loadPayload } from '../../src/jobs/wire.js';
import { createSecrets } from '../../src/secrets.js';

const ours = createSecrets('a-secret-key-for-the-api-and-workers-0123');
const theirs = createSecrets('another-secret-key-of-some-other-host-4567');
const noDb = undefined as unknown as Db; // a sealed payload never reads Postgres

describe('sealed job payloads', () => {
  it('a worker with the same SECRET_KEY opens the payload; the sealed form does not show it', async () => {
    const payload = { requests: [{ inputs: ['a private text'] }] };
    const sealed = ours.encrypt(JSON.stringify(payload));
    expect(sealed).not.toContain('private');
    expect(await loadPayload(noDb, ours, { owner: 1, sealed })).toEqual(payload);
  });

  it('a worker with another SECRET_KEY fails the job for good, saying why', async () => {
    const sealed = theirs.encrypt(JSON.stringify({ requests: [] }));
    await expect(loadPayload(noDb, ours, { owner: 1, sealed })).rejects.toMatchObject({
      code: 'payload_sealed_elsewhere',
      retriable: false,
      message: expect.stringMatching(/SECRET_KEY/),
    });
  });
});
