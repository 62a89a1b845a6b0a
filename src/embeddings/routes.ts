// HTTP routes of embeddings: OpenAI's embeddings and models endpoints, with OpenAI's error shape.
// Each endpoint is declared (src/http/route.ts): the API key is checked and the body parsed before its handler runs.
import type { ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { Principal } from '../accounts/auth.js';
import type { Platform } from '../platform.js';
import { ApiRouter, endpoint, ok, openaiError } from '../http/route.js';
import { embeddingsBody, embeddingsResponseView, type EmbeddingsRequest, modelListView, modelView, parseEmbeddingsBody } from './schema.js';
import { type ClientLeaving, EmbeddingsService, visibleModel, visibleModels } from './service.js';

/** The client has left when its connection closes before the answer was written. */
class ConnectionClosed extends AbortController implements ClientLeaving {
  private readonly res: ServerResponse;
  private readonly onClose: () => void;

  constructor(res: ServerResponse) {
    super();
    this.res = res;
    this.onClose = () => res.writableFinished || this.abort();
    res.once('close', this.onClose);
  }

  stop(): void {
    this.res.off('close', this.onClose);
  }
}

const create = {
  method: 'post',
  path: '/v1/embeddings',
  summary: 'Create embeddings (OpenAI compatible)',
  auth: 'apiKey',
  body: embeddingsBody,
  parseBody: parseEmbeddingsBody,
  idempotent: true,
  responses: {
    200: ok('vectors, one per input, in order', embeddingsResponseView),
    400: ok('invalid request', openaiError),
    401: 'missing, unknown, disabled, expired or exhausted key',
    403: 'model not allowed, address not allowed, user disabled, or quota short',
    404: 'unknown model',
    429: 'every channel rate limited',
    502: 'upstream failure',
    503: 'no enabled channel',
    504: 'timed out',
  },
} as const;

const engines = {
  method: 'post',
  path: '/v1/engines/:model/embeddings',
  summary: 'Create embeddings; the path model is the fallback for the body model',
  auth: 'apiKey',
  body: embeddingsBody,
  parseBody: parseEmbeddingsBody,
  idempotent: true,
  responses: { 200: ok('as /v1/embeddings', embeddingsResponseView), 400: ok('invalid request', openaiError) },
} as const;

const models = endpoint(
  { method: 'get', path: '/v1/models', summary: 'Models this key may use', auth: 'apiKey', responses: { 200: ok('OpenAI model list', modelListView) } },
  async (_ctx, { p, principal }) => ({ object: 'list', data: await visibleModels(p, principal) }),
);

const model = endpoint(
  {
    method: 'get',
    path: '/v1/models/:model',
    summary: 'One model',
    auth: 'apiKey',
    responses: { 200: ok('OpenAI model object', modelView), 404: ok('unknown or not allowed', openaiError) },
  },
  (_ctx, { p, principal, path }) => visibleModel(p, principal, path.model!),
);

export function embeddingsRouter(p: Platform): ApiRouter {
  // One service per router: the process's coalescers. The client is the request's connection.
  const calls = new EmbeddingsService<Context>(p, (ctx) => new ConnectionClosed(ctx.res));
  // The answer's bytes (printed by the service) are the body; the elapsed time in its log row counts from the request's arrival.
  const embed = (ctx: Context, { principal, body }: { principal: Principal; body: EmbeddingsRequest }) => {
    ctx.type = 'application/json';
    return calls.embed(principal, body, ctx, ctx.state.requestId, ctx.state.startedAt ?? performance.now());
  };
  return new ApiRouter('Embeddings', p).add(endpoint(create, embed), endpoint(engines, embed), models, model);
}
