// Request schemas and row shapes of accounts (users, tokens, redemption codes), one-api compatible.
import { z } from 'zod';
import type { Config } from '../config.js';
import { DEFAULT_GROUP, GROUP_NAME } from '../groups.js';
import { parseCidr } from '../outbound.js';
import { parse, rowId } from '../validate.js';

export const ROLE = { common: 1, admin: 10, root: 100 } as const;
export const USER_STATUS = { enabled: 1, disabled: 2 } as const;
export const TOKEN_STATUS = { enabled: 1, disabled: 2, expired: 3, exhausted: 4 } as const;
export const REDEMPTION_STATUS = { unused: 1, disabled: 2, used: 3 } as const;

const quota = z.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must not be negative').max(Number.MAX_SAFE_INTEGER);
const role = z.union([z.literal(1), z.literal(10), z.literal(100)], { error: 'must be 1 (common), 10 (admin) or 100 (root)' });

/**
 * The one normalisation of a username, for uniqueness, lookups and the login limiter alike.
 * Usernames are ASCII (below), so JavaScript's and Postgres' lower() agree on every stored one;
 * an input that lower-cases to anything else (`İ` → `i̇`) matches no user and counts under its own key.
 */
export const usernameKey = (name: string): string => name.toLowerCase();

export const username = z
  .string({ error: 'must be a string' })
  .min(1, 'must be 1-32 characters')
  .max(32, 'must be 1-32 characters')
  .regex(/^[A-Za-z0-9_.-]+$/, 'may contain only letters, digits, "_", "." and "-"');
export const password = z.string({ error: 'must be a string' }).min(8, 'must be 8-128 characters').max(128, 'must be 8-128 characters');

/** A user's group (one-api's `group`): which channels their calls may take, and the ratio their calls' price is multiplied by. */
const group = z.string({ error: 'must be a string' }).trim().regex(GROUP_NAME, 'must be 1-64 letters, digits, "_", "." or "-"');

export const loginBody = z.object({
  username: z.string({ error: 'is required' }).min(1, 'is required').max(64),
  password: z.string({ error: 'is required' }).min(1, 'is required').max(128),
});

export const createUserBody = z.object({
  username,
  password,
  display_name: z.string({ error: 'must be a string' }).max(64, 'must be at most 64 characters').optional(),
  email: z.email('must be an email address').max(254).optional().or(z.literal('')),
  role: role.default(1),
  quota: quota.default(0),
  group: group.default(DEFAULT_GROUP),
});
export type CreateUserInput = z.output<typeof createUserBody>;

export const updateUserBody = z.object({
  id: rowId('user').optional(),
  username: username.optional(),
  password: password.optional().or(z.literal('').transform(() => undefined)),
  display_name: z.string({ error: 'must be a string' }).max(64, 'must be at most 64 characters').optional(),
  email: z.email('must be an email address').max(254).optional().or(z.literal('')),
  role: role.optional(),
  quota: quota.optional(),
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }).optional(),
  group: group.optional(),
});
export type UpdateUserInput = z.output<typeof updateUserBody>;

/** The lowest role that may set its own quota: root always; admins too where ADMIN_SELF_QUOTA is on. */
export const ownQuotaMinRole = (config: Pick<Config, 'ADMIN_SELF_QUOTA'>): number => (config.ADMIN_SELF_QUOTA ? ROLE.admin : ROLE.root);

export const updateSelfBody = z.object({
  display_name: z.string({ error: 'must be a string' }).max(64).optional(),
  email: z.email('must be an email address').max(254).optional().or(z.literal('')),
  password: password.optional(),
  original_password: z.string().max(128).optional(),
  /** Root's own quota (and an admin's, where ADMIN_SELF_QUOTA is on): nobody else may change theirs. */
  quota: quota.optional(),
});
export type UpdateSelfInput = z.output<typeof updateSelfBody>;

/** Comma list (or array) of model names; empty means "all models". */
const modelList = z
  .union([z.string().max(4000), z.array(z.string().min(1).max(200)).max(500)], { error: 'must be a comma-separated string or an array of model names' })
  .nullish()
  .transform((v) => {
    const list = (Array.isArray(v) ? v : (v ?? '').split(',')).map((s) => s.trim()).filter(Boolean);
    return list.length ? [...new Set(list)].join(',') : null;
  });

/** Comma list of IPs or CIDRs; empty means "any address". */
const subnetList = z
  .string({ error: 'must be a comma-separated list of CIDRs' })
  .max(2000)
  .nullish()
  .transform((v, ctx) => {
    const list = (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    for (const cidr of list) {
      if (!parseCidr(cidr)) {
        ctx.addIssue({ code: 'custom', message: `"${cidr}" is not an IP address or CIDR` });
        return z.NEVER;
      }
    }
    return list.length ? list.join(',') : null;
  });

/** -1 = never; 0 or omitted also mean never (one-api). */
const expiredTime = z
  .number({ error: 'must be a Unix timestamp in seconds, or -1 for never' })
  .int('must be an integer')
  .min(-1, 'must be a Unix timestamp in seconds, or -1 for never')
  .max(253402300799, 'is too far in the future')
  .optional()
  .transform((v) => (v === undefined || v === 0 ? -1 : v));

export const createTokenBody = z.object({
  name: z.string({ error: 'must be a string' }).max(50, 'must be at most 50 characters').default(''),
  expired_time: expiredTime,
  remain_quota: quota.default(0),
  unlimited_quota: z.boolean({ error: 'must be true or false' }).default(false),
  models: modelList,
  subnet: subnetList,
});
export type CreateTokenInput = z.output<typeof createTokenBody>;

export const updateTokenBody = z.object({
  id: rowId('token'),
  name: z.string({ error: 'must be a string' }).max(50, 'must be at most 50 characters').optional(),
  expired_time: z
    .number({ error: 'must be a Unix timestamp in seconds, or -1 for never' })
    .int()
    .min(-1)
    .max(253402300799)
    .optional()
    .transform((v) => (v === 0 ? -1 : v)),
  remain_quota: quota.optional(),
  unlimited_quota: z.boolean({ error: 'must be true or false' }).optional(),
  models: modelList.optional(),
  subnet: subnetList.optional(),
  // 3 (expired) and 4 (exhausted) are what a read says of a token, not something to set: a token read and sent back
  // whole keeps its status (as one-api, whose plain update ignores status); with ?status_only=1 they are refused.
  status: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)], { error: 'must be 1 (enabled) or 2 (disabled)' }).optional(),
});
export type UpdateTokenInput = z.output<typeof updateTokenBody>;

