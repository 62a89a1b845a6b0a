// Usage and audit logs (one-api's log API): types, what a row holds, the query parameters and the views the API shows.
import { z } from 'zod';

/** one-api's log types. */
export const LOG_TYPE = { topup: 1, consume: 2, manage: 3, system: 4, error: 5 } as const;
export type LogType = (typeof LOG_TYPE)[keyof typeof LOG_TYPE];

/** Listings and counts reach the newest this many matching rows; older ones are reached by narrowing the time range. */
export const LIST_WINDOW = 10_000;
/** A search answers at most this many rows (one-api's MaxRecentItems). */
export const SEARCH_LIMIT = 100;

/** One row to write. `username` defaults to the user's current one; `createdAt` (Unix seconds) to now. */
export interface LogEntry {
  type: LogType;
  userId: number;
  username?: string;
  tokenId?: number | null;
  tokenName?: string;
  modelName?: string;
  channelId?: number | null;
  quota?: number;
  promptTokens?: number;
  completionTokens?: number;
  elapsedMs?: number;
  /** Calls this row stands for (aggregated free calls: more than one). */
  requestCount?: number;
  cacheHit?: boolean;
  /** The HTTP status the call was answered with (error rows). */
  statusCode?: number | null;
  requestId?: string | null;
  content: string;
  createdAt?: number;
}

/** Text filters: empty means "not given" (one-api frontends send `token_name=`). */
const text = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    .optional()
    .transform((v) => (v === '' ? undefined : v));
const seconds = z.coerce
  .number({ error: 'must be Unix seconds' })
  .int('must be Unix seconds')
  .min(0, 'must be Unix seconds')
  .max(253_402_300_799, 'must be Unix seconds')
  .default(0);
const logType = z.coerce
  .number({ error: 'must be 0 (all) or a log type 1-5' })
  .int('must be 0 (all) or a log type 1-5')
  .min(0, 'must be 0 (all) or a log type 1-5')
  .max(5, 'must be 0 (all) or a log type 1-5')
  .default(0);

/** The filters of /api/log/self and /api/log/self/stat. */
export const selfFilterQuery = z.object({
  type: logType,
  token_name: text(50),
  model_name: text(200),
  start_timestamp: seconds,
  end_timestamp: seconds,
});
/** The filters of /api/log/ and /api/log/stat: also whose rows, and which channel. */
export const adminFilterQuery = selfFilterQuery.extend({
  username: text(64),
  channel: z.coerce.number({ error: 'must be a channel id' }).int('must be a channel id').min(0, 'must be a channel id').max(2_147_483_647).default(0),
});

const paging = {
  p: z.coerce.number({ error: 'must be a page number from 0' }).int('must be a page number from 0').min(0, 'must be a page number from 0').default(0),
  page_size: z.coerce.number({ error: 'must be 1-100' }).int('must be 1-100').min(1, 'must be 1-100').max(100, 'must be 1-100').default(10),
};
const withinWindow = (q: { p: number; page_size: number }) => (q.p + 1) * q.page_size <= LIST_WINDOW;
const windowMessage = {
  message: `listings reach the newest ${LIST_WINDOW} matching rows: narrow the time range (start_timestamp, end_timestamp) to page further back`,
  path: ['p'],
};
export const selfListQuery = selfFilterQuery.extend(paging).refine(withinWindow, windowMessage);
export const adminListQuery = adminFilterQuery.extend(paging).refine(withinWindow, windowMessage);

export const searchQuery = z.object({
  keyword: text(100),
  start_timestamp: seconds,
  end_timestamp: seconds,
});

export const deleteQuery = z.object({
  target_timestamp: z.coerce
    .number({ error: 'is required (Unix seconds): rows created before it are deleted' })
    .int('must be Unix seconds')
    .min(1, 'is required (Unix seconds): rows created before it are deleted')
    .max(253_402_300_799, 'must be Unix seconds'),
});

/** A row as the API shows it: one-api's fields, plus request_id (the X-Request-Id of the call) and what aggregation and the cache did. */
export const logView = z.object({
  id: z.number(),
  created_at: z.number().describe('Unix seconds'),
  type: z.number().describe('1 top-up, 2 consume, 3 manage, 4 system, 5 error'),
  content: z.string(),
  username: z.string(),
  token_name: z.string(),
  model_name: z.string(),
  quota: z.number(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  channel: z.number().describe('channel id, 0 for none'),
  elapsed_time: z.number().describe('milliseconds (the average, on an aggregated row)'),
  request_id: z.string(),
  request_count: z.number().describe('calls this row stands for: more than 1 on an aggregated row of free calls'),
  cache_hit: z.boolean(),
  status_code: z.number().nullable().describe('error rows: the HTTP status the call was answered with'),
});
export type LogView = z.infer<typeof logView>;

export const statView = z.object({
  quota: z.number().describe('sum of quota over the filtered rows (consume rows unless type is given)'),
  rpm: z.number().describe('consume requests in the last 60 s (same filters, without the time range)'),
  tpm: z.number().describe('prompt + completion tokens of those requests'),
});

/** one-api's dashboard row (its Go field names). */
export const dashboardRow = z.object({
  Day: z.string().describe('YYYY-MM-DD (UTC)'),
  ModelName: z.string(),
  RequestCount: z.number(),
  Quota: z.number(),
  PromptTokens: z.number(),
  CompletionTokens: z.number(),
});

export const statusView = z.object({
  version: z.string(),
  start_time: z.number().describe('Unix seconds when this process started'),
  system_name: z.string(),
  register_enabled: z.boolean().describe('self-registration: Switchyard has none (admins create users)'),
  email_verification: z.boolean(),
  github_oauth: z.boolean(),
  wechat_login: z.boolean(),
  turnstile_check: z.boolean(),
  quota_per_unit: z.number().describe('quota is a plain integer: shown as is'),
  display_in_currency: z.boolean(),
  quota_unit: z.string(),
  log_retention_days: z.number(),
  own_quota_min_role: z
    .number()
    .describe('the lowest role that may set its own quota (PUT /api/user/self with quota): 100, root only; 10 where ADMIN_SELF_QUOTA is true'),
  logo: z.string(),
  footer_html: z.string(),
  server_address: z.string(),
  top_up_link: z.string(),
  chat_link: z.string(),
});
