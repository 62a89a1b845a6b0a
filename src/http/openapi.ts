// /openapi.json (OpenAPI 3.1), assembled from the endpoints each area's routes declare, and /docs to read it.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';
import { notFound } from '../errors.js';
import type { Platform } from '../platform.js';
import { ApiRouter, endpoint, type Auth, type Endpoint } from './route.js';

/** What a job-backed endpoint answers with 202. */
const accepted = z.object({ jobId: z.string(), state: z.enum(['waiting', 'active', 'delayed', 'completed', 'failed']), statusUrl: z.string() });

/** The header of endpoints declared idempotent (src/http/idempotency.ts; docs/jobs.md#idempotent-requests). */
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the request safe to send again: the same key from the same user with the same request (method, path, query, body) within IDEMPOTENCY_TTL_SECONDS (24 h) answers what the first one answered, with `Idempotent-Replayed: true`, and does nothing again. 1-255 printable ASCII characters, bare or quoted (RFC 8941 string).',
  schema: { type: 'string', minLength: 1, maxLength: 257 },
};
const IDEMPOTENT_ANSWERS = {
  '400': 'a malformed Idempotency-Key (or the request itself is invalid)',
  '409': 'a request with this Idempotency-Key is still running: try again after Retry-After',
  '410': "this Idempotency-Key's request was done, but its answer is no longer kept (its job is gone, or it was over 64 KiB); it was not done again",
  '422': 'this Idempotency-Key was used for another request (method, path or body differ)',
};

/** An upload (`body: 'multipart'`): OpenAI's POST /v1/files form. */
const UPLOAD_SCHEMA = {
  type: 'object',
  required: ['file', 'purpose'],
  properties: {
    file: { type: 'string', format: 'binary', description: 'The file (JSONL: one request per line)' },
    purpose: { type: 'string', enum: ['batch'] },
    'expires_after[anchor]': { type: 'string', enum: ['created_at'] },
    'expires_after[seconds]': { type: 'integer', minimum: 3600, maximum: 2592000 },
  },
};

const schemaOf = (s: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const SECURITY: Record<Auth, unknown[]> = {
  none: [],
  user: [{ bearer: [] }, { session: [] }],
  admin: [{ bearer: [] }, { session: [] }],
  root: [{ bearer: [] }, { session: [] }],
  apiKey: [{ bearer: [] }],
  adminBasic: [{ session: [] }, { basic: [] }],
};

export function openApiDocument(endpoints: readonly Endpoint[]): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const e of endpoints) {
    const p = e.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const pathParams = [...e.path.matchAll(/:([A-Za-z]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = e.query
      ? Object.entries(e.query.shape).map(([name, s]) => ({
          name,
          in: 'query',
          required: !(s as z.ZodType).safeParse(undefined).success,
          schema: schemaOf(s as z.ZodType),
        }))
      : [];
    const responses: Record<string, unknown> = {};
    for (const [status, r] of Object.entries(e.responses)) {
      const { description, schema } = typeof r === 'string' ? { description: r, schema: undefined } : r;
      responses[status] = schema ? { description, content: { 'application/json': { schema: schemaOf(schema) } } } : { description };
    }
    if (e.job)
      responses['202'] = {
        description: 'Prefer: respond-async, or the wait (SYNC_WAIT_MS) ran out: the job goes on',
        content: { 'application/json': { schema: schemaOf(accepted) } },
      };
    if (e.auth !== 'none') responses['401'] ??= { description: 'no or invalid credentials' };
    if (e.idempotent) for (const [status, description] of Object.entries(IDEMPOTENT_ANSWERS)) responses[status] ??= { description };
    (paths[p] ??= {})[e.method] = {
      tags: [e.tag],
      summary: e.summary,
      ...(e.auth === 'admin' || e.auth === 'adminBasic'
        ? { description: 'Admins (role 10) and root only.' }
        : e.auth === 'root'
          ? { description: 'Root (role 100) only.' }
          : {}),
      security: SECURITY[e.auth],
      parameters: [
        ...pathParams,
        ...query,
        ...(e.job ? [{ name: 'Prefer', in: 'header', schema: { type: 'string', enum: ['respond-async'] } }] : []),
        ...(e.idempotent ? [idempotencyKey] : []),
      ],
      ...(e.body
        ? {
            requestBody: {
              required: true,
              content:
                e.body === 'text'
                  ? { 'text/plain': { schema: { type: 'string' } } }
                  : e.body === 'multipart'
                    ? { 'multipart/form-data': { schema: UPLOAD_SCHEMA } }
                    : { 'application/json': { schema: schemaOf(e.body) } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version: '0.1.0',
      description:
        "Job-queue backed API: an OpenAI-compatible embeddings gateway with upstream channels, one-api compatible accounts (users, API keys, redemption codes), a content store and mail operations. Errors: /v1 uses OpenAI's {error:{message,type,param,code}}; /api/user|token|redemption|channel|log and /api/status the {success,message} envelope; everything else {error}.",
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An sk- API key, or a system access token (GET /api/user/token); the bare token without "Bearer" works too on /api',
        },
        session: { type: 'apiKey', in: 'cookie', name: 'sy_session' },
        basic: { type: 'http', scheme: 'basic' },
      },
    },
    paths,
  };
}

const require = createRequire(import.meta.url);
const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchyard API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body></html>`;

const docsPage = endpoint({ method: 'get', path: '/docs', summary: 'This document, readable', auth: 'none', responses: { 200: 'HTML' } }, (ctx) => {
  ctx.type = 'text/html; charset=utf-8';
  return DOCS_PAGE;
});

/** /openapi.json of `endpoints()` (every router's, read once on first request), /docs and its assets. */
export function docsRouter(p: Platform, endpoints: () => readonly Endpoint[]): ApiRouter {
  let document: unknown;
  const json = endpoint({ method: 'get', path: '/openapi.json', summary: 'This document', auth: 'none', responses: { 200: 'OpenAPI 3.1' } }, () => {
    document ??= openApiDocument(endpoints());
    return document;
  });
  const router = new ApiRouter('Operations', p).add(json, docsPage);
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = "window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', deepLinking: true });\n";
  });
  // Served from the installed package: no CDN, works offline.
  router.get('/docs/assets/:file', (ctx) => {
    // Own keys only: `constructor` or `__proto__` are no assets.
    const type = Object.hasOwn(ASSETS, ctx.params.file!) ? ASSETS[ctx.params.file!] : undefined;
    if (!type) throw notFound(`No such asset: ${ctx.params.file}`);
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(SWAGGER_DIR, ctx.params.file!));
  });
  return router;
}
