// What crosses Redis between the API and the workers (src/jobs/wire.ts), without services: failures carried as the
// AppError the API answers with, references to stored results, the queue of a job id, the id a job is signed under,
// and payloads kept in the envelope.
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db.js';
import { AppError } from '../../src/errors.js';
import { decodeFailure, encodeFailure, loadPayload, queueOfJobId, resultRefOf, schedulerSignedId, signedIdOf, unsignedJob } from '../../src/jobs/wire.js';
import { createSecrets } from '../../src/secrets.js';

describe("a job's failure", () => {
  it('carries the AppError whole: status, message, code, type, param and headers come back as they went', () => {
    const err = new AppError(429, 'slow down', { code: 'rate_limited', type: 'rate_limit_error', param: 'input', headers: { 'Retry-After': '3' } });
    const reason = encodeFailure(err);
    expect(reason.startsWith('APPERR {')).toBe(true);
    expect(decodeFailure(reason).toJSON()).toEqual(err.toJSON());
  });

  it('a reason BullMQ wrote itself is said as a 500 job_failed, its first line only and at most 300 characters of it', () => {
    const said = decodeFailure(`job stalled more than allowable limit\n at some/stack.js:1`);
    expect(said.toJSON()).toMatchObject({ status: 500, code: 'job_failed', message: 'Job failed: job stalled more than allowable limit' });
    expect(decodeFailure(`${'x'.repeat(400)}\nmore`).message).toBe(`Job failed: ${'x'.repeat(300)}`);
  });

  it('no reason, or a marked one that is not JSON, is a plain job_failed', () => {
    expect(decodeFailure(undefined).toJSON()).toMatchObject({ status: 500, code: 'job_failed', message: 'Job failed' });
    expect(decodeFailure('').message).toBe('Job failed');
    expect(decodeFailure('APPERR {not json').toJSON()).toMatchObject({ status: 500, code: 'job_failed', message: 'Job failed: APPERR {not json' });
  });
});

describe('a job whose signature does not verify', () => {
  it('is refused with a 403 job_not_signed that is not retried, saying why', () => {
    const err = unsignedJob();
    expect(err.toJSON()).toMatchObject({ status: 403, code: 'job_not_signed' });
    expect(err.message).toMatch(/^This job's signature does not verify \(it was added or edited outside the API/);
    expect(err.retriable).toBe(false);
  });
});

describe('references and ids', () => {
  it('a result reference is an object with a string resultRef; anything else is none', () => {
    expect(resultRefOf({ resultRef: 'embeddings-12', delivered: true })).toBe('embeddings-12');
    for (const none of [null, undefined, 'embeddings-12', ['embeddings-12'], { resultRef: 12 }, { result: 'x' }]) expect(resultRefOf(none)).toBeUndefined();
  });

  it('a job id names its queue by its first part; an id of no queue names none', () => {
    expect(queueOfJobId('mail-0f3a')).toBe('mail');
    expect(queueOfJobId('embeddings-1-2')).toBe('embeddings');
    expect(queueOfJobId('mails-1')).toBeUndefined();
    expect(queueOfJobId('mail')).toBeUndefined();
    expect(queueOfJobId('-mail')).toBeUndefined();
  });

  it("a job is signed under its own id, or under its scheduler's when a scheduler made it", () => {
    expect(schedulerSignedId('nightly')).toBe('scheduler:nightly');
    expect(signedIdOf({ id: 'schedules-7' })).toBe('schedules-7');
    expect(signedIdOf({ id: 'repeat:nightly:1700000000000', repeatJobKey: 'nightly' })).toBe('scheduler:nightly');
  });
});

describe('a payload in the envelope', () => {
  const secrets = createSecrets('a-secret-key-for-the-api-and-workers-0123');
  const noDb = undefined as unknown as Db; // a payload in the envelope never reads Postgres

  it('is the payload as it travelled; an envelope without one has none', async () => {
    expect(await loadPayload(noDb, secrets, { owner: 1, payload: { a: [1, 2] } })).toEqual({ a: [1, 2] });
    expect(await loadPayload(noDb, secrets, { owner: 1 })).toBeUndefined();
  });
});
