// HTTP routes of embeddings: OpenAI's embeddings and models endpoints, with OpenAI's error shape.
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { authorizeApiKey } from '../http/auth.js';
import { ApiRouter, ok, openaiError } from '../http/route.js';
import { AppError, badRequest, forbidden, notFound } from '../errors.js';
import { assertTaken } from '../accounts/ledger.js';
import { modelAllowed } from '../accounts/tokens.js';
import { type CallInfo, consumeEntry, errorEntry } from '../logs/entries.js';
import { EmbeddingsCoalescer } from './coalescer.js';
import { float32ArrayToJsonBytes, float32View } from './float32.js';
import { bigWorkTurn, mapInTurns } from './turns.js';
import { billedUpstreamCall, type UpstreamVectors, vectorCache } from './upstream.js';
import type { HotVectors } from './store.js';
import { costOf, LOCAL_MODELS, resolveModel } from './models.js';
import { LOCAL_HASH_MODEL } from './local-hash.js';
import { embeddingsBody, embeddingsResponseView, floatsBoundError, parseEmbeddingsRequest } from './schema.js';
import { countInputs } from './input-limits.js';
import { loadUseLiteTokenizer, USE_LITE_MODEL } from './use-lite-text.js';

const CREATED = 1_767_225_600; // 2026-01-01, the "created" of the built-in models

