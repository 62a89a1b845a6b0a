// Upstream channels (one-api's model): schema, queries, and a short-lived per-process directory of them.
import { z } from 'zod';
import type { Db } from '../db.js';
import type { Secrets } from '../secrets.js';
import { httpUrl } from '../validate.js';
import { escapeLike } from '../db.js';

export const CHANNEL_STATUS = { enabled: 1, disabled: 2, autoDisabled: 3 } as const;
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com';

const baseUrl = httpUrl(500).transform((v) => v.replace(/\/+$/, ''));

const modelList = z
  .union([z.string().max(10_000), z.array(z.string().min(1).max(200)).max(1000)], { error: 'must be a comma-separated string or an array of model names' })
  .transform((v, ctx) => {
    const list = [...new Set((Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean))];
    if (list.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'must name at least one model' });
      return z.NEVER;
    }
    return list.join(',');
  });

const mapping = z
  .union([z.string().max(20_000), z.record(z.string(), z.string())], { error: 'must be an object of model name to upstream model name' })
  .transform((v, ctx) => {
    let obj: unknown = v;
    if (typeof v === 'string') {
      try {
        obj = v.trim() === '' ? {} : JSON.parse(v);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object of model name to upstream model name' });
        return z.NEVER;
      }
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj) || Object.values(obj).some((x) => typeof x !== 'string' || x === '')) {
      ctx.addIssue({ code: 'custom', message: 'must be an object of model name to upstream model name' });
      return z.NEVER;
    }
    return JSON.stringify(obj);
  });

/** one-api numbers channel types; 1 is OpenAI. Only OpenAI-compatible upstreams are supported. */
const channelType = z.union([z.literal('openai'), z.literal(1)], { error: 'must be "openai" (only OpenAI-compatible upstreams are supported)' }).transform(() => 'openai' as const);
const price = z.number({ error: 'must be a number (quota per 1K tokens) or null' }).min(0, 'must not be negative').max(1e12).nullable();

export const createChannelBody = z.object({
  type: channelType.default('openai'),
  name: z.string({ error: 'must be a string' }).trim().min(1, 'must be 1-100 characters').max(100, 'must be 1-100 characters'),
  base_url: z.union([baseUrl, z.literal('').transform(() => DEFAULT_OPENAI_BASE_URL)]).default(DEFAULT_OPENAI_BASE_URL),
  key: z.string({ error: 'is required' }).trim().min(1, 'is required').max(1000),
  models: modelList,
  model_mapping: mapping.default('{}'),
  priority: z.number({ error: 'must be an integer' }).int('must be an integer').min(-100_000).max(100_000).default(0),
  weight: z.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be 0 or more').max(100_000).default(1),
  price: price.default(null),
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }).default(1),
});

export const updateChannelBody = z.object({
  id: z.number({ error: 'must be the channel id' }).int().positive(),
  type: channelType.optional(),
  name: z.string().trim().min(1, 'must be 1-100 characters').max(100, 'must be 1-100 characters').optional(),
  base_url: z.union([baseUrl, z.literal('').transform(() => DEFAULT_OPENAI_BASE_URL)]).optional(),
  // An empty key in an update means "keep the stored key" (the UI never sees it).
  key: z.string().trim().max(1000).optional(),
  models: modelList.optional(),
  model_mapping: mapping.optional(),
  priority: z.number().int('must be an integer').min(-100_000).max(100_000).optional(),
  weight: z.number().int('must be an integer').min(0, 'must be 0 or more').max(100_000).optional(),
  price: price.optional(),
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }).optional(),
});

export interface ChannelRow {
  id: number;
  type: string;
  name: string;
  base_url: string;
  key_enc: string;
  key_hint: string;
  models: string;
  model_mapping: string;
  priority: number;
  weight: number;
  price: number | null;
  status: number;
  status_reason: string | null;
  used_quota: number;
  created_time: number;
  updated_time: number;
}

/** A channel as the API shows it: the key only as a hint, never again in full. */
export function publicChannel(c: ChannelRow) {
  return {
    id: c.id,
    type: c.type,
    name: c.name,
    base_url: c.base_url,
    key: c.key_hint,
    models: c.models,
    model_mapping: JSON.parse(c.model_mapping) as Record<string, string>,
    priority: c.priority,
    weight: c.weight,
    price: c.price,
    status: c.status,
    status_reason: c.status_reason,
    used_quota: c.used_quota,
    created_time: c.created_time,
    updated_time: c.updated_time,
  };
}

