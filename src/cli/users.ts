// Users from the command line: a new password for anyone (root included), and a new admin; each password made here is
// random, printed once and stored only as its hash. Each change is written in the user's log rows, by "cli".
import { hashPassword } from '../accounts/passwords.js';
import { DEFAULT_GROUP } from '../groups.js';
import { ROLE, type UserRow, username as usernameRule, usernameKey } from '../accounts/schema.js';
import * as store from '../accounts/store.js';
import { userChangedEntries, userCreatedEntries } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';
import type { Platform } from '../platform.js';
import { randomAlnum } from '../secrets.js';
import { CliError } from './context.js';
import { keysOfPattern, scanKeys } from './scan.js';

/** Who the log rows name as the one making the change. */
const CLI_ACTOR = { id: 0, username: 'cli' };

const newPassword = () => randomAlnum(20);

function checkUsername(name: string | undefined): string {
  const parsed = usernameRule.safeParse(name);
  if (!parsed.success) throw new CliError(`username: ${parsed.error.issues[0]!.message}`, 2);
  return parsed.data;
}

/**
 * A new random password for the user: every session of theirs ends, and the failed-login counts against their name
 * are cleared (an operator locked out by their own guesses can sign in at once). Returns the password.
 */
export async function resetPassword(p: Platform, name: string | undefined): Promise<{ user: UserRow; password: string }> {
  const before = await store.findUserByUsername(p.db, checkUsername(name));
  if (!before) throw new CliError(`no user is named "${name}"`);
  const password = newPassword();
  const passwordHash = await hashPassword(password);
  const user = await p.db.transaction(async (trx) => {
    const after = (await store.updateUser(trx, before.id, { password_hash: passwordHash }))!;
    await store.deleteUserSessions(trx, before.id);
    await insertLogs(trx, userChangedEntries(CLI_ACTOR, before, after, true));
    return after;
  });
  const limited = [p.keys.of('login-failures', `user:${usernameKey(user.username)}`)];
  for await (const key of scanKeys(p.redis, keysOfPattern(p.keys, 'login-failures', `pair:${usernameKey(user.username)}@`))) limited.push(key);
  // One at a time: on a cluster each is in a slot of its own.
  for (const key of limited) await p.redis.del(key);
  return { user, password };
}

/** A new admin (role 10) with a random password. Returns it and the password. */
export async function createAdmin(p: Platform, name: string | undefined, displayName?: string): Promise<{ user: UserRow; password: string }> {
  const username = checkUsername(name);
  if (await store.findUserByUsername(p.db, username)) throw new CliError(`a user named "${username}" exists already (reset-password gives it a new password)`);
  const password = newPassword();
  const passwordHash = await hashPassword(password);
  const user = await p.db.transaction(async (trx) => {
    const created = await store.createUser(
      trx,
      { username, password, display_name: displayName, role: ROLE.admin, quota: 0, group: DEFAULT_GROUP },
      passwordHash,
    );
    await insertLogs(trx, userCreatedEntries(CLI_ACTOR, created));
    return created;
  });
  return { user, password };
}
