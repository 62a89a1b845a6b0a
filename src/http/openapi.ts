// /openapi.json (OpenAPI 3.1), built from the zod schemas that validate the requests, and /docs to read it.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Router } from '@koa/router';
import { z } from 'zod';
import * as accounts from '../accounts/schema.js';
import * as channels from '../channels/schema.js';
import * as content from '../content/schema.js';
import { embeddingsBody } from '../embeddings/schema.js';
import * as mail from '../mail/schema.js';

type Auth = 'none' | 'user' | 'admin' | 'apiKey' | 'adminBasic';

export interface Endpoint {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Koa form (`/api/user/:id`); written as `{id}` in the document. */
  path: string;
  tag: string;
  summary: string;
  auth: Auth;
  body?: z.ZodType | 'text';
  query?: z.ZodObject;
  responses: Record<number, string | { description: string; schema?: z.ZodType }>;
  /** Answers 202 with Prefer: respond-async or when SYNC_WAIT_MS runs out. */
  job?: boolean;
}

// ---- response shapes (documentation only) ------------------------------------------------------

const envelope = (data?: z.ZodType) => z.object({ success: z.boolean(), message: z.string(), ...(data ? { data } : {}) });
const plainError = z.object({ error: z.string() });
const openaiError = z.object({ error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }) });
const accepted = z.object({ jobId: z.string(), state: z.enum(['waiting', 'active', 'delayed', 'completed', 'failed']), statusUrl: z.string() });
const user = z.object({ id: z.number(), username: z.string(), display_name: z.string(), role: z.number(), status: z.number(), email: z.string(), quota: z.number(), used_quota: z.number(), request_count: z.number(), group: z.string(), created_at: z.string() });
const token = z.object({ id: z.number(), user_id: z.number(), key: z.string(), name: z.string(), status: z.number(), created_time: z.number(), accessed_time: z.number(), expired_time: z.number(), remain_quota: z.number(), unlimited_quota: z.boolean(), used_quota: z.number(), models: z.string(), subnet: z.string() });
const item = z.object({ id: z.string(), source: z.string(), url: z.string(), title: z.string().nullable(), summary: z.string(), content: z.string(), score: z.number(), analyzedBy: z.string().nullable(), analyzedAt: z.string(), createdAt: z.string(), updatedAt: z.string() });
const batchResult = z.object({ success: z.number(), failed: z.number(), total: z.number(), errors: z.array(z.object({ index: z.number(), url: z.string(), error: z.string() })), created: z.array(z.object({ index: z.number(), id: z.string(), url: z.string() })) });
const jobView = z.object({ id: z.string(), queue: z.string(), name: z.string(), state: z.string(), progress: z.unknown(), result: z.unknown(), error: z.object({ status: z.number(), message: z.string(), code: z.string().optional() }).nullable(), attempts: z.number(), createdAt: z.string(), processedAt: z.string().nullable(), finishedAt: z.string().nullable() });
const address = z.object({ name: z.string(), address: z.string() });
const message = z.object({ id: z.string(), uid: z.number(), mailbox: z.enum(['INBOX', 'Junk']), messageId: z.string().nullable(), from: address.nullable(), to: z.array(address), subject: z.string(), date: z.string().nullable(), text: z.string().nullable(), html: z.string().nullable(), send: z.string().nullable(), snippet: z.string().optional() });
const embeddingsResponse = z.object({ object: z.literal('list'), data: z.array(z.object({ object: z.literal('embedding'), index: z.number(), embedding: z.union([z.array(z.number()), z.string()]) })), model: z.string(), usage: z.object({ prompt_tokens: z.number(), total_tokens: z.number() }) });
const mailAccount = z.object({ id: z.number(), owner_id: z.number(), email: z.string(), auth_type: z.enum(['password', 'oauth2']), client_id: z.string().nullable(), imap: z.object({ host: z.string(), port: z.number(), secure: z.boolean() }), smtp: z.object({ host: z.string(), port: z.number(), secure: z.boolean() }), last_error: z.string().nullable(), last_used_at: z.string().nullable(), created_at: z.string(), updated_at: z.string() });

