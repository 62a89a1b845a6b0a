// Password hashing with argon2id (OWASP parameters), and a dummy verify so unknown users take as long.
import { hash, verify } from '@node-rs/argon2';

const ARGON2ID = 2; // Algorithm.Argon2id (a const enum, which isolated-module builds cannot inline)
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string) => hash(password, OPTIONS);

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | undefined;
/** Spends the time of one verification, for usernames that do not exist. */
export async function burnVerification(password: string): Promise<void> {
  dummy ??= hashPassword('switchyard-dummy-password');
  await verifyPassword(await dummy, password);
}
