// The content area's item and query rules, with the exact error strings of content-analyzer's API.
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { describeIssue, httpUrl, nulIssue } from '../validate.js';
import { urlKey } from './url-key.js';

export const MISSING_FIELDS = 'Missing required fields: source, url, summary, content, score';
export const SCORE_RANGE = 'Score must be between 0 and 10';
export const BATCH_NOT_ARRAY = 'Request body must be an array';
export const BATCH_EMPTY = 'Array cannot be empty';
export const BATCH_TOO_LARGE = 'Batch size cannot exceed 100';
export const DUPLICATE_IN_BATCH = 'Duplicate url in batch';
export const NOT_FOUND = 'Content not found';
/** Replacing or deleting an item someone else stored (or a legacy item, stored by nobody) is for admins. */
export const NOT_OWNER_UPSERT = 'Content with this url was stored by another user; only an admin above them can replace it';
export const NOT_OWNER_DELETE = 'Content was stored by another user; only an admin above them can delete it';
export const MAX_BATCH = 100;
export const MAX_CONTENT_BYTES = 1024 * 1024;

const REQUIRED = ['source', 'url', 'summary', 'content', 'score'] as const;

const optionalText = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    .nullish()
    .transform((v) => (v === undefined || v === null || v === '' ? null : v));

const isoDate = z.union([z.string(), z.number()], { error: 'must be an ISO 8601 date' }).transform((v, ctx) => {
  const d = new Date(v);
  if (Number.isNaN(d.getTime()) || (typeof v === 'string' && !/^\d{4}-\d{2}-\d{2}/.test(v))) {
    ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date' });
    return z.NEVER;
  }
  return d;
});

/** The fields after the required-field and score checks (which have their own messages). */
const itemFields = z.object({
  source: z.string({ error: 'must be a string' }).trim().min(1, 'must be 1-64 characters').max(64, 'must be 1-64 characters'),
  url: httpUrl(2048),
  title: optionalText(500),
  summary: z.string({ error: 'must be a string' }).max(2000, 'must be at most 2000 characters'),
  content: z
    .string({ error: 'must be a string' })
    .refine((v) => v.length <= MAX_CONTENT_BYTES && Buffer.byteLength(v, 'utf8') <= MAX_CONTENT_BYTES, 'must be at most 1 MB'),
  analyzedBy: optionalText(200),
  analyzedAt: isoDate.nullish(),
});

/** The whole item as a client sends it (for the API description; checkItem applies it). */
export const contentItemBody = itemFields.extend({
  score: z.union([z.number().min(0).max(10), z.string()]).describe('0-10, decimals allowed (a numeric string is accepted)'),
});

/** An item that passed checkItem: the validated fields, the score as a number, the url's identity. */
export type NewItem = Omit<z.output<typeof itemFields>, 'analyzedAt'> & { score: number; analyzedAt: Date | null; urlKey: string };

export type ItemCheck = { ok: true; item: NewItem } | { ok: false; error: string; url?: string };

/** Validates one item: missing fields first, then the score, then each field's type and bounds. */
export function checkItem(raw: unknown): ItemCheck {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, error: 'Item must be a JSON object' };
  const o = raw as Record<string, unknown>;
  const url = typeof o.url === 'string' ? o.url : undefined;
  if (REQUIRED.some((k) => o[k] === undefined || o[k] === null || o[k] === '')) return { ok: false, error: MISSING_FIELDS, url };
  const score = typeof o.score === 'string' && o.score.trim() !== '' ? Number(o.score) : o.score;
  if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 10) return { ok: false, error: SCORE_RANGE, url };
  const parsed = itemFields.safeParse(o);
  if (!parsed.success) return { ok: false, error: `Invalid field ${describeIssue(parsed.error.issues[0]!)}`, url };
  // A key with a NUL is refused like a value with one, also where the schema drops that key.
  const nul = nulIssue(parsed.data) ?? nulIssue(o, true);
  if (nul) return { ok: false, error: `Invalid field ${describeIssue(nul)}`, url };
  const f = parsed.data;
  return {
    ok: true,
    item: {
      source: f.source,
      url: f.url,
      title: f.title,
      summary: f.summary,
      content: f.content,
      score,
      analyzedBy: f.analyzedBy,
      analyzedAt: f.analyzedAt ?? null,
      urlKey: urlKey(f.url),
    },
  };
}

export const ORDER_BY = ['score', 'createdAt', 'analyzedAt'] as const;
export type OrderBy = (typeof ORDER_BY)[number];

const numberParam = (name: string) =>
  z.coerce.number({ error: `Invalid ${name}: must be a number` }).refine(Number.isFinite, `Invalid ${name}: must be a number`);

const dateParam = (name: string) =>
  z.string().transform((v, ctx) => {
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: `Invalid ${name}: must be an ISO 8601 date` });
      return z.NEVER;
    }
    return d;
  });

