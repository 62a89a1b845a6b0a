// Channels (one-api's upstream model): request bodies, the stored row, and the public view with the key as a hint only.
import { z } from 'zod';
import { idParam } from '../accounts/schema.js';
import { parse, rowId } from '../validate.js';

export const CHANNEL_STATUS = { enabled: 1, disabled: 2, autoDisabled: 3 } as const;
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com';

/**
 * An upstream's base URL: an http(s) origin and an optional path prefix, nothing else — the API
 * path is appended to it, so a query or fragment would swallow that path, and userinfo has no
 * place in it. Stored as the URL parser reads it (no trailing slash), so every later reader sees
 * the same host the outbound check saw.
 */
const baseUrl = z
  .string({ error: 'must be a string' })
  .max(500, 'must be at most 500 characters')
  .transform((v, ctx) => {
    const refuse = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (v === '') return DEFAULT_OPENAI_BASE_URL; // one-api's "default"
    if (/[\s\\]/.test(v) || [...v].some((c) => c.charCodeAt(0) < 0x20 || c === '\x7f'))
      return refuse('must not contain spaces, control characters or backslashes');
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      return refuse('must be an absolute http(s) URL');
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) return refuse('must be an absolute http(s) URL');
    if (u.username || u.password || /^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(v)) return refuse('must not contain a user name or password');
    if (v.includes('?')) return refuse('must not contain a query (?…): only an origin and an optional path prefix');
    if (v.includes('#')) return refuse('must not contain a fragment (#…): only an origin and an optional path prefix');
    return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
  });

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
const channelType = z
  .union([z.literal('openai'), z.literal(1)], { error: 'must be "openai" (only OpenAI-compatible upstreams are supported)' })
  .transform(() => 'openai' as const);
const price = z.number({ error: 'must be a number (quota per 1K tokens) or null' }).min(0, 'must not be negative').max(1e12).nullable();

export const createChannelBody = z.object({
  type: channelType.default('openai'),
  name: z.string({ error: 'must be a string' }).trim().min(1, 'must be 1-100 characters').max(100, 'must be 1-100 characters'),
  base_url: baseUrl.default(DEFAULT_OPENAI_BASE_URL),
  key: z.string({ error: 'is required' }).trim().min(1, 'is required').max(1000),
  models: modelList,
  model_mapping: mapping.default('{}'),
  priority: z.number({ error: 'must be an integer' }).int('must be an integer').min(-100_000).max(100_000).default(0),
  weight: z.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be 0 or more').max(100_000).default(1),
  price: price.default(null),
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }).default(1),
});

export const updateChannelBody = z.object({
  id: rowId('channel'),
  type: channelType.optional(),
  name: z.string().trim().min(1, 'must be 1-100 characters').max(100, 'must be 1-100 characters').optional(),
  base_url: baseUrl.optional(),
  // An empty key in an update means "keep the stored key" (the UI never sees it).
  key: z.string().trim().max(1000).optional(),
  models: modelList.optional(),
  model_mapping: mapping.optional(),
  priority: z.number().int('must be an integer').min(-100_000).max(100_000).optional(),
  weight: z.number().int('must be an integer').min(0, 'must be 0 or more').max(100_000).optional(),
  price: price.optional(),
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }).optional(),
});

/**
 * PUT /api/channel/ and /api/channel/:id: the path's id, when there is one, replaces the body's (one-api clients send
 * the channel read back whole, id included), then the body is parsed as one.
 */
export function parseChannelUpdate(raw: unknown, path: Record<string, string>): z.output<typeof updateChannelBody> {
  const body = (raw ?? {}) as Record<string, unknown>;
  const id = path.id === undefined ? body.id : parse(idParam, path.id, { param: 'id' });
  return parse(updateChannelBody, { ...body, id });
}

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
  /** Who made it; null: root's (made before this was recorded, or its maker was deleted). */
  created_by: number | null;
}

/** A channel as the API shows it: the key only as a hint, never again in full. */
export const channelView = z.object({
  id: z.number(),
  type: z.string(),
  name: z.string(),
  base_url: z.string(),
  key: z.string().describe('a hint: the first 3 and last 4 characters'),
  models: z.string(),
  model_mapping: z.record(z.string(), z.string()),
  priority: z.number(),
  weight: z.number(),
  price: z.number().nullable(),
  status: z.number().describe('1 enabled, 2 disabled, 3 disabled automatically (status_reason says why)'),
  status_reason: z.string().nullable(),
  used_quota: z.number(),
  created_time: z.number(),
  updated_time: z.number(),
});

export function publicChannel(c: ChannelRow): z.infer<typeof channelView> {
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
