// A stand-in for the Gemini Developer API (it cannot run here): a real HTTP server on loopback speaking
// `POST /{version}/models/{model}:batchEmbedContents` with the `x-goog-api-key` header, checking the request as Gemini
// does (unknown fields, at most 100 requests, each naming the URL's model), answering `{embeddings:[{values}]}`, and
// Google's error bodies: a bad key is a 400 INVALID_ARGUMENT with ErrorInfo API_KEY_INVALID; a rate limit a 429
// RESOURCE_EXHAUSTED with a RetryInfo detail.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakeVector } from './fake-openai.js';

export interface GeminiRequest {
  model: string;
  content: { parts: { text: string }[]; role?: string };
  taskType?: string;
  title?: string;
  outputDimensionality?: number;
}

export interface GeminiCall {
  path: string;
  version: string;
  /** The model named in the path (`models/…`). */
  model: string;
  headers: http.IncomingHttpHeaders;
  body: { requests: GeminiRequest[] };
}

export type GeminiBehaviour =
  | { kind: 'ok'; delayMs?: number }
  /** An error: Google's body with this HTTP status, gRPC status name, message and details; after `times` answers, ok again. */
  | { kind: 'status'; status: number; grpc: string; message?: string; details?: unknown[]; headers?: Record<string, string>; times?: number };

// Gemini's TaskType values, written out here rather than taken from the adapter: the fake checks the adapter, not itself.
const TASK_TYPES = new Set([
  'TASK_TYPE_UNSPECIFIED',
  'RETRIEVAL_QUERY',
  'RETRIEVAL_DOCUMENT',
  'SEMANTIC_SIMILARITY',
  'CLASSIFICATION',
  'CLUSTERING',
  'QUESTION_ANSWERING',
  'FACT_VERIFICATION',
  'CODE_RETRIEVAL_QUERY',
]);

/** A bad key as Gemini reports it (it answers 400, not 401). */
export const API_KEY_INVALID = {
  status: 400,
  grpc: 'INVALID_ARGUMENT',
  message: 'API key not valid. Please pass a valid API key.',
  details: [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'API_KEY_INVALID',
      domain: 'googleapis.com',
      metadata: { service: 'generativelanguage.googleapis.com' },
    },
    { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message: 'API key not valid. Please pass a valid API key.' },
  ],
};

