// Which models exist: the built-in local ones and whatever enabled, priced channels serve.
import type { Config } from '../config.js';
import type { Caller, ChannelDirectory, ChannelEntry } from '../channels/directory.js';
import { DEFAULT_GROUP } from '../groups.js';
import { AppError, badRequest, notFound } from '../errors.js';
import { LOCAL_HASH_DEFAULT_DIMENSIONS, LOCAL_HASH_MAX_DIMENSIONS, LOCAL_HASH_MODEL } from './local-hash.js';
import { USE_LITE_DIMENSIONS, USE_LITE_MODEL } from './use-lite-text.js';

export type ResolvedModel =
  | { kind: 'local'; name: string; price: number; defaultDimensions: number; maxDimensions: number }
  | { kind: 'upstream'; name: string; price: number; channels: ChannelEntry[] };

export const LOCAL_MODELS = [LOCAL_HASH_MODEL, USE_LITE_MODEL] as const;

/** The price ratio of a user group (GROUP_RATIO): 1 for a group it does not name. `undefined`: the default group. */
export function groupRatio(config: Config, group: string = DEFAULT_GROUP): number {
  return Object.hasOwn(config.GROUP_RATIO, group) ? config.GROUP_RATIO[group]! : 1;
}

/**
 * Resolves a model name for `caller` or throws the OpenAI-shaped error: 404 unknown, 400 unpriced, 503 no channel. An
 * upstream model's channels and price are those of the channels the caller may use (ChannelDirectory.usableBy). The
 * price is the one the caller pays, here and only here: the model's (a built-in model's LOCAL_MODEL_PRICE, an upstream
 * model's its channels') times the caller's group's ratio. Every charge (a call, a cache hit, a batch's lines, a
 * channel's used_quota) is counted from it.
 */
export async function resolveModel(config: Config, channels: ChannelDirectory, name: string, caller: Caller | null): Promise<ResolvedModel> {
  const model = await modelAtItsPrice(config, channels, name, caller);
  const ratio = groupRatio(config, caller?.group);
  // Rounded to 12 digits so that, say, 3 × 0.1 costs what 0.3 does (Math.ceil in costOf would count the float's tail).
  return ratio === 1 ? model : { ...model, price: Number((model.price * ratio).toPrecision(12)) };
}

async function modelAtItsPrice(config: Config, channels: ChannelDirectory, name: string, caller: Caller | null): Promise<ResolvedModel> {
  if (name === LOCAL_HASH_MODEL) {
    return { kind: 'local', name, price: config.LOCAL_MODEL_PRICE, defaultDimensions: LOCAL_HASH_DEFAULT_DIMENSIONS, maxDimensions: LOCAL_HASH_MAX_DIMENSIONS };
  }
  if (name === USE_LITE_MODEL) {
    return { kind: 'local', name, price: config.LOCAL_MODEL_PRICE, defaultDimensions: USE_LITE_DIMENSIONS, maxDimensions: USE_LITE_DIMENSIONS };
  }
  const a = await channels.availability(name, caller);
  switch (a.kind) {
    case 'unknown':
      throw notFound(`The model '${name}' does not exist or you do not have access to it.`, {
        code: 'model_not_found',
        param: 'model',
        type: 'invalid_request_error',
      });
    case 'no-channel':
      throw new AppError(503, `No available channel for model '${name}': every channel that serves it is disabled.`, {
        code: 'no_available_channel',
        type: 'server_error',
      });
    case 'no-price':
      throw badRequest(`The model '${name}' has no price configured, so it cannot be used: an admin must set a price on one of its channels.`, {
        code: 'model_price_not_set',
        param: 'model',
      });
    default:
      return { kind: 'upstream', name, price: a.price, channels: a.channels };
  }
}

/** Quota for a call: price is quota per 1K tokens, rounded up. */
export const costOf = (tokens: number, price: number) => (price > 0 ? Math.ceil((tokens * price) / 1000) : 0);