export function embeddingsRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Embeddings');
  const coalescers = {
    [LOCAL_HASH_MODEL]: new EmbeddingsCoalescer(p, p.config.EMBEDDINGS_MAX_IN_FLIGHT),
    [USE_LITE_MODEL]: new EmbeddingsCoalescer(p, p.config.USE_LITE_MAX_IN_FLIGHT),
  };
  const hot = vectorCache(p).hot;

  async function embeddings(ctx: Context) {
    const startedAt = performance.now(); // the elapsed_time of the call's log row
    const principal = await authorizeApiKey(ctx, p);
    const token = principal.token!;
    const req = parseEmbeddingsRequest(ctx.request.body, ctx.params.model);
    const model = await resolveModel(p.config, p.channels, req.model, principal.user);
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

    // use-lite counts (and reads) its own pieces, at most USE_LITE_MAX_TOKENS per input; only its tokenizer loads here, never the model.
    const useLite = model.name === USE_LITE_MODEL ? { pieces: await loadUseLiteTokenizer(), allowUnsupportedText: req.allowUnsupportedText } : null;
    const tokens = await countInputs(req.inputs, useLite);
    // What the call is charged for: its usage, which for use-lite counts its own pieces (not cl100k's tokens).
    const billed = tokens.reduce((a, b) => a + b, 0);

    // Who pays, and who called what, for the call's consume or error row (src/logs).
    const payer = { userId: principal.user.id, token: { id: token.id, unlimited: token.unlimited_quota } };
    const logCall: CallInfo = { user: principal.user, token: { id: token.id, name: token.name }, model: req.model, requestId: ctx.state.requestId, startedAt };
    const cost = costOf(billed, model.price);
    const call = { model: req.model, dimensions: req.dimensions, inputs: req.inputs, tokens };
    const consumeOf = (o: { promptTokens: number; channelId?: number }) =>
      consumeEntry(logCall, {
        quota: costOf(o.promptTokens, model.price),
        promptTokens: o.promptTokens,
        price: model.price,
        channelId: o.channelId,
        cacheHit: model.kind === 'upstream' && o.channelId === undefined,
      });

    const base64 = req.encodingFormat === 'base64';
    ctx.type = 'application/json';
    if (model.kind === 'upstream') {
      // Upstream calls are relayed by this process, and paid for with the cache's round trips (upstream.ts).
      const bill = { payer, cost, consume: consumeOf, failure: (err: unknown) => errorEntry(logCall, err) };
      ctx.body = await billedUpstreamCall(p, model, call, bill, (answer) => responseJson(req.model, answer, base64, hot));
      return;
    }
    // Models computed here go to the workers, gathered into jobs. Reserve what the call will cost first; settle once the usage is known.
    let outcome: Answer;
    const held = await p.ledger.reserve(payer, cost);
    assertTaken(held, cost);
    const { reservation } = held;
    try {
      // The workers share model time by caller, and drop what is left of a call whose client has gone (see gone.ts).
      const left = new AbortController();
      const onClose = () => ctx.res.writableFinished || left.abort();
      ctx.res.once('close', onClose);
      const job = { ...call, caller: principal.user.id, call: randomUUID(), deadline: Date.now() + p.config.SYNC_WAIT_MS };
      const done = await coalescers[model.name as keyof typeof coalescers].submit(job, left.signal).finally(() => ctx.res.off('close', onClose));
      if (!done.ok) throw AppError.fromJSON(done.error);
      outcome = { vectors: await decodeVectors(done.vectors), promptTokens: done.promptTokens };
    } catch (err) {
      // The refund and the call's error row (type 5) in one statement.
      await p.ledger.refund(reservation, errorEntry(logCall, err)).catch((e) => ctx.state.log?.error({ err: e }, 'quota refund failed'));
      throw err;
    }
    // The consume row: written with the charge; free local calls' rows by the usage recorder (past a few a minute, aggregated).
    const consume = consumeOf(outcome);
    if (cost > 0 || model.price > 0) {
      try {
        await p.ledger.settle(reservation, consume.quota ?? 0, consume);
      } catch (err) {
        // Neither the charge nor its row was written: the reservation goes back, with an error row.
        await p.ledger.refund(reservation, errorEntry(logCall, err)).catch((e) => ctx.state.log?.error({ err: e }, 'quota refund failed'));
        throw err;
      }
    } else await p.usage.record(principal.user.id, token.id, consume);

    ctx.body = await responseJson(req.model, outcome, base64, hot);
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
    const { token, user } = await authorizeApiKey(ctx, p);
    const upstream = await p.channels.servedModels(user);
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

/** A call's answer: its vectors (for an upstream model, with their keys in the hot cache) and usage. */
type Answer = Pick<UpstreamVectors, 'vectors' | 'keys' | 'promptTokens' | 'channelId'>;

/** Base64 characters decoded in one turn of the event loop at most (~1 ms). */
const DECODE_SLICE_CHARS = 1 << 20;

/** A job's base64 vectors as bytes: a big answer's (~11 MB of base64) in slices, taking turns with other big work (turns.ts). */
const decodeVectors = (vectors: string[]): Promise<Answer['vectors']> =>
  mapInTurns(
    vectors,
    (v) => ({ vector: Buffer.from(v, 'base64'), tokens: 0 }),
    (v) => v.length,
    DECODE_SLICE_CHARS,
  );

/** Floats printed in one turn of the event loop at most (~1 ms), in an answer of more than SLICED_ANSWER_FLOATS. */
const PRINT_SLICE_FLOATS = 16_384;
const SLICED_ANSWER_FLOATS = 65_536;

/**
 * OpenAI's response, written as a string: the vectors are the bulk of it, each float printed as the
 * shortest decimal of its float32 value (src/embeddings/float32.ts), as OpenAI prints them. A cached
 * vector's printed form is kept with it in the hot cache, so a hot input is printed once.
 */
async function responseJson(model: string, answer: Answer, base64: boolean, hot: HotVectors): Promise<Buffer> {
  const parts: Buffer[] = [Buffer.from('{"object":"list","data":[')];
  // Only a big answer is printed in slices; a small one (the bench's sentences, 64 cached inputs) goes in one go.
  const sliced = !base64 && answer.vectors.reduce((n, v) => n + v.vector.length / 4, 0) > SLICED_ANSWER_FLOATS;
  let floats = 0;
  for (let index = 0; index < answer.vectors.length; index++) {
    const v = answer.vectors[index]!;
    parts.push(Buffer.from(`${index ? ',' : ''}{"object":"embedding","index":${index},"embedding":`));
    if (base64) parts.push(Buffer.from(`"${v.vector.toString('base64')}"`, 'latin1'));
    else if (v.json !== undefined) parts.push(v.json);
    else {
      const json = float32ArrayToJsonBytes(float32View(v.vector));
      if (answer.keys) hot.setJson(answer.keys[index]!, v, json);
      parts.push(json);
      // A big answer (up to 2,097,152 floats, ~150 ms of printing) is printed in slices, one slice of all big work
      // per turn of the event loop (turns.ts): other callers' requests are not held for all of it. Small answers never wait.
      floats += v.vector.length / 4;
      if (sliced && floats >= PRINT_SLICE_FLOATS) {
        floats = 0;
        await bigWorkTurn();
      }
    }
    parts.push(Buffer.from('}'));
  }
  parts.push(Buffer.from(`],"model":${JSON.stringify(model)},"usage":{"prompt_tokens":${answer.promptTokens},"total_tokens":${answer.promptTokens}}}`));
  return Buffer.concat(parts);
}
