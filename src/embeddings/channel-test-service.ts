// A channel tested directly (one-api's channel test): one short embeddings call to that channel alone, through the relay
// as any call goes (the outbound policy, the provider's request and answer, a key refused disabling the channel), paid
// by no one. The channels area decides who may test which channel and records the outcome (src/channels/test-service.ts).
import { performance } from 'node:perf_hooks';
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';
import { countInputs } from './input-limits.js';
import { relayEmbeddings } from './relay.js';

/** What a test sends: one short text. */
export const CHANNEL_TEST_INPUT = 'Switchyard channel test';

export type ChannelTestOutcome = { ok: true; ms: number; dimensions: number } | { ok: false; ms: number; message: string };

/**
 * One call for `model` to the channel `channelId` (not to the gateway's choice among the model's channels), waited on
 * for at most UPSTREAM_TIMEOUT_MS. The channel is tried whatever its status (an admin tests a channel before enabling
 * it); one cooling down after a 429 is not asked (the answer says so). `ms` is the time the call took. The channel is
 * read from the routing directory (p.channels): the caller invalidates it first to test what Postgres holds now.
 */
export async function testChannelDirectly(p: Platform, channelId: number, model: string): Promise<ChannelTestOutcome> {
  const channel = (await p.channels.all()).find((c) => c.id === channelId);
  if (!channel) return { ok: false, ms: 0, message: `channel ${channelId} is gone` };
  const tokens = (await countInputs([CHANNEL_TEST_INPUT], null))[0]!;
  const started = performance.now();
  try {
    const answer = await relayEmbeddings(p, model, [channel], [CHANNEL_TEST_INPUT], {
      tokens,
      deadline: Date.now() + p.config.UPSTREAM_TIMEOUT_MS,
      refused: new Set(),
    });
    return { ok: true, ms: performance.now() - started, dimensions: answer.vectors[0]!.length / 4 };
  } catch (err) {
    // The relay's own failures (refused, unreachable, an unusable answer, rate limited) are the test's outcome; anything else is not.
    if (!(err instanceof AppError)) throw err;
    return { ok: false, ms: performance.now() - started, message: err.message };
  }
}
