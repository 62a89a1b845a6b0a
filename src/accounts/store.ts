// Knex queries of accounts: users, sessions, API tokens, redemption codes (quota moves in ledger.ts).
import type { Knex } from 'knex';
import { escapeLike, type Db } from '../db.js';
import { conflict } from '../errors.js';
import type { CreateTokenInput, CreateUserInput, RedemptionRow, TokenRow, UpdateTokenInput, UserRow, UserView } from './schema.js';
import { REDEMPTION_STATUS, ROLE, usernameKey } from './schema.js';
import { redemptionEntry } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === '23505';

/** A user as the API shows it: never the password hash or access token. */
export function publicUser(u: UserRow): UserView {
  return {
    id: u.id,
    username: u.username,
    display_name: u.display_name,
    role: u.role,
    status: u.status,
    email: u.email ?? '',
    quota: u.quota,
    used_quota: u.used_quota,
    request_count: u.request_count,
    group: u.group,
    created_at: u.created_at instanceof Date ? u.created_at.toISOString() : u.created_at,
  };
}

// ---------------------------------------------------------------------------------------------
// users

export async function createUser(db: Db, input: CreateUserInput, passwordHash: string): Promise<UserRow> {
  try {
    const [row] = await db<UserRow>('users')
      .insert({
        username: input.username,
        password_hash: passwordHash,
        display_name: input.display_name || input.username,
        email: input.email || null,
        role: input.role,
        quota: input.quota,
        group: input.group,
      })
      .returning('*');
    return row!;
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`Username "${input.username}" is already taken`, { code: 'username_taken' });
    throw err;
  }
}

export const getUser = (db: Db, id: number) => db<UserRow>('users').where({ id }).first();

/** By username, case-insensitively under usernameKey(): `lower(username)` is what the unique index holds. */
export const findUserByUsername = (db: Db, username: string) =>
  db<UserRow>('users')
    .whereRaw('lower(username) = ?', [usernameKey(username)])
    .first();

/** The ids of users below a role, as a subquery (other areas apply the role rule with it). */
/** The roles of these users (those that exist), by id. */
export async function rolesOfUsers(db: Db, ids: number[]): Promise<Map<number, number>> {
  const rows = await db<UserRow>('users').whereIn('id', ids).select('id', 'role');
  return new Map(rows.map((r) => [r.id, r.role]));
}

export const userIdsBelowRole = (db: Db, role: number) => db('users').select('id').where('role', '<', role);

/**
 * The role rule on a column naming a row's user: the viewer's own rows, and those of users below their role. A
 * where-callback for any query of any area (`q.where(ownOrBelow(db, 'owner_id', viewer))`).
 */
export const ownOrBelow = (db: Db, column: string, viewer: Viewer) => (w: Knex.QueryBuilder) =>
  w.where(column, viewer.id).orWhereIn(column, userIdsBelowRole(db, viewer.role));

export async function listUsers(db: Db, opts: { offset: number; limit: number; keyword?: string; belowRole?: number }) {
  const base = db<UserRow>('users');
  if (opts.belowRole !== undefined) base.where('role', '<', opts.belowRole);
  if (opts.keyword) {
    const like = `%${escapeLike(opts.keyword)}%`;
    base.where((q) => q.whereILike('username', like).orWhereILike('display_name', like).orWhereILike('email', like));
  }
  const [rows, [{ count } = { count: 0 }]] = await Promise.all([
    base.clone().orderBy('id', 'asc').offset(opts.offset).limit(opts.limit),
    base.clone().count<{ count: number | string }[]>({ count: '*' }),
  ]);
  return { rows: rows as UserRow[], total: Number(count) };
}

export async function updateUser(
  db: Db,
  id: number,
  patch: Partial<Pick<UserRow, 'username' | 'password_hash' | 'display_name' | 'email' | 'role' | 'quota' | 'status' | 'group'>>,
): Promise<UserRow | undefined> {
  try {
    const [row] = await db<UserRow>('users')
      .where({ id })
      .update({ ...patch, updated_at: db.fn.now() } as unknown as Partial<UserRow>)
      .returning('*');
    return row;
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`Username "${patch.username}" is already taken`, { code: 'username_taken' });
    throw err;
  }
}

export const deleteUser = (db: Db, id: number) => db('users').where({ id }).delete();

/** Sets (or, with null, revokes) the user's system access token. */
export async function setAccessTokenHash(db: Db, userId: number, hash: string | null): Promise<void> {
  await db('users').where({ id: userId }).update({ access_token_hash: hash, updated_at: db.fn.now() });
}

