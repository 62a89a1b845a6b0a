// The batches area's shapes: OpenAI's file and batch objects, the create and list parameters, and the jobs' payloads.
import { z } from 'zod';
import { badRequest } from '../errors.js';

export const BATCH_ENDPOINT = '/v1/embeddings';
export const COMPLETION_WINDOW = '24h';
export const COMPLETION_WINDOW_MS = 24 * 3_600_000;
/** What an upload may name as its purpose (OpenAI's list: only batch is used here; the others are refused). */
export const UPLOAD_PURPOSES = ['batch'] as const;
/** OpenAI's metadata bounds. */
export const MAX_METADATA_PAIRS = 16;
/** At most this many validation errors are reported (a file with more fails on the first of them). */
export const MAX_REPORTED_ERRORS = 100;

export const BATCH_STATUSES = ['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
export const FINAL_STATUSES: readonly BatchStatus[] = ['failed', 'completed', 'expired', 'cancelled'];

const invalid = (message: string, param: string | null, code?: string) => badRequest(message, { param, code, type: 'invalid_request_error' });

export interface FileRow {
  id: string;
  owner_id: number;
  filename: string;
  purpose: string;
  bytes: string | number;
  status: string;
  created_at: Date;
  expires_at: Date | null;
  /** A batch's output (batch_ok) or error file: its bytes are that batch's outcome lines. */
  batch_id: string | null;
  batch_ok: boolean | null;
}

export interface BatchRow {
  id: string;
  owner_id: number;
  token_id: number | null;
  input_file_id: string;
  endpoint: string;
  completion_window: string;
  status: BatchStatus;
  model: string | null;
  metadata: Record<string, string> | null;
  errors: { code: string; message: string; param: string | null; line: number | null }[] | null;
  total: number;
  completed: number;
  failed: number;
  chunks: number;
  chunk_starts: number[] | null;
  output_expires_seconds: number | null;
  prompt_tokens: string | number;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: Date;
  in_progress_at: Date | null;
  expires_at: Date | null;
  finalizing_at: Date | null;
  completed_at: Date | null;
  failed_at: Date | null;
  expired_at: Date | null;
  cancelling_at: Date | null;
  cancelled_at: Date | null;
}

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

export const fileView = z.object({
  id: z.string().describe('file-…'),
  object: z.literal('file'),
  bytes: z.number(),
  created_at: z.number().describe('Unix seconds'),
  expires_at: z.number().nullable(),
  filename: z.string(),
  purpose: z.string().describe('batch (uploaded) or batch_output (a batch’s output or error file)'),
  status: z.string().describe('processed (OpenAI’s deprecated field)'),
  status_details: z.null(),
});

export const fileObject = (r: FileRow): z.output<typeof fileView> => ({
  id: r.id,
  object: 'file',
  bytes: Number(r.bytes),
  created_at: unix(r.created_at)!,
  expires_at: unix(r.expires_at),
  filename: r.filename,
  purpose: r.purpose,
  status: 'processed',
  status_details: null,
});

export const batchView = z.object({
  id: z.string().describe('batch_…'),
  object: z.literal('batch'),
  endpoint: z.string(),
  model: z.string().nullable(),
  errors: z
    .object({
      object: z.literal('list'),
      data: z.array(z.object({ code: z.string(), message: z.string(), param: z.string().nullable(), line: z.number().nullable() })),
    })
    .nullable(),
  input_file_id: z.string(),
  completion_window: z.string(),
  status: z.enum(BATCH_STATUSES),
  output_file_id: z.string().nullable(),
  error_file_id: z.string().nullable(),
  created_at: z.number(),
  in_progress_at: z.number().nullable(),
  expires_at: z.number().nullable(),
  finalizing_at: z.number().nullable(),
  completed_at: z.number().nullable(),
  failed_at: z.number().nullable(),
  expired_at: z.number().nullable(),
  cancelling_at: z.number().nullable(),
  cancelled_at: z.number().nullable(),
  request_counts: z.object({ total: z.number(), completed: z.number(), failed: z.number() }),
  usage: z.object({
    input_tokens: z.number(),
    input_tokens_details: z.object({ cached_tokens: z.number() }),
    output_tokens: z.number(),
    output_tokens_details: z.object({ reasoning_tokens: z.number() }),
    total_tokens: z.number(),
  }),
  metadata: z.record(z.string(), z.string()).nullable(),
});

export function batchObject(r: BatchRow): z.output<typeof batchView> {
  const tokens = Number(r.prompt_tokens);
  return {
    id: r.id,
    object: 'batch',
    endpoint: r.endpoint,
    model: r.model,
    errors: r.errors?.length ? { object: 'list', data: r.errors } : null,
    input_file_id: r.input_file_id,
    completion_window: r.completion_window,
    status: r.status,
    output_file_id: r.output_file_id,
    error_file_id: r.error_file_id,
    created_at: unix(r.created_at)!,
    in_progress_at: unix(r.in_progress_at),
    expires_at: unix(r.expires_at),
    finalizing_at: unix(r.finalizing_at),
    completed_at: unix(r.completed_at),
    failed_at: unix(r.failed_at),
    expired_at: unix(r.expired_at),
    cancelling_at: unix(r.cancelling_at),
    cancelled_at: unix(r.cancelled_at),
    request_counts: { total: r.total, completed: r.completed, failed: r.failed },
    usage: {
      input_tokens: tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: tokens,
    },
    metadata: r.metadata,
  };
}

/** OpenAI's list page: `data` in order, `has_more`, and the first and last ids (the next page is `after` the last). */
export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({ object: z.literal('list'), data: z.array(item), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() });

export function page<T extends { id: string }>(rows: T[], limit: number) {
  const data = rows.slice(0, limit);
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
}

const FILE_ID = /^file-[A-Za-z0-9]{1,64}$/;
const BATCH_ID = /^batch_[A-Za-z0-9]{1,64}$/;

/** An id of the form given, or undefined (an id of another form is simply not found). */
export const fileIdOrNull = (id: string) => (FILE_ID.test(id) ? id : null);
export const batchIdOrNull = (id: string) => (BATCH_ID.test(id) ? id : null);

export const filesQuery = z.object({
  purpose: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
  order: z.enum(['asc', 'desc']).default('desc'),
  after: z.string().max(100).optional(),
});
export type FilesQuery = z.output<typeof filesQuery>;

export const batchesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().max(100).optional(),
});
export type BatchesQuery = z.output<typeof batchesQuery>;

