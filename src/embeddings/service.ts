// The embeddings call — the model resolved, the request checked against it, its tokens counted, the caller billed
// (reserved, then settled or refunded, with the call's log row), the vectors computed by the workers or relayed
// upstream — and the models a key may use. No HTTP here: the route hands over the caller and the parsed request and
// gets the answer's bytes back, or an AppError.
import { randomUUID } from 'node:crypto';
import type { Platform } from '../platform.js';
import type { Principal } from '../accounts/auth.js';
import { assertTaken } from '../accounts/ledger.js';
import { modelAllowed } from '../accounts/tokens.js';
import { AppError, badRequest, forbidden, notFound } from '../errors.js';
import { type CallInfo, consumeEntry, errorEntry } from '../logs/entries.js';
import { type Answer, decodeVectors, responseJson } from './answer.js';
import { EmbeddingsCoalescer } from './coalescer.js';
import { countInputs } from './input-limits.js';
import { LOCAL_HASH_MODEL } from './local-hash.js';
import { costOf, LOCAL_MODELS, type ResolvedModel, resolveModel } from './models.js';
import { type EmbeddingsRequest, floatsBoundError } from './schema.js';
import type { HotVectors } from './store.js';
import { billedUpstreamCall, vectorCache } from './upstream.js';
import { loadUseLiteTokenizer, USE_LITE_MODEL } from './use-lite-text.js';

type LocalModel = (typeof LOCAL_MODELS)[number];

/** A call's client leaving before its answer is written, heard on `signal` until `stop()`. */
export interface ClientLeaving {
  readonly signal: AbortSignal;
  stop(): void;
}

/**
 * A parsed request checked for its caller (the model resolved for them, allowed for their key's `models`, the checks
 * zod cannot make) and its tokens counted: what /v1/embeddings and a batch's lines (batch-service.ts) both do.
 */
export async function checkRequest(p: Platform, user: Principal['user'], models: string | null, req: EmbeddingsRequest) {
  const model = await resolveModel(p.config, p.channels, req.model, user);
  if (!modelAllowed(models, req.model)) {
    throw forbidden(`This API key may not use the model '${req.model}'.`, { code: 'model_not_allowed', type: 'invalid_request_error', param: 'model' });
  }
  checkAgainstModel(req, model);
  // use-lite counts (and reads) its own pieces, at most USE_LITE_MAX_TOKENS per input; only its tokenizer loads here, never the model.
  const useLite = model.name === USE_LITE_MODEL ? { pieces: await loadUseLiteTokenizer(), allowUnsupportedText: req.allowUnsupportedText } : null;
  if (req.tokenIds) {
    // Token ids (bounded when parsed): their count is the usage, for every model. use-lite still reads and judges their text.
    if (useLite) await countInputs(req.inputs, useLite);
    return { model, tokens: req.tokenIds.map((ids) => ids.length) };
  }
  return { model, tokens: await countInputs(req.inputs, useLite) };
}

/** The checks of a request against its model that zod cannot make: dimensions within the model's, floats within a request's. */
function checkAgainstModel(req: EmbeddingsRequest, model: ResolvedModel): void {
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
}

/**
 * The embeddings calls of one API process: its coalescers (one per built-in model: calls arriving together share a
 * job, and a model's jobs out at once are bounded) and its hot vectors. Made once, with the process's router.
 * `C` is the route's handle on a call's client: `leaving` hears it go, for a call while it is with the workers.
 */
export class EmbeddingsService<C> {
  private readonly coalescers: Record<LocalModel, EmbeddingsCoalescer>;
  private readonly hot: HotVectors;

  constructor(
    private readonly p: Platform,
    private readonly leaving: (client: C) => ClientLeaving,
  ) {
    this.coalescers = {
      [LOCAL_HASH_MODEL]: new EmbeddingsCoalescer(p, p.config.EMBEDDINGS_MAX_IN_FLIGHT),
      [USE_LITE_MODEL]: new EmbeddingsCoalescer(p, p.config.USE_LITE_MAX_IN_FLIGHT),
    };
    this.hot = vectorCache(p).hot;
  }

