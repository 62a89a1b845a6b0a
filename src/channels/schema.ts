// Channels (one-api's upstream model): request bodies, the stored row, and the public view with the key as a hint only.
import { z } from 'zod';
import { idParam } from '../accounts/schema.js';
import { parse, rowId } from '../validate.js';
import { PROVIDERS, providerOf } from './providers/registry.js';
import { GROUP_NAME } from '../groups.js';

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
    if (v === '') return ''; // one-api's "default": the provider's own base URL (the service fills it in)
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

/**
 * An object given as itself or as its JSON ('' is {}): the parsed object, or an issue saying `what` it must be. What
 * one-api clients send for a channel's JSON fields (model_mapping, config).
 */
function objectOrJson(v: unknown, ctx: z.RefinementCtx, what: string): Record<string, unknown> | typeof z.NEVER {
  let obj: unknown = v;
  if (typeof v === 'string') {
    try {
      obj = v.trim() === '' ? {} : JSON.parse(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: `must be a JSON object ${what}` });
      return z.NEVER;
    }
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    ctx.addIssue({ code: 'custom', message: `must be an object ${what}` });
    return z.NEVER;
  }
  return obj as Record<string, unknown>;
}

const mapping = z
  .union([z.string().max(20_000), z.record(z.string(), z.string())], { error: 'must be an object of model name to upstream model name' })
  .transform((v, ctx) => {
    const obj = objectOrJson(v, ctx, 'of model name to upstream model name');
    if (obj === z.NEVER) return z.NEVER;
    if (Object.values(obj).some((x) => typeof x !== 'string' || x === '')) {
      ctx.addIssue({ code: 'custom', message: 'must be an object of model name to upstream model name' });
      return z.NEVER;
    }
    return JSON.stringify(obj);
  });

/** A provider's name (src/channels/providers/registry.ts) or one-api's number for it; stored as the name. */
const channelType = z.union([z.string(), z.number()], { error: `must be one of ${PROVIDERS.map((p) => p.type).join(', ')}` }).transform((v, ctx) => {
  const provider = providerOf(v);
  if (!provider) {
    ctx.addIssue({
      code: 'custom',
      message: `must be one of ${PROVIDERS.map((p) => `"${p.type}"${p.oneApiType === null ? '' : ` (${p.oneApiType})`}`).join(', ')}`,
    });
    return z.NEVER;
  }
  return provider.type;
});

/** A provider's settings (see its `config` schema; checked against it once the type is known): an object, or its JSON. */
const channelConfig = z
  .union([z.string().max(20_000), z.record(z.string(), z.unknown())], { error: 'must be an object of the provider’s settings' })
  .transform((v, ctx) => {
    const obj = objectOrJson(v, ctx, 'of the provider’s settings');
    if (obj === z.NEVER) return z.NEVER;
    if (JSON.stringify(obj).length > 20_000) {
      ctx.addIssue({ code: 'custom', message: 'must be at most 20,000 characters as JSON' });
      return z.NEVER;
    }
    return obj;
  });

/** The user groups a channel serves (one-api's `group`): comma-separated names. */
const groupList = z
  .string({ error: 'must be a comma-separated string of group names' })
  .max(1_000)
  .transform((v, ctx) => {
    const list = [
      ...new Set(
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ];
    if (list.length === 0 || list.some((g) => !GROUP_NAME.test(g))) {
      ctx.addIssue({ code: 'custom', message: 'must name at least one group (letters, digits, _ . -; at most 64 each)' });
      return z.NEVER;
    }
    return list.join(',');
  });
const price = z.number({ error: 'must be a number (quota per 1K tokens) or null' }).min(0, 'must not be negative').max(1e12).nullable();

export const createChannelBody = z.object({
  type: channelType.default('openai'),
  name: z.string({ error: 'must be a string' }).trim().min(1, 'must be 1-100 characters').max(100, 'must be 1-100 characters'),
  /** Omitted: the provider's default (one without one needs it). */
  base_url: baseUrl.optional(),
  config: channelConfig.default({}),
  group: groupList.default('default'),
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
  config: channelConfig.optional(),
  group: groupList.optional(),
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
  /** The provider's settings, JSON. */
  config: string;
  /** The last direct test: when (epoch seconds) and the upstream's time (ms). */
  test_time: number | string | null;
  response_time: number | null;
  group: string;
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
  config: z.record(z.string(), z.unknown()).describe("the provider's settings (see docs/providers.md)"),
  group: z.string().describe('the user groups it serves, comma-separated'),
  test_time: z.number().nullable().describe('when it was last tested directly (epoch seconds)'),
  response_time: z.number().nullable().describe("the upstream's time in that test (ms)"),
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
    config: JSON.parse(c.config) as Record<string, unknown>,
    group: c.group,
    test_time: c.test_time === null ? null : Number(c.test_time),
    response_time: c.response_time,
    used_quota: c.used_quota,
    created_time: c.created_time,
    updated_time: c.updated_time,
  };
}