/** POST /v1/batches, as OpenAI documents it (only /v1/embeddings is run here). */
export const createBatchBody = z.object({
  input_file_id: z.string().max(100),
  endpoint: z.string().max(100),
  completion_window: z.string().max(20),
  metadata: z.record(z.string(), z.string()).nullish(),
  output_expires_after: z.object({ anchor: z.literal('created_at'), seconds: z.number().int().min(3600).max(2_592_000) }).optional(),
});

export interface CreateBatch {
  inputFileId: string;
  metadata: Record<string, string> | null;
  outputExpiresAfterSeconds?: number;
}

/** The create body in OpenAI's words: a missing or wrong field is a 400 naming it. */
export function parseCreateBatch(raw: unknown): CreateBatch {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('The request body must be a JSON object.', null);
  const b = raw as Record<string, unknown>;
  for (const field of ['input_file_id', 'endpoint', 'completion_window']) {
    if (b[field] === undefined || b[field] === null) throw invalid(`Missing required parameter: '${field}'.`, field);
    if (typeof b[field] !== 'string') throw invalid(`Invalid type for '${field}': expected a string.`, field);
  }
  if (b.endpoint !== BATCH_ENDPOINT) {
    throw invalid(
      `Invalid value for 'endpoint': this server runs batches for '${BATCH_ENDPOINT}' only, but got ${JSON.stringify(String(b.endpoint).slice(0, 100))}.`,
      'endpoint',
    );
  }
  if (b.completion_window !== COMPLETION_WINDOW) {
    throw invalid(
      `Invalid value for 'completion_window': expected '${COMPLETION_WINDOW}', but got ${JSON.stringify(b.completion_window)}.`,
      'completion_window',
    );
  }
  const r = createBatchBody.safeParse(b);
  if (!r.success) {
    const field = String(r.error.issues[0]!.path[0] ?? '');
    throw invalid(`Invalid '${field}': ${r.error.issues[0]!.message}`, field || null);
  }
  const metadata = r.data.metadata ?? null;
  if (metadata) {
    const pairs = Object.entries(metadata);
    if (pairs.length > MAX_METADATA_PAIRS) throw invalid(`Invalid 'metadata': at most ${MAX_METADATA_PAIRS} pairs are allowed.`, 'metadata');
    const bad = pairs.find(([k, v]) => k.length > 64 || v.length > 512);
    if (bad) throw invalid(`Invalid 'metadata': keys are at most 64 characters and values at most 512 ('${bad[0].slice(0, 64)}').`, 'metadata');
  }
  return { inputFileId: r.data.input_file_id, metadata, outputExpiresAfterSeconds: r.data.output_expires_after?.seconds };
}

/** The jobs' payloads: each names its batch (its lines live in Postgres, never in Redis). */
export const runPayload = z.object({ batchId: z.string().max(100) });
export const chunkPayload = z.object({
  batchId: z.string().max(100),
  chunk: z.number().int().min(0),
  from: z.number().int().min(0),
  to: z.number().int().min(1),
});
export const finalizePayload = z.object({ batchId: z.string().max(100) });
export const expireFilesPayload = z.object({});

export interface RunResult {
  batch: string;
  status: BatchStatus;
  total: number;
  chunks: number;
}
export interface ChunkResult {
  batch: string;
  chunk: number;
  completed: number;
  failed: number;
  skipped: number;
}
export interface FinalizeResult {
  batch: string;
  status: BatchStatus;
  completed: number;
  failed: number;
}
