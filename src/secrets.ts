// SECRET_KEY handling: derived keys for cookie signing and AES-256-GCM encryption of stored credentials.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import type { Logger } from './log.js';

export interface Secrets {
  /** Keys for Koa's signed cookies: the first signs, every one verifies (a previous key's sessions stay valid). */
  cookieKeys: string[];
  /** Seals with SECRET_KEY. */
  encrypt(plain: string): string;
  /** Opens what SECRET_KEY sealed, or SECRET_KEY_PREVIOUS while one is set. */
  decrypt(sealed: string): string;
  /** Whether SECRET_KEY itself opens a sealed value (false: the previous key sealed it, or another key): what a rotation re-seals. */
  isCurrent(sealed: string): boolean;
  /** An HMAC-SHA256 (base64url) of a job's identity and data under SECRET_KEY: what makes a job one the API made (jobs/wire.ts). */
  signJob(text: string): string;
  /** Whether a signature is signJob's under SECRET_KEY, or under SECRET_KEY_PREVIOUS while one is set. */
  verifyJob(text: string, sig: string): boolean;
  /** Whether a previous key is accepted (a rotation under way). */
  readonly rotating: boolean;
}

/** The key, and the one a rotation is moving away from (SECRET_KEY_PREVIOUS, or the generated key's previous file). */
export interface SecretKeys {
  current: string;
  previous?: string;
  /** Where the current key was read from when it was generated (not set: SECRET_KEY). */
  file?: string;
}

const keyFile = (config: Pick<Config, 'DATA_DIR'>) => path.join(config.DATA_DIR, 'secret.key');
/** The generated key a rotation moves away from, kept beside the new one until every stored value is under the new one. */
const previousKeyFile = (config: Pick<Config, 'DATA_DIR'>) => path.join(config.DATA_DIR, 'secret.key.previous');

function readKeyFile(file: string): string {
  const key = fs.readFileSync(file, 'utf8').trim();
  if (key.length < 32) throw new Error(`${file} holds a key shorter than 32 characters; delete it or set SECRET_KEY`);
  return key;
}