export const findUserByAccessTokenHash = (db: Db, hash: string) => db<UserRow>('users').where({ access_token_hash: hash }).first();

export async function rootExists(db: Db): Promise<boolean> {
  return !!(await db('users').where({ role: ROLE.root }).first('id'));
}

/** Creates `root` (role 100) unless a root user exists. Returns true when this call created it. */
export async function ensureRootUser(db: Db, passwordHash: string): Promise<boolean> {
  if (await rootExists(db)) return false;
  const inserted = await db.raw(
    `insert into users (username, password_hash, display_name, role) values ('root', ?, 'Root User', ?)
     on conflict ((lower(username))) do nothing returning id`,
    [passwordHash, ROLE.root],
  );
  return (inserted.rows ?? inserted).length > 0;
}

// ---------------------------------------------------------------------------------------------
// sessions

export async function createSession(db: Db, s: { idHash: string; userId: number; expiresAt: Date; ip?: string; userAgent?: string }) {
  await db('sessions').insert({
    id_hash: s.idHash,
    user_id: s.userId,
    expires_at: s.expiresAt,
    ip: s.ip ?? null,
    user_agent: s.userAgent?.slice(0, 500) ?? null,
  });
  // Housekeeping rides on logins: expired sessions go now and then, without a scheduler.
  if (Math.random() < 0.05) await db('sessions').where('expires_at', '<', db.fn.now()).delete();
}

export const findSessionUser = (db: Db, idHash: string) =>
  db<UserRow>('users')
    .join('sessions', 'sessions.user_id', 'users.id')
    .where('sessions.id_hash', idHash)
    .andWhere('sessions.expires_at', '>', db.fn.now())
    .first('users.*');

export const deleteSession = (db: Db, idHash: string) => db('sessions').where({ id_hash: idHash }).delete();

/** Ends every session of a user (but `keep`, the one making the change). */
export const deleteUserSessions = (db: Db, userId: number, keep?: string) => {
  const q = db('sessions').where({ user_id: userId });
  return keep ? q.whereNot({ id_hash: keep }).delete() : q.delete();
};

// ---------------------------------------------------------------------------------------------
// tokens

export async function createToken(db: Db, userId: number, input: CreateTokenInput, keyHash: string, keyHint: string): Promise<TokenRow> {
  const now = nowSeconds();
  const [row] = await db<TokenRow>('tokens')
    .insert({
      user_id: userId,
      key_hash: keyHash,
      key_hint: keyHint,
      name: input.name,
      status: 1,
      created_time: now,
      accessed_time: now,
      expired_time: input.expired_time,
      remain_quota: input.remain_quota,
      unlimited_quota: input.unlimited_quota,
      models: input.models,
      subnet: input.subnet,
    })
    .returning('*');
  return row!;
}

export async function listTokens(db: Db, userId: number, opts: { offset: number; limit: number; keyword?: string }) {
  const base = db<TokenRow>('tokens').where({ user_id: userId });
  if (opts.keyword) base.whereILike('name', `${escapeLike(opts.keyword)}%`);
  const [rows, [{ count } = { count: 0 }]] = await Promise.all([
    base.clone().orderBy('id', 'desc').offset(opts.offset).limit(opts.limit),
    base.clone().count<{ count: number | string }[]>({ count: '*' }),
  ]);
  return { rows: rows as TokenRow[], total: Number(count) };
}

export const getToken = (db: Db, userId: number, id: number) => db<TokenRow>('tokens').where({ id, user_id: userId }).first();

export async function updateToken(db: Db, userId: number, id: number, patch: Partial<Omit<UpdateTokenInput, 'id'>>): Promise<TokenRow | undefined> {
  const [row] = await db<TokenRow>('tokens')
    .where({ id, user_id: userId })
    .update(patch as Partial<TokenRow>)
    .returning('*');
  return row;
}

export const deleteToken = (db: Db, userId: number, id: number) => db('tokens').where({ id, user_id: userId }).delete();

export interface TokenWithUser extends TokenRow {
  user_status: number;
  user_role: number;
  user_group: string;
  username: string;
  user_quota: number;
}

export const findTokenByKeyHash = (db: Db, hash: string) =>
  db<TokenWithUser>('tokens')
    .join('users', 'users.id', 'tokens.user_id')
    .where('tokens.key_hash', hash)
    .first(
      'tokens.*',
      'users.status as user_status',
      'users.role as user_role',
      'users.group as user_group',
      'users.username',
      'users.quota as user_quota',
    ) as Promise<TokenWithUser | undefined>;

export async function touchToken(db: Db, id: number): Promise<void> {
  await db('tokens').where({ id }).update({ accessed_time: nowSeconds() });
}

