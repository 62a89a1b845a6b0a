// SECRET_KEY with SECRET_KEY_PREVIOUS: the previous key's sealed values, job signatures and cookies are still accepted,
// nothing new is made under it; the generated key's rotation keeps a whole key in secret.key at every step.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Keygrip from 'keygrip';
import { describe, expect, it } from 'vitest';
import { beginGeneratedKeyRotation, createSecrets, endGeneratedKeyRotation, loadSecretKeys } from '../../src/secrets.js';

const OLD = 'the-old-secret-key-0123456789abcdefghijkl';
const NEW = 'the-new-secret-key-0123456789abcdefghijkl';
const OTHER = 'somebody-elses-key-0123456789abcdefghijkl';

describe('a key rotation under way (SECRET_KEY_PREVIOUS)', () => {
  const before = createSecrets(OLD);
  const during = createSecrets(NEW, OLD);
  const after = createSecrets(NEW);

  it('opens what either key sealed, seals under the new one only, and says which values are not yet under it', () => {
    const old = before.encrypt('a channel key');
    expect(during.decrypt(old)).toBe('a channel key');
    expect(during.isCurrent(old)).toBe(false);
    const resealed = during.encrypt(during.decrypt(old));
    expect(during.isCurrent(resealed)).toBe(true);
    expect(after.decrypt(resealed)).toBe('a channel key');
    expect(() => before.decrypt(resealed)).toThrow();
    // Once the previous key is dropped, what it sealed no longer opens; a third key never did.
    expect(() => after.decrypt(old)).toThrow();
    expect(() => during.decrypt(createSecrets(OTHER).encrypt('x'))).toThrow();
    expect(during.rotating).toBe(true);
    expect(after.rotating).toBe(false);
  });

  it("accepts jobs signed under either key, signs under the new one; another key's signature is refused", () => {
    const text = 'job-1\ncontent.batch\n{"owner":1}';
    expect(during.verifyJob(text, before.signJob(text))).toBe(true);
    expect(during.signJob(text)).toBe(after.signJob(text));
    expect(after.verifyJob(text, before.signJob(text))).toBe(false);
    expect(during.verifyJob(text, createSecrets(OTHER).signJob(text))).toBe(false);
    expect(during.verifyJob(`${text} `, before.signJob(text))).toBe(false);
  });

  it('cookies: signed with the new key, those signed with the previous one still verify (sessions survive)', () => {
    expect(during.cookieKeys).toEqual([after.cookieKeys[0], before.cookieKeys[0]]);
    // Koa's signed cookies are keygrip's: the first key signs, any verifies.
    const oldCookie = new Keygrip(before.cookieKeys).sign('koa.sess=abc');
    expect(new Keygrip(during.cookieKeys).verify('koa.sess=abc', oldCookie)).toBe(true);
    expect(new Keygrip(after.cookieKeys).verify('koa.sess=abc', oldCookie)).toBe(false);
  });
});

describe('the generated key (DATA_DIR/secret.key) rotated', () => {
  it('keeps the old key as secret.key.previous, which loadSecretKeys reads, until the rotation ends; begun twice, it does not turn again', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-keys-'));
    try {
      const config = { DATA_DIR: dir, SECRET_KEY: undefined, SECRET_KEY_PREVIOUS: undefined };
      const first = loadSecretKeys(config);
      expect(first.previous).toBeUndefined();
      expect(first.file).toBe(path.join(dir, 'secret.key'));
      beginGeneratedKeyRotation(config);
      const during = loadSecretKeys(config);
      expect(during.previous).toBe(first.current);
      expect(during.current).not.toBe(first.current);
      expect(during.current.length).toBeGreaterThanOrEqual(32);
      // Interrupted and begun again: the same new key, the same previous one.
      beginGeneratedKeyRotation(config);
      expect(loadSecretKeys(config)).toEqual(during);
      expect(fs.statSync(path.join(dir, 'secret.key.previous')).mode & 0o777).toBe(0o600);
      expect(fs.statSync(path.join(dir, 'secret.key')).mode & 0o777).toBe(0o600);
      endGeneratedKeyRotation(config);
      expect(loadSecretKeys(config)).toEqual({ current: during.current, previous: undefined, file: during.file });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SECRET_KEY set: the files are not read; SECRET_KEY_PREVIOUS is the previous key', () => {
    expect(loadSecretKeys({ DATA_DIR: '/nonexistent', SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: OLD })).toEqual({ current: NEW, previous: OLD });
  });
});