/** SECRET_KEY from the environment, or one generated once and kept under DATA_DIR; and the previous key, if any. */
export function loadSecretKeys(config: Pick<Config, 'SECRET_KEY' | 'SECRET_KEY_PREVIOUS' | 'DATA_DIR'>, log?: Logger): SecretKeys {
  if (config.SECRET_KEY) return { current: config.SECRET_KEY, previous: config.SECRET_KEY_PREVIOUS };
  const file = keyFile(config);
  fs.mkdirSync(config.DATA_DIR, { recursive: true });
  try {
    // 'wx' makes concurrent first starts agree: exactly one writer wins, everyone reads its key.
    fs.writeFileSync(file, crypto.randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
    log?.info({ file }, 'generated SECRET_KEY and stored it under DATA_DIR (set SECRET_KEY to share it across machines)');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const previous = config.SECRET_KEY_PREVIOUS ?? (fs.existsSync(previousKeyFile(config)) ? readKeyFile(previousKeyFile(config)) : undefined);
  return { current: readKeyFile(file), previous, file };
}

/**
 * The generated key's rotation, first step: the key so far is kept as secret.key.previous and a new one replaces
 * secret.key (written aside, then renamed over it). At every moment secret.key holds a whole key and the previous one
 * is kept, so a process starting meanwhile opens everything. Already under way (the previous file is there): nothing.
 */
export function beginGeneratedKeyRotation(config: Pick<Config, 'DATA_DIR'>): void {
  const previous = previousKeyFile(config);
  if (fs.existsSync(previous)) return;
  fs.writeFileSync(previous, readKeyFile(keyFile(config)), { flag: 'wx', mode: 0o600 });
  const next = `${keyFile(config)}.next`;
  fs.writeFileSync(next, crypto.randomBytes(32).toString('base64url'), { mode: 0o600 });
  fs.renameSync(next, keyFile(config));
}

/** The generated key's rotation, last step: once nothing is left under it, the previous key goes. */
export function endGeneratedKeyRotation(config: Pick<Config, 'DATA_DIR'>): void {
  fs.rmSync(previousKeyFile(config), { force: true });
}

const derive = (secret: string, purpose: string) => Buffer.from(crypto.hkdfSync('sha256', secret, 'switchyard', purpose, 32));

function open(encKey: Buffer, sealed: string): string {
  const [v, iv, tag, body] = sealed.split('.');
  if (v !== 'v1' || !iv || !tag || body === undefined) throw new Error('unrecognised sealed value');
  const decipher = crypto.createDecipheriv('aes-256-gcm', encKey, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

const opens = (encKey: Buffer, sealed: string) => {
  try {
    open(encKey, sealed);
    return true;
  } catch {
    return false;
  }
};

/** Secrets under `secretKey`; with `previousKey`, what that key sealed or signed is still accepted (never written). */
export function createSecrets(secretKey: string, previousKey?: string): Secrets {
  const keys = [secretKey, ...(previousKey && previousKey !== secretKey ? [previousKey] : [])].map((k) => ({
    enc: derive(k, 'credential-encryption'),
    cookie: derive(k, 'cookie-signing').toString('base64url'),
    job: derive(k, 'job-signing'),
  }));
  const current = keys[0]!;
  const sign = (jobKey: Buffer, text: string) => crypto.createHmac('sha256', jobKey).update(text).digest('base64url');
  return {
    cookieKeys: keys.map((k) => k.cookie),
    rotating: keys.length > 1,
    encrypt(plain) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', current.enc, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      // v1.<iv>.<tag>.<ciphertext>, all base64url: self-describing so the scheme can change later.
      return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
    },
    decrypt(sealed) {
      // GCM's tag fails under any other key: the previous key is tried only then.
      let first: unknown;
      for (const k of keys) {
        try {
          return open(k.enc, sealed);
        } catch (err) {
          first ??= err;
        }
      }
      throw first;
    },
    isCurrent: (sealed) => opens(current.enc, sealed),
    signJob: (text) => sign(current.job, text),
    verifyJob: (text, sig) => keys.some((k) => safeEqual(sig, sign(k.job, text))),
  };
}

export const sha256Hex = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Uniformly random letters and digits (rejection sampling: no modulo bias). */
export function randomAlnum(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of crypto.randomBytes(length * 2)) {
      if (b < 248) out += ALNUM[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const randomHex = (bytes: number) => crypto.randomBytes(bytes).toString('hex');

/** Constant-time string comparison. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}

/** The shortest piece of a secret that scrubSecret cuts out of a text. */
export const SECRET_PIECE = 8;

/**
 * `text` with `secret` cut out (each occurrence becomes ***), and with any run of SECRET_PIECE or more characters
 * copied from it: a text cut short in the middle of the secret, or quoting most of it, gives none of it away. The
 * secret is also found written another way: reversed, base64 or base64url (at each of the three byte alignments it
 * may have inside a longer encoded text), percent-encoded or as hex, in any letter case, and with spaces or any other
 * characters between its letters and digits. (A secret shorter than SECRET_PIECE is cut out only whole.)
 */
export function scrubSecret(text: string, secret: string): string {
  if (!secret) return text;
  const out = text.replaceAll(secret, '***');
  if (secret.length < SECRET_PIECE || out.length < SECRET_PIECE) return out;
  // Letters and digits only, lower-cased, on both sides: what separators, case or an encoding's punctuation change
  // does not matter. `at` maps each kept character back to its place in `out`.
  const at: number[] = [];
  let kept = '';
  for (let i = 0; i < out.length; i++) {
    const c = out.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) {
      at.push(i);
      kept += out[i]!.toLowerCase();
    }
  }
  const pieces = new Set<string>();
  for (const form of secretForms(secret)) {
    const f = form.replace(/[^A-Za-z0-9]/g, '').toLowerCase();
    for (let i = 0; i + SECRET_PIECE <= f.length; i++) pieces.add(f.slice(i, i + SECRET_PIECE));
  }
  const hidden = new Uint8Array(out.length);
  let any = false;
  for (let i = 0; i + SECRET_PIECE <= kept.length; i++) {
    if (pieces.has(kept.slice(i, i + SECRET_PIECE))) {
      hidden.fill(1, at[i]!, at[i + SECRET_PIECE - 1]! + 1);
      any = true;
    }
  }
  if (!any) return out;
  let scrubbed = '';
  for (let i = 0; i < out.length; i++) {
    if (!hidden[i]) scrubbed += out[i];
    else if (i === 0 || !hidden[i - 1]) scrubbed += '***';
  }
  return scrubbed;
}

/** The ways a text may carry `secret`: as it is, reversed, its bytes in base64 (three alignments; base64url differs only in punctuation) and in hex (what percent-encoding shows). */
function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [secret, [...secret].reverse().join(''), bytes.toString('hex')];
  for (let lead = 0; lead < 3; lead++) {
    // The secret after `lead` other bytes: only the characters that encode its bits alone are its own.
    const b64 = Buffer.concat([Buffer.alloc(lead), bytes]).toString('base64');
    forms.push(b64.slice(Math.ceil((lead * 8) / 6), Math.floor(((lead + bytes.length) * 8) / 6)));
  }
  return forms;
}