// ---------------------------------------------------------------------------------------------
// redemption codes

export async function createRedemptions(db: Db, creatorId: number, name: string, quota: number, keys: string[]): Promise<RedemptionRow[]> {
  const now = nowSeconds();
  return db<RedemptionRow>('redemptions')
    .insert(keys.map((key) => ({ user_id: creatorId, key, name, quota, status: REDEMPTION_STATUS.unused, created_time: now })))
    .returning('*');
}

/** Who is asking, for the role rule (nobody acts on, lists or reads the data of a user of equal or higher role). */
export interface Viewer {
  id: number;
  role: number;
}

/**
 * Codes under the role rule: an admin's own and those made by users below them. Root sees all, ownerless ones too
 * (their maker was deleted).
 */
function codesVisibleTo(db: Db, viewer: Viewer) {
  const q = db<RedemptionRow>('redemptions');
  return viewer.role >= ROLE.root ? q : q.where(ownOrBelow(db, 'user_id', viewer));
}

export async function listRedemptions(db: Db, viewer: Viewer, opts: { offset: number; limit: number; keyword?: string }) {
  const base = codesVisibleTo(db, viewer);
  if (opts.keyword) {
    const kw = opts.keyword;
    base.where((q) => {
      q.whereILike('name', `${escapeLike(kw)}%`);
      if (/^\d+$/.test(kw) && Number(kw) <= 2_147_483_647) q.orWhere('id', Number(kw));
    });
  }
  const [rows, [{ count } = { count: 0 }]] = await Promise.all([
    base.clone().orderBy('id', 'desc').offset(opts.offset).limit(opts.limit),
    base.clone().count<{ count: number | string }[]>({ count: '*' }),
  ]);
  return { rows: rows as RedemptionRow[], total: Number(count) };
}

export const getRedemption = (db: Db, viewer: Viewer, id: number) => codesVisibleTo(db, viewer).where({ id }).first();

export async function updateRedemption(db: Db, viewer: Viewer, id: number, patch: Partial<Pick<RedemptionRow, 'name' | 'quota' | 'status'>>) {
  const [row] = await codesVisibleTo(db, viewer).where({ id }).update(patch).returning('*');
  return row;
}

export const deleteRedemption = async (db: Db, viewer: Viewer, id: number) =>
  (await codesVisibleTo(db, viewer).where({ id }).delete().returning('id')).length > 0;

export type RedeemOutcome = { ok: true; quota: number } | { ok: false; reason: 'unknown' | 'used' | 'disabled' | 'too_much' };

/** The credit would take the balance past 2^53 − 1: the transaction (claim included) is rolled back. */
class RedeemRefused extends Error {}

/**
 * Credits a code to a user exactly once. The claim is one conditional UPDATE (status 1 → 3): under
 * concurrency Postgres re-checks the condition after the row lock, so only one claim matches.
 */
export async function redeemCode(db: Db, key: string, userId: number): Promise<RedeemOutcome> {
  return redeemWithin(db, key, userId).catch((err) => {
    // The claim is rolled back with the credit: the code stays unused.
    if (err instanceof RedeemRefused) return { ok: false, reason: 'too_much' } as const;
    throw err;
  });
}

function redeemWithin(db: Db, key: string, userId: number): Promise<RedeemOutcome> {
  return db.transaction(async (trx) => {
    const claimed = await trx<RedemptionRow>('redemptions')
      .where({ key, status: REDEMPTION_STATUS.unused })
      .update({ status: REDEMPTION_STATUS.used, redeemed_time: nowSeconds(), used_user_id: userId })
      .returning(['id', 'name', 'quota']);
    if (claimed.length === 0) {
      const row = await trx<RedemptionRow>('redemptions').where({ key }).first('status');
      if (!row) return { ok: false, reason: 'unknown' };
      return { ok: false, reason: row.status === REDEMPTION_STATUS.disabled ? 'disabled' : 'used' };
    }
    const quota = Number(claimed[0]!.quota);
    // A balance stays a number JavaScript (and the API's JSON readers) hold exactly: past 2^53 − 1 the code is not spent.
    const credited = await trx('users')
      .where({ id: userId })
      .andWhere('quota', '<=', Number.MAX_SAFE_INTEGER - quota)
      .increment('quota', quota)
      .update({ updated_at: trx.fn.now() });
    if (!credited) throw new RedeemRefused();
    // The top-up row commits with the credit: the code's id and name, never the code.
    await insertLogs(trx, [redemptionEntry(userId, { id: claimed[0]!.id, name: claimed[0]!.name, quota })]);
    return { ok: true, quota };
  });
}