const ok = (description: string, schema?: z.ZodType) => ({ description, schema });
const B = (data?: z.ZodType) => envelope(data);

/** Every route of the API. test/openapi.test.ts checks this list against the routers. */
export const endpoints: Endpoint[] = [
  // health and operations
  { method: 'get', path: '/healthz', tag: 'Operations', summary: 'The process is up', auth: 'none', responses: { 200: 'ok' } },
  { method: 'get', path: '/readyz', tag: 'Operations', summary: 'Postgres and Redis answer', auth: 'none', responses: { 200: 'ready', 503: 'a dependency is unavailable (which one is in checks)' } },
  { method: 'get', path: '/metrics', tag: 'Operations', summary: 'Prometheus metrics', auth: 'none', responses: { 200: 'text exposition format' } },
  { method: 'get', path: '/openapi.json', tag: 'Operations', summary: 'This document', auth: 'none', responses: { 200: 'OpenAPI 3.1' } },
  { method: 'get', path: '/docs', tag: 'Operations', summary: 'This document, readable', auth: 'none', responses: { 200: 'HTML' } },

  // area A
  { method: 'post', path: '/v1/embeddings', tag: 'A. Embeddings', summary: 'Create embeddings (OpenAI compatible)', auth: 'apiKey', body: embeddingsBody, responses: { 200: ok('vectors, one per input, in order', embeddingsResponse), 400: ok('invalid request', openaiError), 401: 'missing, unknown, disabled, expired or exhausted key', 403: 'model not allowed, address not allowed, user disabled, or quota short', 404: 'unknown model', 429: 'every channel rate limited', 502: 'upstream failure', 503: 'no enabled channel', 504: 'timed out' } },
  { method: 'post', path: '/v1/engines/:model/embeddings', tag: 'A. Embeddings', summary: 'Create embeddings; the path model is the fallback for the body model', auth: 'apiKey', body: embeddingsBody, responses: { 200: ok('as /v1/embeddings', embeddingsResponse), 400: ok('invalid request', openaiError) } },
  { method: 'get', path: '/v1/models', tag: 'A. Embeddings', summary: 'Models this key may use', auth: 'apiKey', responses: { 200: 'OpenAI model list' } },
  { method: 'get', path: '/v1/models/:model', tag: 'A. Embeddings', summary: 'One model', auth: 'apiKey', responses: { 200: 'OpenAI model object', 404: ok('unknown or not allowed', openaiError) } },
  { method: 'get', path: '/api/channel/', tag: 'A. Channels', summary: 'List upstream channels', auth: 'admin', query: accounts.pageQuery, responses: { 200: 'envelope with channels (keys as hints)' } },
  { method: 'get', path: '/api/channel/search', tag: 'A. Channels', summary: 'Search channels by name or model', auth: 'admin', query: accounts.pageQuery, responses: { 200: 'envelope with channels' } },
  { method: 'post', path: '/api/channel/', tag: 'A. Channels', summary: 'Add an upstream channel (key encrypted, never shown again)', auth: 'admin', body: channels.createChannelBody, responses: { 201: 'envelope with the channel', 400: ok('invalid', B()) } },
  { method: 'get', path: '/api/channel/:id', tag: 'A. Channels', summary: 'One channel', auth: 'admin', responses: { 200: 'envelope with the channel', 404: 'unknown' } },
  { method: 'put', path: '/api/channel/', tag: 'A. Channels', summary: 'Change a channel (id in the body)', auth: 'admin', body: channels.updateChannelBody, responses: { 200: 'envelope with the channel' } },
  { method: 'put', path: '/api/channel/:id', tag: 'A. Channels', summary: 'Change a channel', auth: 'admin', body: channels.updateChannelBody.partial({ id: true }), responses: { 200: 'envelope with the channel' } },
  { method: 'delete', path: '/api/channel/:id', tag: 'A. Channels', summary: 'Delete a channel', auth: 'admin', responses: { 200: 'envelope', 404: 'unknown' } },

  // area B
  { method: 'post', path: '/api/user/login', tag: 'B. Users', summary: 'Log in: sets the sy_session cookie', auth: 'none', body: accounts.loginBody, responses: { 200: ok('envelope with the user', B(user)), 401: 'wrong username or password', 403: 'user disabled', 429: 'too many failed logins (Retry-After)' } },
  { method: 'get', path: '/api/user/logout', tag: 'B. Users', summary: 'End the session', auth: 'none', responses: { 200: 'envelope' } },
  { method: 'get', path: '/api/user/self', tag: 'B. Users', summary: 'The caller', auth: 'user', responses: { 200: ok('envelope with the user', B(user)) } },
  { method: 'put', path: '/api/user/self', tag: 'B. Users', summary: 'Change own display name, email or password', auth: 'user', body: accounts.updateSelfBody, responses: { 200: 'envelope with the user' } },
  { method: 'get', path: '/api/user/token', tag: 'B. Users', summary: 'Make (rotate) the system access token', auth: 'user', responses: { 200: ok('envelope with the token', B(z.string())) } },
  { method: 'post', path: '/api/user/topup', tag: 'B. Redemption codes', summary: 'Credit a redemption code to the caller', auth: 'user', body: accounts.topupBody, responses: { 200: ok('envelope with the quota credited', B(z.number())), 400: 'used, disabled or unknown code' } },
  { method: 'get', path: '/api/user/', tag: 'B. Users', summary: 'List users', auth: 'admin', query: accounts.pageQuery, responses: { 200: ok('envelope with users; X-Total-Count', B(z.array(user))) } },
  { method: 'get', path: '/api/user/search', tag: 'B. Users', summary: 'Search users', auth: 'admin', query: accounts.pageQuery, responses: { 200: 'envelope with users' } },
  { method: 'post', path: '/api/user/', tag: 'B. Users', summary: 'Create a user (role below your own)', auth: 'admin', body: accounts.createUserBody, responses: { 201: ok('envelope with the user', B(user)), 400: 'invalid', 403: 'role too high', 409: 'username taken' } },
  { method: 'get', path: '/api/user/:id', tag: 'B. Users', summary: 'One user', auth: 'admin', responses: { 200: 'envelope with the user', 404: 'unknown' } },
  { method: 'put', path: '/api/user/', tag: 'B. Users', summary: 'Change a user (id in the body)', auth: 'admin', body: accounts.updateUserBody, responses: { 200: 'envelope with the user' } },
  { method: 'put', path: '/api/user/:id', tag: 'B. Users', summary: 'Change a user', auth: 'admin', body: accounts.updateUserBody, responses: { 200: 'envelope with the user', 403: 'role too high' } },
  { method: 'delete', path: '/api/user/:id', tag: 'B. Users', summary: 'Delete a user', auth: 'admin', responses: { 200: 'envelope', 404: 'unknown' } },
  { method: 'get', path: '/api/token/', tag: 'B. Tokens', summary: "The caller's API keys (masked)", auth: 'user', query: accounts.pageQuery, responses: { 200: ok('envelope with tokens', B(z.array(token))) } },
  { method: 'get', path: '/api/token/search', tag: 'B. Tokens', summary: "Search the caller's API keys by name", auth: 'user', query: accounts.pageQuery, responses: { 200: 'envelope with tokens' } },
  { method: 'post', path: '/api/token/', tag: 'B. Tokens', summary: 'Create an API key: the whole sk- key is in this answer only', auth: 'user', body: accounts.createTokenBody, responses: { 201: ok('envelope with the token and its key', B(token)), 400: 'invalid' } },
  { method: 'get', path: '/api/token/:id', tag: 'B. Tokens', summary: 'One API key (masked)', auth: 'user', responses: { 200: 'envelope with the token', 404: 'unknown or not yours' } },
  { method: 'put', path: '/api/token/', tag: 'B. Tokens', summary: 'Change an API key (id in the body; ?status_only=1 changes only status)', auth: 'user', body: accounts.updateTokenBody, responses: { 200: 'envelope with the token', 400: 'cannot enable while expired or exhausted' } },
  { method: 'put', path: '/api/token/:id', tag: 'B. Tokens', summary: 'Change an API key', auth: 'user', body: accounts.updateTokenBody.partial({ id: true }), responses: { 200: 'envelope with the token' } },
  { method: 'delete', path: '/api/token/:id', tag: 'B. Tokens', summary: 'Delete an API key', auth: 'user', responses: { 200: 'envelope', 404: 'unknown or not yours' } },
  { method: 'get', path: '/api/redemption/', tag: 'B. Redemption codes', summary: 'List redemption codes', auth: 'admin', query: accounts.pageQuery, responses: { 200: 'envelope with codes' } },
  { method: 'get', path: '/api/redemption/search', tag: 'B. Redemption codes', summary: 'Search codes by name or id', auth: 'admin', query: accounts.pageQuery, responses: { 200: 'envelope with codes' } },
  { method: 'post', path: '/api/redemption/', tag: 'B. Redemption codes', summary: 'Create 1-100 codes', auth: 'admin', body: accounts.createRedemptionBody, responses: { 201: ok('envelope with the codes', B(z.array(z.string()))) } },
  { method: 'get', path: '/api/redemption/:id', tag: 'B. Redemption codes', summary: 'One code', auth: 'admin', responses: { 200: 'envelope with the code', 404: 'unknown' } },
  { method: 'put', path: '/api/redemption/', tag: 'B. Redemption codes', summary: 'Rename, re-price, enable or disable a code', auth: 'admin', body: accounts.updateRedemptionBody, responses: { 200: 'envelope with the code' } },
  { method: 'delete', path: '/api/redemption/:id', tag: 'B. Redemption codes', summary: 'Delete a code', auth: 'admin', responses: { 200: 'envelope', 404: 'unknown' } },

  // jobs
  { method: 'post', path: '/api/jobs/ping', tag: 'Jobs', summary: 'Admins: run a no-op job through a queue (?queue=content|embeddings|mail); answers the worker and the round trip', auth: 'admin', responses: { 200: ok('who ran it', z.object({ queue: z.string(), worker: z.string(), roundTripMs: z.number() })), 504: 'no worker consumes that queue' } },
  { method: 'get', path: '/api/jobs/:id', tag: 'Jobs', summary: 'A job you submitted (admins: any)', auth: 'user', responses: { 200: ok('the job', jobView), 404: ok('unknown, expired or not yours', plainError) } },
  { method: 'get', path: '/api/jobs/:id/events', tag: 'Jobs', summary: 'Server-sent events: state, progress, then completed or failed', auth: 'user', responses: { 200: 'text/event-stream' } },

  // area C
  { method: 'post', path: '/api/content', tag: 'C. Content', summary: 'Store an item (an existing url is updated in place)', auth: 'user', body: content.contentItemBody, responses: { 201: ok('created', item), 200: ok('updated', item), 400: ok('missing fields, score out of range, or a field named', plainError), 500: ok('Failed to create content', plainError) } },
  { method: 'post', path: '/api/content/batch', tag: 'C. Content', summary: 'Store 1-100 items in one job', auth: 'user', body: z.array(content.contentItemBody).min(1).max(100), job: true, responses: { 200: ok('per-entry outcome', batchResult), 400: ok('not an array, empty, or over 100', plainError) } },
  { method: 'get', path: '/api/content', tag: 'C. Content', summary: 'List items (bare array; Link rel=next; X-Total-Count)', auth: 'user', query: content.listQuery, responses: { 200: ok('items', z.array(item)), 400: ok('invalid parameter', plainError) } },
  { method: 'get', path: '/api/content/:id', tag: 'C. Content', summary: 'One item', auth: 'user', responses: { 200: ok('the item', item), 404: ok('Content not found', plainError) } },
  { method: 'delete', path: '/api/content/:id', tag: 'C. Content', summary: 'Delete an item', auth: 'user', responses: { 200: ok('{success:true}', z.object({ success: z.literal(true) })), 404: ok('Content not found', plainError) } },
  { method: 'get', path: '/api/stats', tag: 'C. Content', summary: 'Counts by source', auth: 'user', responses: { 200: ok('totals', z.object({ total: z.number(), bySource: z.record(z.string(), z.number()) })) } },

  // area D
  { method: 'post', path: '/api/mail/accounts', tag: 'D. Mail', summary: 'Add (or replace) a mail account', auth: 'user', body: mail.createAccountBody, responses: { 201: ok('created', mailAccount), 200: ok('replaced', mailAccount), 400: ok('invalid', plainError) } },
  { method: 'get', path: '/api/mail/accounts', tag: 'D. Mail', summary: 'Your accounts (admins: all), never their secrets', auth: 'user', responses: { 200: ok('accounts', z.array(mailAccount)) } },
  { method: 'delete', path: '/api/mail/accounts/:email', tag: 'D. Mail', summary: 'Delete an account', auth: 'user', responses: { 200: '{success:true}', 404: ok('unknown account', plainError) } },
  { method: 'post', path: '/api/mail/accounts/import', tag: 'D. Mail', summary: 'Import email----password----client_id----refresh_token lines', auth: 'user', body: 'text', responses: { 200: 'per-line outcome' } },
  ...(
    [
      ['/api/mail-new', 'The newest message of INBOX or Junk (message: null when empty)', mail.mailNewParams, z.object({ email: z.string(), mailbox: z.string(), message: message.nullable() })],
      ['/api/mail-all', 'Messages, newest first', mail.mailAllParams, z.object({ email: z.string(), mailbox: z.string(), messages: z.array(message) })],
      ['/api/vendor-email', 'Messages matching from/subject/since, read from the server now', mail.vendorParams, z.object({ email: z.string(), mailbox: z.string(), messages: z.array(message) })],
      ['/api/vendor-email/fast', 'The same, from the stored copy after fetching only newer UIDs', mail.vendorParams, z.object({ email: z.string(), mailbox: z.string(), messages: z.array(message) })],
      ['/api/vendor-email/preview', 'Headers and a 200-character snippet', mail.vendorParams, z.object({ email: z.string(), mailbox: z.string(), messages: z.array(message) })],
      ['/api/vendor-email/extract-code', 'The verification code of the newest matching message in INBOX and Junk; wait up to 120 s for one', mail.codeParams, z.object({ email: z.string(), code: z.string(), message: z.object({ id: z.string(), mailbox: z.string(), from: address.nullable(), subject: z.string(), date: z.string().nullable() }) })],
      ['/api/process-inbox', 'Empty INBOX', mail.purgeParams, z.object({ email: z.string(), mailbox: z.string(), deleted: z.number() })],
      ['/api/process-junk', 'Empty Junk', mail.purgeParams, z.object({ email: z.string(), mailbox: z.string(), deleted: z.number() })],
      ['/api/send-mail', 'Send through the account', mail.sendParams, z.object({ messageId: z.string(), accepted: z.array(z.string()), rejected: z.array(z.string()) })],
    ] as const
  ).flatMap(([p, summary, schema, answer]) =>
    (['get', 'post'] as const).map(
      (method): Endpoint => ({
        method,
        path: p,
        tag: 'D. Mail',
        summary,
        auth: 'user',
        job: true,
        ...(method === 'get' ? { query: schema as z.ZodObject } : { body: schema }),
        responses: { 200: ok('answer', answer), 400: ok('bad parameters', plainError), 404: ok('unknown account (or no code found)', plainError), 502: ok('the mail server or Microsoft refused (reason given)', plainError), 504: ok('the mail server timed out', plainError) },
      }),
    ),
  ),
  { method: 'get', path: '/admin/queues', tag: 'Operations', summary: 'Bull Board (admins: session cookie or HTTP Basic)', auth: 'adminBasic', responses: { 200: 'HTML', 401: 'Basic challenge', 403: 'not an admin' } },
];

