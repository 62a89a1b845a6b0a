// Channel queries: create, change, list, auto-disable, usage. Keys are stored encrypted.
import type { z } from 'zod';
import { escapeLike, type Db } from '../db.js';
import { ROLE } from '../accounts/schema.js';
import { ownOrBelow, type Viewer } from '../accounts/store.js';
import type { Secrets } from '../secrets.js';
import { CHANNEL_STATUS, type ChannelRow, type createChannelBody, type updateChannelBody } from './schema.js';
import { systemEntry } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';

const keyHint = (key: string) => (key.length <= 8 ? '*'.repeat(key.length) : `${key.slice(0, 3)}${'*'.repeat(8)}${key.slice(-4)}`);
const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The role rule on channels: root sees and acts on every one; an admin on their own and those made by users below their
 * role (a demoted admin's), not root's or another admin's. Routing (directory.ts) uses every channel whoever made it.
 */
function channelsVisibleTo(db: Db, viewer: Viewer) {
  const q = db<ChannelRow>('channels');
  return viewer.role >= ROLE.root ? q : q.where(ownOrBelow(db, 'created_by', viewer));
}

/**
 * A user is being deleted: their channels are disabled (in the same transaction). Once the maker is gone a channel is
 * root's and serves everyone (and fills the shared cache), so left enabled it would carry whatever an admin above the
 * maker set on it to root; root reads why and decides.
 */
export async function disableChannelsOfMaker(db: Db, userId: number): Promise<number> {
  const rows = await db('channels')
    .where({ created_by: userId })
    .update({ status: CHANNEL_STATUS.disabled, status_reason: `its maker (user ${userId}) was deleted`, updated_time: nowSeconds() })
    .returning('id');
  return (rows as unknown[]).length;
}

/** `creatorId` null: root's. */
export async function createChannel(
  db: Db,
  secrets: Secrets,
  input: z.output<typeof createChannelBody> & { base_url: string },
  creatorId: number | null = null,
): Promise<ChannelRow> {
  const { key, config, ...rest } = input;
  const now = nowSeconds();
  const [row] = await db<ChannelRow>('channels')
    .insert({
      ...rest,
      config: JSON.stringify(config),
      key_enc: secrets.encrypt(key),
      key_hint: keyHint(key),
      created_time: now,
      updated_time: now,
      created_by: creatorId,
    })
    .returning('*');
  return row!;
}

export async function updateChannel(db: Db, secrets: Secrets, viewer: Viewer, input: z.output<typeof updateChannelBody>): Promise<ChannelRow | undefined> {
  const { id, key, ...rest } = input;
  const patch: Record<string, unknown> = { updated_time: nowSeconds() };
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) patch[k] = k === 'config' ? JSON.stringify(v) : v;
  if (key) {
    patch.key_enc = secrets.encrypt(key);
    patch.key_hint = keyHint(key);
  }
  // A new key or an explicit enable clears an automatic disable and its reason.
  if (key || rest.status === CHANNEL_STATUS.enabled) {
    patch.status_reason = null;
    if (!rest.status) patch.status = CHANNEL_STATUS.enabled;
  }
  const [row] = await channelsVisibleTo(db, viewer).where({ id }).update(patch).returning('*');
  return row;
}

export const getChannel = (db: Db, viewer: Viewer, id: number) => channelsVisibleTo(db, viewer).where({ id }).first();

export async function deleteChannel(db: Db, viewer: Viewer, id: number): Promise<boolean> {
  return (await channelsVisibleTo(db, viewer).where({ id }).delete().returning('id')).length > 0;
}

export async function listChannels(db: Db, viewer: Viewer, opts: { offset: number; limit: number; keyword?: string }) {
  const base = channelsVisibleTo(db, viewer);
  if (opts.keyword) {
    const like = `%${escapeLike(opts.keyword)}%`;
    base.where((q) => q.whereILike('name', like).orWhereILike('models', like));
  }
  const [rows, [{ count } = { count: 0 }]] = await Promise.all([
    base.clone().orderBy('id', 'asc').offset(opts.offset).limit(opts.limit),
    base.clone().count<{ count: number | string }[]>({ count: '*' }),
  ]);
  return { rows: rows as ChannelRow[], total: Number(count) };
}

/** A direct test's outcome on the channel: when it ran, and the upstream's time. */
export async function recordTest(db: Db, id: number, responseTimeMs: number): Promise<void> {
  await db('channels')
    .where({ id })
    .update({ test_time: nowSeconds(), response_time: Math.round(responseTimeMs) });
}

/** Disables a channel the upstream refused; the one call that does so also writes the system row (type 4) saying why. */
export async function autoDisableChannel(db: Db, id: number, reason: string): Promise<void> {
  await db.transaction(async (trx) => {
    const [row] = await trx<ChannelRow>('channels')
      .where({ id, status: CHANNEL_STATUS.enabled })
      .update({ status: CHANNEL_STATUS.autoDisabled, status_reason: reason.slice(0, 1000), updated_time: nowSeconds() })
      .returning(['id', 'name']);
    if (row) await insertLogs(trx, [systemEntry(`Channel #${row.id} "${row.name}" disabled automatically: ${reason}`, { channelId: row.id })]);
  });
}

export async function addChannelUsage(db: Db, id: number, quota: number): Promise<void> {
  if (quota > 0) await db('channels').where({ id }).increment('used_quota', quota);
}
