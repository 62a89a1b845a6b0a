// Users: the caller's own account (their view, their changes, the system access token, the end of a session) and
// admins' work on other users under the role rule (an admin acts on users below their role; root on everyone).
// Routes map HTTP to these; they take the caller and parsed input, and return what the API shows or throw AppErrors.
import { disableChannelsOfMaker } from '../channels/store.js';
import { DEFAULT_GROUP } from '../groups.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import { userChangedEntries, userCreatedEntries, userDeletedEntry } from '../logs/entries.js';
import { LOG_TYPE } from '../logs/schema.js';
import { insertLogs } from '../logs/store.js';
import type { Platform } from '../platform.js';
import { randomAlnum, sha256Hex } from '../secrets.js';
import type { AuthUser, Principal } from './auth.js';
import { hashPassword, verifyPassword } from './passwords.js';
import {
  type CreateUserInput,
  ownQuotaMinRole,
  type PageQuery,
  pageOf,
  ROLE,
  type UpdateSelfInput,
  type UpdateUserInput,
  type UserRow,
  type UserView,
  USER_STATUS,
} from './schema.js';
import * as store from './store.js';

type UserPatch = Parameters<typeof store.updateUser>[2];

/** Ends the session of a session id (the cookie's value), if it names one. */
export async function logout(p: Platform, sid: string | undefined): Promise<void> {
  if (sid) await p.auth.logout(sha256Hex(sid));
}

export async function getSelf(p: Platform, me: AuthUser): Promise<UserView> {
  const row = await store.getUser(p.db, me.id);
  if (!row) throw notFound('User not found');
  return store.publicUser(row);
}

/**
 * A new password needs the current one, and ends every other way in: other sessions, and the access token. A quota
 * is root's to set for itself (nobody is above root to set it), and admins' where ADMIN_SELF_QUOTA says so; the
 * change is a top-up row on the user's logs, as an admin's change of another user's quota is.
 */
export async function updateSelf(p: Platform, principal: Principal, body: UpdateSelfInput): Promise<UserView> {
  const row = (await store.getUser(p.db, principal.user.id))!;
  const patch: UserPatch = {};
  if (body.quota !== undefined) {
    if (row.role < ownQuotaMinRole(p.config)) {
      throw forbidden('quota: only root sets its own quota (admins too where ADMIN_SELF_QUOTA is true); ask a user above you', {
        code: 'self_quota',
        param: 'quota',
      });
    }
    patch.quota = body.quota;
  }
  if (body.display_name !== undefined) patch.display_name = body.display_name;
  if (body.email !== undefined) patch.email = body.email || null;
  if (body.password !== undefined) {
    if (!body.original_password) {
      throw badRequest('original_password: the current password is required to set a new one', { param: 'original_password' });
    }
    if (!(await verifyPassword(row.password_hash, body.original_password))) {
      throw badRequest('original_password: that is not your current password', { param: 'original_password' });
    }
    patch.password_hash = await hashPassword(body.password);
  }
  const updated = await p.db.transaction(async (trx) => {
    const changed = await store.updateUser(trx, row.id, patch);
    if (patch.password_hash) {
      await store.deleteUserSessions(trx, row.id, principal.sessionHash);
      await store.setAccessTokenHash(trx, row.id, null);
    }
    if (changed && patch.quota !== undefined && changed.quota !== row.quota) {
      await insertLogs(
        trx,
        userChangedEntries(principal.user, row, changed, false).filter((e) => e.type === LOG_TYPE.topup),
      );
    }
    return changed;
  });
  if (patch.password_hash || patch.quota !== undefined) p.auth.forgetUser(row.id);
  return store.publicUser(updated!);
}

/** Makes (and rotates) the caller's system access token for scripts: the old one stops working. */
export async function rotateAccessToken(p: Platform, me: AuthUser): Promise<string> {
  const token = randomAlnum(32);
  await store.setAccessTokenHash(p.db, me.id, sha256Hex(token));
  p.auth.forgetUser(me.id);
  return token;
}

