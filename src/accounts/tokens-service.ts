// API tokens (sk- keys), each seen and changed by its owner only. Routes map HTTP to these; they take the caller and
// parsed input, and return what the API shows (keys masked, but for the answer that creates one) or throw AppErrors.
import { badRequest, notFound } from '../errors.js';
import type { Platform } from '../platform.js';
import type { AuthUser } from './auth.js';
import { compact, type CreateTokenInput, type PageQuery, pageOf, type TokenRow, type TokenView, type UpdateTokenInput } from './schema.js';
import * as store from './store.js';
import { generateApiKey, isExhausted, isExpired, nowSeconds, publicToken } from './tokens.js';

export async function listTokens(p: Platform, me: AuthUser, q: PageQuery): Promise<{ rows: TokenView[]; total: number }> {
  const { rows, total } = await store.listTokens(p.db, me.id, pageOf(q));
  return { rows: rows.map((t) => publicToken(t)), total };
}

/** The whole key is in this answer only: only its hash is kept. */
export async function createToken(p: Platform, me: AuthUser, body: CreateTokenInput): Promise<TokenView> {
  refusePast(body.expired_time);
  const { key, hash, hint } = generateApiKey();
  const row = await store.createToken(p.db, me.id, body, hash, hint);
  return publicToken(row, key);
}

export const getToken = async (p: Platform, me: AuthUser, tokenId: number): Promise<TokenView> => publicToken(await ownToken(p, me, tokenId));

/** `statusOnly`: only `status` changes (1 or 2); otherwise every field sent, status only when 1 or 2. */
export async function updateToken(p: Platform, me: AuthUser, body: UpdateTokenInput, statusOnly: boolean): Promise<TokenView> {
  const current = await ownToken(p, me, body.id);
  const settable = body.status === 1 || body.status === 2 ? body.status : undefined;
  if (statusOnly && settable === undefined) throw badRequest('status: must be 1 (enabled) or 2 (disabled)', { param: 'status' });
  const { id: _id, ...fields } = body;
  const patch: Partial<Omit<UpdateTokenInput, 'id'>> = compact(statusOnly ? { status: settable } : { ...fields, status: settable });
  if (patch.expired_time !== undefined) refusePast(patch.expired_time);
  const next = { ...current, ...patch } as TokenRow;
  // Enabling is refused while the token, as it would be after this change, is expired or exhausted: whatever its
  // stored status (3 and 4 are computed, so one never disabled is stored as 1).
  if (patch.status === 1) {
    if (isExpired(next)) throw badRequest('This token has expired; extend expired_time before enabling it', { code: 'token_expired' });
    if (isExhausted(next))
      throw badRequest('This token has no quota left; raise remain_quota or set unlimited_quota before enabling it', { code: 'token_exhausted' });
  }
  // Nothing to change (e.g. only fields a client echoes back: key, used_quota…): the token as it is.
  const row = Object.keys(patch).length ? await store.updateToken(p.db, me.id, body.id, patch) : current;
  p.auth.forgetUser(me.id);
  return publicToken(row!);
}

export async function deleteToken(p: Platform, me: AuthUser, tokenId: number): Promise<void> {
  const row = await ownToken(p, me, tokenId);
  await store.deleteToken(p.db, me.id, row.id);
  p.auth.forgetUser(me.id);
}

async function ownToken(p: Platform, me: AuthUser, tokenId: number): Promise<TokenRow> {
  const row = await store.getToken(p.db, me.id, tokenId);
  if (!row) throw notFound('Token not found');
  return row;
}

function refusePast(expiredTime: number): void {
  if (expiredTime !== -1 && expiredTime <= nowSeconds()) {
    throw badRequest('expired_time: is in the past (use -1 for a token that never expires)', { param: 'expired_time' });
  }
}