export const listQuery = z.object({
  orderBy: z.enum(ORDER_BY, { error: `Invalid orderBy: must be one of ${ORDER_BY.join(', ')}` }).default('score'),
  order: z.enum(['asc', 'desc'], { error: 'Invalid order: must be asc or desc' }).default('desc'),
  source: z.string().min(1).max(64, 'Invalid source: must be 1-64 characters').optional(),
  minScore: numberParam('minScore')
    .pipe(z.number().min(0, 'Invalid minScore: must be between 0 and 10').max(10, 'Invalid minScore: must be between 0 and 10'))
    .optional(),
  maxScore: numberParam('maxScore')
    .pipe(z.number().min(0, 'Invalid maxScore: must be between 0 and 10').max(10, 'Invalid maxScore: must be between 0 and 10'))
    .optional(),
  since: dateParam('since').optional(),
  until: dateParam('until').optional(),
  q: z
    .string()
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this replaces
    .transform((v) => v.replace(/[\u0000-\u001f]/g, ' ').trim())
    .pipe(z.string().max(200, 'Invalid q: must be at most 200 characters'))
    .optional(),
  limit: z.coerce
    .number({ error: 'Invalid limit: must be an integer between 1 and 1000' })
    .int('Invalid limit: must be an integer between 1 and 1000')
    .min(1, 'Invalid limit: must be an integer between 1 and 1000')
    .max(1000, 'Invalid limit: must be an integer between 1 and 1000')
    .default(100),
  cursor: z.string().max(500).optional(),
});
export type ListQuery = z.output<typeof listQuery>;

/** Parses list parameters; the message of the first problem, verbatim, or the query. */
export function parseListQuery(query: Record<string, unknown>): { ok: true; value: ListQuery } | { ok: false; error: string } {
  const flat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) flat[k] = Array.isArray(v) ? v[v.length - 1] : v;
  const r = listQuery.safeParse(flat);
  if (r.success && !nulIssue(r.data)) return { ok: true, value: r.data };
  // A NUL in a parameter (source, cursor) would reach Postgres: refused by name, like any bad value.
  const issue = r.success ? nulIssue(r.data)! : r.error.issues[0]!;
  return { ok: false, error: issue.message.startsWith('Invalid ') ? issue.message : `Invalid ${issue.path.join('.')}: ${issue.message}` };
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ContentRow {
  id: string;
  source: string;
  url: string;
  title: string | null;
  summary: string;
  content: string;
  score: number;
  analyzed_by: string | null;
  analyzed_at: Date;
  created_at: Date;
  updated_at: Date;
  /** The user who first stored it (null: stored before migration 005, or its user was deleted). */
  created_by: number | null;
}

/** An item as the API shows it (content-analyzer's field names). */
export const itemView = z.object({
  id: z.string(),
  source: z.string(),
  url: z.string(),
  title: z.string().nullable(),
  summary: z.string(),
  content: z.string(),
  score: z.number(),
  analyzedBy: z.string().nullable(),
  analyzedAt: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ContentItem = z.infer<typeof itemView>;

export function publicItem(r: ContentRow): ContentItem {
  return {
    id: r.id,
    source: r.source,
    url: r.url,
    title: r.title,
    summary: r.summary,
    content: r.content,
    score: r.score,
    analyzedBy: r.analyzed_by,
    analyzedAt: new Date(r.analyzed_at).toISOString(),
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

export const batchPayload = z.object({ items: z.array(z.unknown()).min(1).max(MAX_BATCH) });

/** A batch's outcome, entry by entry. */
export const batchResultView = z.object({
  success: z.number(),
  failed: z.number(),
  total: z.number(),
  errors: z.array(z.object({ index: z.number(), url: z.string(), error: z.string() })),
  created: z.array(z.object({ index: z.number(), id: z.string(), url: z.string() })),
});
export type BatchResult = z.infer<typeof batchResultView>;

export const statsView = z.object({ total: z.number(), bySource: z.record(z.string(), z.number()) });

// The parsers the content endpoints declare (src/content/routes.ts): the same checks, as 400s with these messages.

/** One item of POST /api/content: checkItem's first problem is the 400. */
export function parseItemBody(raw: unknown): NewItem {
  const check = checkItem(raw);
  if (!check.ok) throw badRequest(check.error);
  return check.item;
}

/** POST /api/content/batch: an array of 1-MAX_BATCH entries (each entry is checked by the job, and reported by index). */
export function parseBatchBody(raw: unknown): unknown[] {
  if (!Array.isArray(raw)) throw badRequest(BATCH_NOT_ARRAY);
  if (raw.length === 0) throw badRequest(BATCH_EMPTY);
  if (raw.length > MAX_BATCH) throw badRequest(BATCH_TOO_LARGE);
  return raw;
}

/** GET /api/content's parameters. */
export function parseListParams(query: Record<string, unknown>): ListQuery {
  const parsed = parseListQuery(query);
  if (!parsed.ok) throw badRequest(parsed.error);
  return parsed.value;
}