export const createRedemptionBody = z.object({
  name: z.string({ error: 'must be a string' }).min(1, 'must be 1-20 characters').max(20, 'must be 1-20 characters'),
  quota: z.number({ error: 'must be a number' }).int('must be an integer').positive('must be greater than 0').max(Number.MAX_SAFE_INTEGER),
  count: z.number({ error: 'must be a number' }).int('must be an integer').min(1, 'must be 1-100').max(100, 'must be 1-100').default(1),
});

export const updateRedemptionBody = z.object({
  id: rowId('redemption'),
  name: z.string().min(1).max(20).optional(),
  quota: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }).optional(),
});

export type CreateRedemptionInput = z.output<typeof createRedemptionBody>;
export type UpdateRedemptionInput = z.output<typeof updateRedemptionBody>;

export const topupBody = z.object({
  key: z.string({ error: 'is required' }).trim().min(1, 'is required').max(64),
});

export const pageQuery = z.object({
  p: z.coerce.number().int().min(0).default(0),
  page_size: z.coerce.number().int().min(1).max(100).default(10),
  keyword: z.string().max(100).optional(),
});

export type PageQuery = z.output<typeof pageQuery>;

/** A page of a list as the stores take it. */
export const pageOf = (q: PageQuery) => ({ offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword });

/** `?status_only=1` (or `true`): a PUT changes only `status` (one-api's enable/disable switch). */
export const parseStatusOnly = (raw: Record<string, unknown>) => ({ statusOnly: ['1', 'true'].includes(String(raw.status_only ?? '')) });

/**
 * PUT /api/token/ and /api/token/:id: the path's id, when there is one, replaces the body's (one-api clients send the
 * token read back whole, id included), then the body is parsed as one.
 */
export function parseTokenUpdate(raw: unknown, path: Record<string, string>): UpdateTokenInput {
  const body = (raw ?? {}) as Record<string, unknown>;
  const id = path.id === undefined ? body.id : parse(idParam, path.id, { param: 'id' });
  return parse(updateTokenBody, { ...body, id });
}

/** Drops undefined fields, so a partial update touches only what was sent. */
export function compact<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export const idParam = z.coerce
  .number({ error: 'must be a numeric id' })
  .int('must be a numeric id')
  .positive('must be a numeric id')
  .max(2_147_483_647, 'must be a numeric id');

export interface UserRow {
  id: number;
  username: string;
  password_hash: string;
  display_name: string;
  role: number;
  status: number;
  email: string | null;
  quota: number;
  used_quota: number;
  request_count: number;
  access_token_hash: string | null;
  group: string;
  created_at: Date;
  updated_at: Date;
}

export interface TokenRow {
  id: number;
  user_id: number;
  key_hash: string;
  key_hint: string;
  name: string;
  status: number;
  created_time: number;
  accessed_time: number;
  expired_time: number;
  remain_quota: number;
  unlimited_quota: boolean;
  used_quota: number;
  models: string | null;
  subnet: string | null;
}

export interface RedemptionRow {
  id: number;
  user_id: number | null;
  key: string;
  name: string;
  quota: number;
  status: number;
  created_time: number;
  redeemed_time: number;
  used_user_id: number | null;
}

// ---- what the API shows (response schemas; /openapi.json reads them too) --------------------------

/** A user as the API shows it: never the password hash or access token. */
export const userView = z.object({
  id: z.number(),
  username: z.string(),
  display_name: z.string(),
  role: z.number(),
  status: z.number(),
  email: z.string(),
  quota: z.number(),
  used_quota: z.number(),
  request_count: z.number(),
  group: z.string().describe("the user's group: their calls take only the channels serving it, at its price ratio (GROUP_RATIO)"),
  created_at: z.string(),
});
export type UserView = z.infer<typeof userView>;

/** An API key as the API shows it: `key` is the masked hint, or the whole key in the answer that creates it. */
export const tokenView = z.object({
  id: z.number(),
  user_id: z.number(),
  key: z.string(),
  name: z.string(),
  status: z.number(),
  created_time: z.number(),
  accessed_time: z.number(),
  expired_time: z.number(),
  remain_quota: z.number(),
  unlimited_quota: z.boolean(),
  used_quota: z.number(),
  models: z.string(),
  subnet: z.string(),
});
export type TokenView = z.infer<typeof tokenView>;

export const redemptionView = z.object({
  id: z.number(),
  user_id: z.number().nullable(),
  key: z.string(),
  name: z.string(),
  quota: z.number(),
  status: z.number(),
  created_time: z.number(),
  redeemed_time: z.number(),
  used_user_id: z.number().nullable(),
});
