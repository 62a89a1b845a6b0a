// Redemption codes: admins make and manage them under the role rule (their own and those of users below them; root
// all), and any user credits one to their quota. Routes map HTTP to these; they take the caller and parsed input, and
// return what the API shows or throw AppErrors. The admin log names codes by id, never by key.
import { badRequest, notFound } from '../errors.js';
import { adminActionEntry, describeChanges } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';
import type { Platform } from '../platform.js';
import { randomHex } from '../secrets.js';
import type { AuthUser } from './auth.js';
import { compact, type CreateRedemptionInput, type PageQuery, pageOf, REDEMPTION_STATUS, type RedemptionRow, type UpdateRedemptionInput } from './schema.js';
import * as store from './store.js';

/** Credits a code to the caller: the quota credited. */
export async function redeem(p: Platform, me: AuthUser, key: string): Promise<number> {
  const outcome = await store.redeemCode(p.db, key, me.id);
  if (outcome.ok) return outcome.quota;
  const message = {
    unknown: 'Invalid redemption code',
    used: 'This redemption code has already been used',
    disabled: 'This redemption code is disabled',
    too_much: `This code would take your quota past ${Number.MAX_SAFE_INTEGER}, the largest a balance can hold; it was not used`,
  }[outcome.reason];
  throw badRequest(message, { code: `redemption_${outcome.reason}` });
}

export const listRedemptions = (p: Platform, me: AuthUser, q: PageQuery): Promise<{ rows: RedemptionRow[]; total: number }> =>
  store.listRedemptions(p.db, me, pageOf(q));

/** The new codes' keys. */
export async function createRedemptions(p: Platform, me: AuthUser, body: CreateRedemptionInput): Promise<string[]> {
  const keys = Array.from({ length: body.count }, () => randomHex(16));
  const rows = await p.db.transaction(async (trx) => {
    const made = await store.createRedemptions(trx, me.id, body.name, body.quota, keys);
    const ids = made.map((r) => r.id);
    const range = ids.length === 1 ? `#${ids[0]}` : `#${Math.min(...ids)}-#${Math.max(...ids)}`;
    await insertLogs(trx, [adminActionEntry(me, `Created ${made.length} redemption code(s) ${range} "${body.name}" worth ${body.quota} quota each`)]);
    return made;
  });
  return rows.map((r) => r.key);
}

export async function getRedemption(p: Platform, me: AuthUser, codeId: number): Promise<RedemptionRow> {
  const row = await store.getRedemption(p.db, me, codeId);
  if (!row) throw notFound('Redemption code not found');
  return row;
}

/** A used code is not changed. `statusOnly`: only `status` changes. What changed goes to the admin log. */
export async function updateRedemption(p: Platform, me: AuthUser, body: UpdateRedemptionInput, statusOnly: boolean): Promise<RedemptionRow | undefined> {
  const current = await getRedemption(p, me, body.id);
  if (current.status === REDEMPTION_STATUS.used) throw badRequest('This redemption code has already been used', { code: 'redemption_used' });
  const { id: _id, ...fields } = body;
  const patch = compact(statusOnly ? { status: body.status } : fields);
  const row = Object.keys(patch).length ? await store.updateRedemption(p.db, me, body.id, patch) : current;
  const changes = row ? describeChanges(current, row, ['name', 'quota', 'status']) : [];
  if (changes.length) await insertLogs(p.db, [adminActionEntry(me, `Changed redemption code #${current.id}: ${changes.join(', ')}`)]);
  return row;
}

export async function deleteRedemption(p: Platform, me: AuthUser, codeId: number): Promise<void> {
  const deleted = await store.deleteRedemption(p.db, me, codeId);
  if (!deleted) throw notFound('Redemption code not found');
  await insertLogs(p.db, [adminActionEntry(me, `Deleted redemption code #${codeId}`)]);
}