const keyHint = (key: string) => (key.length <= 8 ? '*'.repeat(key.length) : `${key.slice(0, 3)}${'*'.repeat(8)}${key.slice(-4)}`);
const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function createChannel(db: Db, secrets: Secrets, input: z.output<typeof createChannelBody>): Promise<ChannelRow> {
  const { key, ...rest } = input;
  const now = nowSeconds();
  const [row] = await db<ChannelRow>('channels')
    .insert({ ...rest, key_enc: secrets.encrypt(key), key_hint: keyHint(key), created_time: now, updated_time: now })
    .returning('*');
  return row!;
}

export async function updateChannel(db: Db, secrets: Secrets, input: z.output<typeof updateChannelBody>): Promise<ChannelRow | undefined> {
  const { id, key, ...rest } = input;
  const patch: Record<string, unknown> = { updated_time: nowSeconds() };
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) patch[k] = v;
  if (key) {
    patch.key_enc = secrets.encrypt(key);
    patch.key_hint = keyHint(key);
  }
  // A new key or an explicit enable clears an automatic disable and its reason.
  if (key || rest.status === CHANNEL_STATUS.enabled) {
    patch.status_reason = null;
    if (!rest.status) patch.status = CHANNEL_STATUS.enabled;
  }
  const [row] = await db<ChannelRow>('channels').where({ id }).update(patch).returning('*');
  return row;
}

export const getChannel = (db: Db, id: number) => db<ChannelRow>('channels').where({ id }).first();

export async function deleteChannel(db: Db, id: number): Promise<boolean> {
  return (await db('channels').where({ id }).delete().returning('id')).length > 0;
}

export async function listChannels(db: Db, opts: { offset: number; limit: number; keyword?: string }) {
  const base = db<ChannelRow>('channels');
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

export async function autoDisableChannel(db: Db, id: number, reason: string): Promise<void> {
  await db('channels').where({ id, status: CHANNEL_STATUS.enabled }).update({ status: CHANNEL_STATUS.autoDisabled, status_reason: reason.slice(0, 1000), updated_time: nowSeconds() });
}

export async function addChannelUsage(db: Db, id: number, quota: number): Promise<void> {
  if (quota > 0) await db('channels').where({ id }).increment('used_quota', quota);
}

/** A channel, ready for routing decisions. */
export interface ChannelEntry {
  id: number;
  name: string;
  baseUrl: string;
  keyEnc: string;
  models: Set<string>;
  mapping: Record<string, string>;
  priority: number;
  weight: number;
  price: number | null;
  status: number;
}

export type ModelAvailability =
  | { kind: 'unknown' }
  | { kind: 'no-channel' }
  | { kind: 'no-price' }
  | { kind: 'ok'; price: number; channels: ChannelEntry[] };

/**
 * Every channel, re-read from Postgres at most every `ttlMs`. Changes made through this process
 * apply at once (invalidate()); changes made elsewhere within ttlMs.
 */
export class ChannelDirectory {
  private cache?: { at: number; entries: ChannelEntry[] };
  private loading?: Promise<ChannelEntry[]>;

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 2_000,
  ) {}

  invalidate() {
    this.cache = undefined;
  }

  async all(): Promise<ChannelEntry[]> {
    if (this.cache && Date.now() - this.cache.at < this.ttlMs) return this.cache.entries;
    this.loading ??= this.db<ChannelRow>('channels')
      .select('*')
      .then((rows) => {
        const entries = rows.map((r) => ({
          id: r.id,
          name: r.name,
          baseUrl: r.base_url,
          keyEnc: r.key_enc,
          models: new Set(r.models.split(',')),
          mapping: JSON.parse(r.model_mapping) as Record<string, string>,
          priority: r.priority,
          weight: r.weight,
          price: r.price,
          status: r.status,
        }));
        this.cache = { at: Date.now(), entries };
        return entries;
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }

  /**
   * Whether a model can be served: unknown (no channel lists it), no-channel (all its channels are
   * disabled), no-price (none of its enabled channels has a price: it is refused, never given
   * away), or ok with its price (the highest among them) and the channels that may serve it.
   */
  async availability(model: string): Promise<ModelAvailability> {
    const listing = (await this.all()).filter((c) => c.models.has(model));
    if (listing.length === 0) return { kind: 'unknown' };
    const enabled = listing.filter((c) => c.status === CHANNEL_STATUS.enabled);
    if (enabled.length === 0) return { kind: 'no-channel' };
    const priced = enabled.filter((c) => c.price !== null);
    if (priced.length === 0) return { kind: 'no-price' };
    return { kind: 'ok', price: Math.max(...priced.map((c) => c.price!)), channels: priced };
  }

  /** Models that an enabled, priced channel serves. */
  async servedModels(): Promise<string[]> {
    const out = new Set<string>();
    for (const c of await this.all()) if (c.status === CHANNEL_STATUS.enabled && c.price !== null) for (const m of c.models) out.add(m);
    return [...out].sort();
  }
}