/** An admin sees the users below their role (root sees everyone), as for a single user. */
export async function listUsers(p: Platform, me: AuthUser, q: PageQuery): Promise<{ rows: UserView[]; total: number }> {
  const belowRole = me.role >= ROLE.root ? undefined : me.role;
  const { rows, total } = await store.listUsers(p.db, { ...pageOf(q), belowRole });
  return { rows: rows.map(store.publicUser), total };
}

export async function createUser(p: Platform, me: AuthUser, body: CreateUserInput): Promise<UserView> {
  if (body.role >= me.role) throw forbidden('Cannot create a user with a role equal to or above your own', { code: 'role_too_high' });
  const passwordHash = await hashPassword(body.password);
  const row = await p.db.transaction(async (trx) => {
    const created = await store.createUser(trx, body, passwordHash);
    await insertLogs(trx, userCreatedEntries(me, created));
    return created;
  });
  return store.publicUser(row);
}

export const getUser = async (p: Platform, me: AuthUser, userId: number): Promise<UserView> => store.publicUser(await visibleUser(p, me, userId));

/** `userId`: the path's, or the body's id (one-api's PUT /api/user/). */
export async function updateUser(p: Platform, me: AuthUser, userId: number | undefined, body: UpdateUserInput): Promise<UserView> {
  if (!userId) throw badRequest('id: is required', { param: 'id' });
  if (userId === me.id) throw forbidden('Use PUT /api/user/self to change your own account', { code: 'self_update' });
  const target = await visibleUser(p, me, userId);
  if (target.role >= me.role) throw forbidden('Cannot change a user whose role is equal to or above your own', { code: 'role_too_high' });
  if (body.role !== undefined && body.role >= me.role) throw forbidden('Cannot give a role equal to or above your own', { code: 'role_too_high' });
  const patch: UserPatch = {};
  if (body.username !== undefined) patch.username = body.username;
  if (body.display_name !== undefined) patch.display_name = body.display_name;
  if (body.email !== undefined) patch.email = body.email || null;
  if (body.role !== undefined) patch.role = body.role;
  if (body.quota !== undefined) patch.quota = body.quota;
  if (body.status !== undefined) patch.status = body.status;
  if (body.group !== undefined) patch.group = body.group;
  if (body.password) patch.password_hash = await hashPassword(body.password);
  const updated = await p.db.transaction(async (trx) => {
    const row = await store.updateUser(trx, userId, patch);
    // A new password or a disabled account ends the user's sessions.
    if (patch.password_hash || patch.status === USER_STATUS.disabled) await store.deleteUserSessions(trx, userId);
    // A quota change as a top-up row, the rest as a manage row, on the user's rows (never the password).
    if (row) await insertLogs(trx, userChangedEntries(me, target, row, !!patch.password_hash));
    return row;
  });
  p.auth.forgetUser(userId);
  return store.publicUser(updated!);
}

/** Deleting a user disables the channels they made (a maker-less channel would serve everyone). */
export async function deleteUser(p: Platform, me: AuthUser, userId: number): Promise<void> {
  const target = await visibleUser(p, me, userId);
  if (target.id === me.id) throw forbidden('You cannot delete yourself', { code: 'self_delete' });
  if (target.role >= me.role) throw forbidden('Cannot delete a user whose role is equal to or above your own', { code: 'role_too_high' });
  await p.db.transaction(async (trx) => {
    await disableChannelsOfMaker(trx, target.id);
    await store.deleteUser(trx, target.id);
    await insertLogs(trx, [userDeletedEntry(me, target)]);
  });
  p.auth.forgetUser(target.id);
}

/** The user groups an admin may choose from: the default one and those GROUP_RATIO names (another name is taken too, at ratio 1). */
export const listGroups = (p: Platform): string[] => [...new Set([DEFAULT_GROUP, ...Object.keys(p.config.GROUP_RATIO)])].sort();

/** Admins see users below their role (and themselves); root sees everyone. */
async function visibleUser(p: Platform, me: AuthUser, userId: number): Promise<UserRow> {
  const target = await store.getUser(p.db, userId);
  if (!target) throw notFound('User not found');
  const mayView = me.role >= ROLE.root || target.id === me.id || target.role < me.role;
  if (!mayView) throw forbidden('Cannot view a user whose role is equal to or above your own', { code: 'role_too_high' });
  return target;
}