const schemaOf = (s: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const SECURITY: Record<Auth, unknown[]> = {
  none: [],
  user: [{ bearer: [] }, { session: [] }],
  admin: [{ bearer: [] }, { session: [] }],
  apiKey: [{ bearer: [] }],
  adminBasic: [{ session: [] }, { basic: [] }],
};

let cached: unknown;

export function openApiDocument(): unknown {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const e of endpoints) {
    const p = e.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const pathParams = [...e.path.matchAll(/:([A-Za-z]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = e.query
      ? Object.entries(e.query.shape).map(([name, s]) => ({ name, in: 'query', required: !(s as z.ZodType).safeParse(undefined).success, schema: schemaOf(s as z.ZodType) }))
      : [];
    const responses: Record<string, unknown> = {};
    for (const [status, r] of Object.entries(e.responses)) {
      const { description, schema } = typeof r === 'string' ? { description: r, schema: undefined } : r;
      responses[status] = schema ? { description, content: { 'application/json': { schema: schemaOf(schema) } } } : { description };
    }
    if (e.job) responses['202'] = { description: 'Prefer: respond-async, or the wait (SYNC_WAIT_MS) ran out: the job goes on', content: { 'application/json': { schema: schemaOf(accepted) } } };
    if (e.auth !== 'none') responses['401'] ??= { description: 'no or invalid credentials' };
    (paths[p] ??= {})[e.method] = {
      tags: [e.tag],
      summary: e.summary,
      ...(e.auth === 'admin' || e.auth === 'adminBasic' ? { description: 'Admins (role 10) and root only.' } : {}),
      security: SECURITY[e.auth],
      parameters: [...pathParams, ...query, ...(e.job ? [{ name: 'Prefer', in: 'header', schema: { type: 'string', enum: ['respond-async'] } }] : [])],
      ...(e.body
        ? { requestBody: { required: true, content: e.body === 'text' ? { 'text/plain': { schema: { type: 'string' } } } : { 'application/json': { schema: schemaOf(e.body) } } } }
        : {}),
      responses,
    };
  }
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version: '0.1.0',
      description: 'Job-queue backed API: an OpenAI-compatible embeddings gateway (A), one-api compatible management (B), a content store (C) and mail operations (D). Errors: /v1 uses OpenAI\'s {error:{message,type,param,code}}; /api/user|token|redemption|channel the {success,message} envelope; everything else {error}.',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An sk- API key, or a system access token (GET /api/user/token); the bare token without "Bearer" works too on /api' },
        session: { type: 'apiKey', in: 'cookie', name: 'sy_session' },
        basic: { type: 'http', scheme: 'basic' },
      },
    },
    paths,
  };
  return cached;
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

export function docsRouter(): Router {
  const router = new Router();
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApiDocument();
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_PAGE;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = "window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', deepLinking: true });\n";
  });
  // Served from the installed package: no CDN, works offline.
  router.get('/docs/assets/:file', (ctx) => {
    const type = ASSETS[ctx.params.file!];
    if (!type) return; // falls through to 404
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(SWAGGER_DIR, ctx.params.file!));
  });
  return router;
}
