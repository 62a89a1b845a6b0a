// The rows each kind of event writes (consume, error, top-up, manage, system), and the one redaction every content passes.
import { DEFAULT_GROUP } from '../groups.js';
import { toAppError } from '../errors.js';
import { LOG_TYPE, type LogEntry } from './schema.js';

export interface Actor {
  id: number;
  username: string;
}

/**
 * Text that reaches a log row may quote an upstream or a user: anything shaped like a key or a
 * bearer credential is cut to a hint, and the whole is bounded.
 */
export function redact(text: string, max = 1_000): string {
  return text
    .replace(/\b(sk-[A-Za-z0-9_-]{0,3})[A-Za-z0-9_-]{4,}/g, '$1…')
    .replace(/\b(Bearer\s+)\S+/gi, '$1…')
    .replace(/\p{Cc}+/gu, ' ')
    .slice(0, max);
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const who = (a: Actor) => `${a.username} (#${a.id})`;

export interface CallInfo {
  user: Actor;
  token: { id: number; name: string } | null;
  model: string;
  requestId?: string;
  /** performance.now() when the call began. */
  startedAt: number;
}

/** A call that reached a model and was answered: the consume row (type 2), written with its charge. */
export function consumeEntry(call: CallInfo, r: { quota: number; promptTokens: number; price: number; channelId?: number; cacheHit: boolean }): LogEntry {
  const price = r.price > 0 ? `${r.price} quota per 1K tokens` : 'free';
  return {
    type: LOG_TYPE.consume,
    userId: call.user.id,
    username: call.user.username,
    tokenId: call.token?.id ?? null,
    tokenName: call.token?.name ?? '',
    modelName: call.model,
    channelId: r.channelId ?? null,
    quota: r.quota,
    promptTokens: r.promptTokens,
    elapsedMs: Math.max(0, Math.round(performance.now() - call.startedAt)),
    cacheHit: r.cacheHit,
    requestId: call.requestId ?? null,
    content: `${call.model}: ${r.promptTokens} tokens, ${price}${r.cacheHit ? ', answered from the cache' : ''}`,
  };
}

/** A call that reached a model and failed: the error row (type 5) with the status answered and the reason, nothing charged. */
export function errorEntry(call: CallInfo, raw: unknown): LogEntry {
  const err = toAppError(raw);
  return {
    type: LOG_TYPE.error,
    userId: call.user.id,
    username: call.user.username,
    tokenId: call.token?.id ?? null,
    tokenName: call.token?.name ?? '',
    modelName: call.model,
    elapsedMs: Math.max(0, Math.round(performance.now() - call.startedAt)),
    statusCode: err.status,
    requestId: call.requestId ?? null,
    content: redact(`${call.model} failed with ${err.status}${err.code ? ` (${err.code})` : ''}: ${err.message}`),
  };
}

/** A redemption code credited (type 1): the code's id and name, never the code. */
export function redemptionEntry(userId: number, code: { id: number; name: string; quota: number }): LogEntry {
  return { type: LOG_TYPE.topup, userId, quota: code.quota, content: redact(`Redeemed code #${code.id} "${code.name}": +${code.quota} quota`) };
}

type UserState = { id: number; username: string; display_name: string; email: string | null; role: number; status: number; quota: number; group: string };

/** A new user made by an admin: a manage row (type 3) on the new user, and a top-up row for the quota they start with. */
export function userCreatedEntries(actor: Actor, user: UserState): LogEntry[] {
  const out: LogEntry[] = [
    {
      type: LOG_TYPE.manage,
      userId: user.id,
      username: user.username,
      content: `User ${who(user)} created by ${who(actor)} with role ${user.role}${user.group === DEFAULT_GROUP ? '' : ` in group ${user.group}`}`,
    },
  ];
  if (user.quota > 0)
    out.push({
      type: LOG_TYPE.topup,
      userId: user.id,
      username: user.username,
      quota: user.quota,
      content: `Initial quota ${user.quota} set by ${who(actor)}`,
    });
  return out;
}

/**
 * An admin's change to a user, on that user's rows: a quota change is a top-up row (type 1, quota =
 * the difference), every other change one manage row (type 3) naming what changed. A password
 * change is named, never shown; an email is named changed, not shown.
 */
export function userChangedEntries(actor: Actor, before: UserState, after: UserState, passwordChanged: boolean): LogEntry[] {
  const out: LogEntry[] = [];
  if (after.quota !== before.quota)
    out.push({
      type: LOG_TYPE.topup,
      userId: after.id,
      username: after.username,
      quota: after.quota - before.quota,
      content: `Quota changed from ${before.quota} to ${after.quota} by ${who(actor)}`,
    });
  const changes: string[] = [];
  if (after.username !== before.username) changes.push(`username ${before.username} → ${after.username}`);
  if (after.display_name !== before.display_name) changes.push('display name changed');
  if ((after.email ?? '') !== (before.email ?? '')) changes.push('email changed');
  if (after.role !== before.role) changes.push(`role ${before.role} → ${after.role}`);
  if (after.status !== before.status) changes.push(`status ${before.status} → ${after.status}`);
  if (after.group !== before.group) changes.push(`group ${before.group} → ${after.group}`);
  if (passwordChanged) changes.push('password set');
  if (changes.length)
    out.push({
      type: LOG_TYPE.manage,
      userId: after.id,
      username: after.username,
      content: redact(`User ${who(after)} changed by ${who(actor)}: ${changes.join(', ')}`),
    });
  return out;
}

export function userDeletedEntry(actor: Actor, user: { id: number; username: string }): LogEntry {
  return { type: LOG_TYPE.manage, userId: user.id, username: user.username, content: `User ${who(user)} deleted by ${who(actor)}` };
}

/** An admin's action on something that is no user's (channels, redemption codes): a manage row on the admin. */
export function adminActionEntry(actor: Actor, what: string, extra: Partial<LogEntry> = {}): LogEntry {
  return { type: LOG_TYPE.manage, userId: actor.id, username: actor.username, ...extra, content: redact(`${what} by ${who(actor)}`) };
}

/** A user's action on one of their jobs (a retry): a manage row on the user. */
export function jobActionEntry(actor: Actor, what: string): LogEntry {
  return { type: LOG_TYPE.manage, userId: actor.id, username: actor.username, content: redact(`${what} by ${who(actor)}`) };
}

/** Seen by the system, nobody's action (user 0). */
export function systemEntry(content: string, extra: Partial<LogEntry> = {}): LogEntry {
  return { type: LOG_TYPE.system, userId: 0, username: '', ...extra, content: redact(content), createdAt: extra.createdAt ?? nowSeconds() };
}

/** What changed between two versions of a record, as "field a → b" (or just "field changed" for the fields in `hidden`). */
export function describeChanges<T extends object>(before: T, after: T, fields: (keyof T & string)[], hidden: string[] = []): string[] {
  const out: string[] = [];
  for (const f of fields) {
    const a = before[f];
    const b = after[f];
    if (JSON.stringify(a ?? null) === JSON.stringify(b ?? null)) continue;
    out.push(hidden.includes(f) ? `${f} changed` : `${f} ${JSON.stringify(a ?? null)} → ${JSON.stringify(b ?? null)}`);
  }
  return out;
}