/** A rate limit as Gemini reports it: 429 RESOURCE_EXHAUSTED, the wait in a RetryInfo detail (no Retry-After header). */
export const resourceExhausted = (retryDelay: string) => ({
  kind: 'status' as const,
  status: 429,
  grpc: 'RESOURCE_EXHAUSTED',
  message: `You exceeded your current quota, please check your plan and billing details. Please retry in ${retryDelay}.`,
  details: [
    {
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [
        {
          quotaMetric: 'generativelanguage.googleapis.com/embed_content_free_tier_requests',
          quotaId: 'EmbedContentRequestsPerMinutePerProjectPerModel-FreeTier',
        },
      ],
    },
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay },
  ],
});

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Why a body is not a batchEmbedContents request for `model`, or null when it is one. */
function invalid(body: unknown, model: string): string | null {
  if (!isObject(body)) return 'Invalid JSON payload received.';
  for (const k of Object.keys(body)) if (k !== 'requests') return `Invalid JSON payload received. Unknown name "${k}": Cannot find field.`;
  const requests = body.requests;
  if (!Array.isArray(requests) || requests.length === 0) return '* BatchEmbedContentsRequest.requests: contents is not specified';
  if (requests.length > 100) return '* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch';
  for (const [i, r] of requests.entries()) {
    if (!isObject(r)) return `Invalid JSON payload received. requests[${i}] is not an object.`;
    for (const k of Object.keys(r))
      if (!['model', 'content', 'taskType', 'title', 'outputDimensionality'].includes(k))
        return `Invalid JSON payload received. Unknown name "${k}" at 'requests[${i}]': Cannot find field.`;
    if (r.model !== model) return `* BatchEmbedContentsRequest.requests[${i}].model: unexpected model name format`;
    const c = r.content;
    if (!isObject(c) || !Array.isArray(c.parts) || c.parts.length === 0) return `* BatchEmbedContentsRequest.requests[${i}].content: contents is not specified`;
    for (const k of Object.keys(c)) if (k !== 'parts' && k !== 'role') return `Invalid JSON payload received. Unknown name "${k}" at 'requests[${i}].content'.`;
    if (c.role !== undefined && typeof c.role !== 'string') return `requests[${i}].content.role must be a string`;
    if (!c.parts.every((p) => isObject(p) && Object.keys(p).length === 1 && typeof p.text === 'string' && p.text.length > 0))
      return `* BatchEmbedContentsRequest.requests[${i}].content.parts: each part must have text`;
    if (r.taskType !== undefined && !TASK_TYPES.has(r.taskType as string))
      return `Invalid value at 'requests[${i}].task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), "${String(r.taskType)}"`;
    if (r.title !== undefined && (typeof r.title !== 'string' || r.taskType !== 'RETRIEVAL_DOCUMENT'))
      return `* BatchEmbedContentsRequest.requests[${i}].title: only with taskType RETRIEVAL_DOCUMENT`;
    if (r.outputDimensionality !== undefined && !(Number.isInteger(r.outputDimensionality) && (r.outputDimensionality as number) > 0))
      return `Invalid value at 'requests[${i}].output_dimensionality'`;
  }
  return null;
}

export class FakeGemini {
  readonly calls: GeminiCall[] = [];
  behaviour: GeminiBehaviour = { kind: 'ok' };
  private server?: http.Server;
  url = '';

  /** `key`: the API key the `x-goog-api-key` header must carry. */
  constructor(readonly key = 'AIzaSy-fake-gemini-key-0123456789') {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => this.answer(req, raw, res));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private answer(req: http.IncomingMessage, raw: string, res: http.ServerResponse): void {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, grpc: string, message: string, details?: unknown[], headers?: Record<string, string>) =>
      send(status, { error: { code: status, message, status: grpc, ...(details ? { details } : {}) } }, headers);
    const u = new URL(req.url ?? '/', 'http://fake');
    const route = /^\/(v\d+(?:alpha|beta)?\d*)\/((?:models|tunedModels)\/[^/:]+):batchEmbedContents$/.exec(u.pathname);
    if (req.method !== 'POST' || !route) return error(404, 'NOT_FOUND', `The requested URL ${u.pathname} was not found on this server.`);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return error(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
    }
    const model = decodeURIComponent(route[2]!);
    this.calls.push({ path: req.url ?? '', version: route[1]!, model, headers: req.headers, body: body as GeminiCall['body'] });
    if (req.headers['x-goog-api-key'] !== this.key) {
      if (req.headers['x-goog-api-key'] === undefined)
        return error(
          403,
          'PERMISSION_DENIED',
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        );
      return error(API_KEY_INVALID.status, API_KEY_INVALID.grpc, API_KEY_INVALID.message, API_KEY_INVALID.details);
    }
    const b = this.behaviour;
    if (b.kind === 'status') {
      if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok' };
      return error(b.status, b.grpc, b.message ?? `fake Gemini says ${b.status}`, b.details, b.headers);
    }
    const why = invalid(body, model);
    if (why) return error(400, 'INVALID_ARGUMENT', why);
    const requests = (body as GeminiCall['body']).requests;
    const ok = () =>
      send(200, {
        embeddings: requests.map((r) => ({ values: fakeVector(r.content.parts.map((p) => p.text).join(' '), r.outputDimensionality ?? 4) })),
      });
    if (b.delayMs) setTimeout(ok, b.delayMs);
    else ok();
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}