  /**
   * One call, paid for: OpenAI's response as bytes. `requestId` and `startedAt` (performance.now()) go in its log row;
   * a call to a built-in model whose client goes while the workers have it is dropped there (see gone.ts).
   */
  async embed(principal: Principal, req: EmbeddingsRequest, client: C, requestId: string | undefined, startedAt: number): Promise<Buffer> {
    const p = this.p;
    const token = principal.token!;
    const { model, tokens } = await checkRequest(p, principal.user, token.models, req);
    // What the call is charged for: its usage, which for use-lite counts its own pieces (not cl100k's tokens).
    const billed = tokens.reduce((a, b) => a + b, 0);

    // Who pays, and who called what, for the call's consume or error row (src/logs).
    const payer = { userId: principal.user.id, token: { id: token.id, unlimited: token.unlimited_quota } };
    const logCall: CallInfo = { user: principal.user, token: { id: token.id, name: token.name }, model: req.model, requestId, startedAt };
    const cost = costOf(billed, model.price);
    const call = { model: req.model, dimensions: req.dimensions, inputs: req.inputs, tokens };
    // Token ids go on only to an upstream (relay.ts): the built-in models embed their text.
    const upstreamCall = req.tokenIds ? { ...call, tokenIds: req.tokenIds } : call;
    const consumeOf = (o: { promptTokens: number; channelId?: number }) =>
      consumeEntry(logCall, {
        quota: costOf(o.promptTokens, model.price),
        promptTokens: o.promptTokens,
        price: model.price,
        channelId: o.channelId,
        cacheHit: model.kind === 'upstream' && o.channelId === undefined,
      });

    const base64 = req.encodingFormat === 'base64';
    if (model.kind === 'upstream') {
      // Upstream calls are relayed by this process, and paid for with the cache's round trips (upstream.ts).
      const bill = { payer, cost, consume: consumeOf, failure: (err: unknown) => errorEntry(logCall, err) };
      return billedUpstreamCall(p, model, upstreamCall, bill, (answer) => responseJson(req.model, answer, base64, this.hot));
    }
    // Models computed here go to the workers, gathered into jobs. Reserve what the call will cost first; settle once the usage is known.
    let outcome: Answer;
    const held = await p.ledger.reserve(payer, cost);
    assertTaken(held, cost);
    const { reservation } = held;
    try {
      // The workers share model time by caller, and drop what is left of a call whose client has gone (see gone.ts).
      const left = this.leaving(client);
      const job = { ...call, caller: principal.user.id, call: randomUUID(), deadline: Date.now() + p.config.SYNC_WAIT_MS };
      const done = await this.coalescers[model.name as LocalModel].submit(job, left.signal).finally(() => left.stop());
      if (!done.ok) throw AppError.fromJSON(done.error);
      outcome = { vectors: await decodeVectors(done.vectors), promptTokens: done.promptTokens };
    } catch (err) {
      // The refund and the call's error row (type 5) in one statement.
      await p.ledger.refund(reservation, errorEntry(logCall, err)).catch((e) => this.refundFailed(e, requestId));
      throw err;
    }
    // The consume row: written with the charge; free local calls' rows by the usage recorder (past a few a minute, aggregated).
    const consume = consumeOf(outcome);
    if (cost > 0 || model.price > 0) {
      try {
        await p.ledger.settle(reservation, consume.quota ?? 0, consume);
      } catch (err) {
        // Neither the charge nor its row was written: the reservation goes back, with an error row.
        await p.ledger.refund(reservation, errorEntry(logCall, err)).catch((e) => this.refundFailed(e, requestId));
        throw err;
      }
    } else await p.usage.record(principal.user.id, token.id, consume);

    return responseJson(req.model, outcome, base64, this.hot);
  }

  /** Logged as the request's logger logs (its reqId bound). */
  private refundFailed(err: unknown, requestId: string | undefined): void {
    this.p.log.child({ reqId: requestId }).error({ err }, 'quota refund failed');
  }
}

const CREATED = 1_767_225_600; // 2026-01-01, the "created" of the built-in models

const modelObject = (id: string, ownedBy: string) => ({ id, object: 'model', created: CREATED, owned_by: ownedBy });

/** OpenAI's model objects of the models the caller's key may use: the built-in ones, then those the caller's channels serve. */
export async function visibleModels(p: Platform, principal: Principal) {
  const { token, user } = principal;
  const upstream = await p.channels.servedModels(user);
  return [
    ...LOCAL_MODELS.map((m) => modelObject(m, 'switchyard')),
    ...upstream.filter((m) => !LOCAL_MODELS.includes(m as never)).map((m) => modelObject(m, 'upstream')),
  ].filter((m) => modelAllowed(token!.models, m.id));
}

/** One of visibleModels, or 404 model_not_found. */
export async function visibleModel(p: Platform, principal: Principal, id: string) {
  const found = (await visibleModels(p, principal)).find((m) => m.id === id);
  if (!found) throw notFound(`The model '${id}' does not exist or you do not have access to it.`, { code: 'model_not_found', param: 'model' });
  return found;
}
