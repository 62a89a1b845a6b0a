// HTTP routes of embeddings: OpenAI's embeddings and models endpoints, with OpenAI's error shape.
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { authorizeApiKey } from '../http/auth.js';
import { ApiRouter, ok, openaiError } from '../http/route.js';
import { AppError, badRequest, forbidden, notFound } from '../errors.js';
import { refundQuota, reserveQuota, settleQuota } from '../accounts/store.js';
import { modelAllowed } from '../accounts/tokens.js';
import { type CallInfo, consumeEntry, errorEntry } from '../logs/entries.js';
import { EmbeddingsCoalescer } from './coalescer.js';
import { float32ArrayToJson, float32View } from './float32.js';
import { relayCall } from './upstream.js';
import { costOf, LOCAL_MODELS, resolveModel } from './models.js';
import { embeddingsBody, embeddingsResponseView, floatsBoundError, MAX_INPUT_TOKENS, MAX_REQUEST_TOKENS, parseEmbeddingsRequest } from './schema.js';
import { countWithin } from './tokenizer.js';
import { loadUseLiteTokenizer, USE_LITE_MODEL } from './use-lite-text.js';

const CREATED = 1_767_225_600; // 2026-01-01, the "created" of the built-in models

export function embeddingsRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Embeddings');
  const coalescer = new EmbeddingsCoalescer(p);

  async function embeddings(ctx: Context) {
    const startedAt = performance.now(); // the elapsed_time of the call's log row
    const principal = await authorizeApiKey(ctx, p);
    const token = principal.token!;
    const req = parseEmbeddingsRequest(ctx.request.body, ctx.params.model);
    const model = await resolveModel(p.config, p.channels, req.model);
    if (!modelAllowed(token.models, req.model)) {
      throw forbidden(`This API key may not use the model '${req.model}'.`, { code: 'model_not_allowed', type: 'invalid_request_error', param: 'model' });
    }
    if (model.kind === 'local' && req.dimensions !== undefined && req.dimensions > model.maxDimensions) {
      throw badRequest(`Invalid 'dimensions': ${req.dimensions} is greater than the maximum of ${model.maxDimensions} for ${model.name}.`, {
        param: 'dimensions',
        type: 'invalid_request_error',
      });
    }
    if (model.kind === 'upstream' && req.dimensions !== undefined && req.dimensions > 3072) {
      throw badRequest(`Invalid 'dimensions': ${req.dimensions} is greater than the maximum of 3072.`, { param: 'dimensions', type: 'invalid_request_error' });
    }
    if (model.kind === 'local') {
      const tooMuch = floatsBoundError(model.name, req.inputs.length, req.dimensions ?? model.defaultDimensions, req.dimensions !== undefined);
      if (tooMuch) throw tooMuch;
    }

    const tokens: number[] = new Array(req.inputs.length);
    // use-lite counts (and reads) its own pieces, at most USE_LITE_MAX_TOKENS per input; only its tokenizer loads here, never the model.
    const pieces = model.name === USE_LITE_MODEL ? await loadUseLiteTokenizer() : null;
    let total = 0;
    for (let i = 0; i < req.inputs.length; i++) {
      const n = countWithin(req.inputs[i]!, MAX_INPUT_TOKENS);
      if (n === false) {
        throw badRequest(`This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, but input[${i}] is longer. Shorten it.`, {
          param: `input[${i}]`,
          code: 'context_length_exceeded',
        });
      }
      tokens[i] = n;
      if (pieces) {
        const why = req.allowUnsupportedText ? null : pieces.unsupported(req.inputs[i]!);
        if (why) {
          throw badRequest(
            `input[${i}] is ${why}, which ${USE_LITE_MODEL} (an English model) does not know: its vector would be noise. Use local-hash-v1 or an upstream model for it, or send "allow_unsupported_text": true to embed it anyway.`,
            { param: `input[${i}]`, code: 'unsupported_text' },
          );
        }
        tokens[i] = pieces.tokenize(req.inputs[i]!).count;
      }
      total += n;
      if (total > MAX_REQUEST_TOKENS)
        throw badRequest(`The request has more than ${MAX_REQUEST_TOKENS} tokens in all; send fewer inputs per request.`, {
          param: 'input',
          code: 'max_tokens_per_request',
        });
    }

    // Reserve the quota this call will cost before doing any work; settle once the usage is known.
    const cost = costOf(total, model.price);
    const tok = { id: token.id, unlimited: token.unlimited_quota };
    if (cost > 0) {
      const r = await reserveQuota(p.db, principal.user.id, tok, cost);
      if (!r.ok) {
        const whose = r.which === 'user' ? "your account's quota" : "this API key's remain_quota";
        throw new AppError(403, `Insufficient quota: this call costs ${cost} and ${whose} has ${r.left} left.`, {
          code: r.which === 'user' ? 'insufficient_user_quota' : 'insufficient_token_quota',
          type: 'insufficient_quota',
        });
      }
    }
    // Who called what, for the call's consume or error row (src/logs).
    const logCall: CallInfo = { user: principal.user, token: { id: token.id, name: token.name }, model: req.model, requestId: ctx.state.requestId, startedAt };
    let outcome: { vectors: Buffer[]; promptTokens: number; channelId?: number };
    try {
      const call = { model: req.model, dimensions: req.dimensions, inputs: req.inputs, tokens };
      // Models computed here go to the workers, gathered into jobs; upstream calls are relayed by this process.
      if (model.kind === 'upstream') outcome = await relayCall(p, model, call, p.config.SYNC_WAIT_MS);
      else {
        const done = await coalescer.submit(call);
        if (!done.ok) throw AppError.fromJSON(done.error);
        outcome = { vectors: done.vectors.map((v) => Buffer.from(v, 'base64')), promptTokens: done.promptTokens };
      }
    } catch (err) {
      // The refund and the call's error row (type 5) in one transaction.
      await refundQuota(p.db, principal.user.id, tok, cost, errorEntry(logCall, err)).catch((e) => ctx.state.log?.error({ err: e }, 'quota refund failed'));
      throw err;
    }
    const promptTokens = outcome.promptTokens;
    // The consume row: written in settleQuota's transaction with the charge; free local calls aggregated per minute.
    const consume = consumeEntry(logCall, {
      quota: costOf(promptTokens, model.price),
      promptTokens,
      price: model.price,
      channelId: outcome.channelId,
      cacheHit: model.kind === 'upstream' && outcome.channelId === undefined,
    });
    if (cost > 0 || model.price > 0 || model.kind === 'upstream') {
      try {
        await settleQuota(p.db, principal.user.id, tok, cost, consume.quota ?? 0, consume);
      } catch (err) {
        // Neither the charge nor its row was written: the reservation goes back, with an error row.
        await refundQuota(p.db, principal.user.id, tok, cost, errorEntry(logCall, err)).catch((e) => ctx.state.log?.error({ err: e }, 'quota refund failed'));
        throw err;
      }
    } else p.usage.record(principal.user.id, token.id, consume);

    ctx.type = 'application/json';
    ctx.body = responseJson(req.model, outcome.vectors, req.encodingFormat === 'base64', promptTokens);
  }

  const create = {
    method: 'post',
    path: '/v1/embeddings',
    summary: 'Create embeddings (OpenAI compatible)',
    auth: 'apiKey',
    body: embeddingsBody,
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
  router.endpoint(create, embeddings);
  const engines = {
    method: 'post',
    path: '/v1/engines/:model/embeddings',
    summary: 'Create embeddings; the path model is the fallback for the body model',
    auth: 'apiKey',
    body: embeddingsBody,
    responses: { 200: ok('as /v1/embeddings', embeddingsResponseView), 400: ok('invalid request', openaiError) },
  } as const;
  router.endpoint(engines, embeddings);

  const modelObject = (id: string, ownedBy: string) => ({ id, object: 'model', created: CREATED, owned_by: ownedBy });

  async function visibleModels(ctx: Context) {
    const { token } = await authorizeApiKey(ctx, p);
    const upstream = await p.channels.servedModels();
    return [
      ...LOCAL_MODELS.map((m) => modelObject(m, 'switchyard')),
      ...upstream.filter((m) => !LOCAL_MODELS.includes(m as never)).map((m) => modelObject(m, 'upstream')),
    ].filter((m) => modelAllowed(token!.models, m.id));
  }

  router.endpoint(
    { method: 'get', path: '/v1/models', summary: 'Models this key may use', auth: 'apiKey', responses: { 200: 'OpenAI model list' } },
    async (ctx) => {
      ctx.body = { object: 'list', data: await visibleModels(ctx) };
    },
  );

  const model = {
    method: 'get',
    path: '/v1/models/:model',
    summary: 'One model',
    auth: 'apiKey',
    responses: { 200: 'OpenAI model object', 404: ok('unknown or not allowed', openaiError) },
  } as const;
  router.endpoint(model, async (ctx) => {
    const found = (await visibleModels(ctx)).find((m) => m.id === ctx.params.model);
    if (!found) throw notFound(`The model '${ctx.params.model}' does not exist or you do not have access to it.`, { code: 'model_not_found', param: 'model' });
    ctx.body = found;
  });

  return router;
}

/**
 * OpenAI's response, written as a string: the vectors are the bulk of it, each float printed as the
 * shortest decimal of its float32 value (src/embeddings/float32.ts), as OpenAI prints them.
 */
function responseJson(model: string, vectors: Buffer[], base64: boolean, promptTokens: number): string {
  const data = vectors.map(
    (v, index) => `{"object":"embedding","index":${index},"embedding":${base64 ? `"${v.toString('base64')}"` : float32ArrayToJson(float32View(v))}}`,
  );
  return `{"object":"list","data":[${data.join(',')}],"model":${JSON.stringify(model)},"usage":{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens}}}`;
}
