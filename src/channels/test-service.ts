// Channels tested directly (one-api's "test"): one short embeddings call to a channel the admin may manage, through the
// relay (src/embeddings/channel-test-service.ts), charged to no one; its time and when it ran recorded on the channel.
// "Test all" runs the tests of every enabled channel the admin manages, TEST_ALL_CONCURRENCY at a time.
import pLimit from 'p-limit';
import { z } from 'zod';
import type { Platform } from '../platform.js';
import type { AuthUser } from '../accounts/auth.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { testChannelDirectly } from '../embeddings/channel-test-service.js';
import { CHANNEL_STATUS, type ChannelRow } from './schema.js';
import * as store from './store.js';

/** Channels tested at once by one "test all". */
export const TEST_ALL_CONCURRENCY = 4;

/** A test's answer, in one-api's shape (time in seconds), with the model it asked for. */
export const channelTestAnswer = z.object({
  success: z.boolean(),
  message: z.string().describe("'' when the channel answered; else why the test failed"),
  time: z.number().describe('how long the test took, in seconds'),
  model: z.string().describe('the model the test asked for'),
});
export type ChannelTestAnswer = z.infer<typeof channelTestAnswer>;

export const channelTestAllSummary = z.object({
  tested: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  results: z.array(channelTestAnswer.extend({ id: z.number(), name: z.string() })),
});

const modelsOf = (c: ChannelRow) => c.models.split(',').filter(Boolean);

/** Tests one channel and records the outcome on it (test_time, response_time), answered or not, as one-api does. */
async function runTest(p: Platform, c: ChannelRow, model: string): Promise<ChannelTestAnswer> {
  const outcome = await testChannelDirectly(p, c.id, model);
  await store.recordTest(p.db, c.id, outcome.ms);
  const time = Math.round(outcome.ms) / 1000;
  return outcome.ok ? { success: true, message: '', time, model } : { success: false, message: outcome.message, time, model };
}

/**
 * Tests a channel the admin manages (404 otherwise) with `model` (one of its models; the first when not given). The
 * channels' directory is read afresh first: a change just made in another process is what gets tested.
 */
export async function testChannel(p: Platform, admin: AuthUser, id: number, model?: string): Promise<ChannelTestAnswer> {
  const c = await store.getChannel(p.db, admin, id);
  if (!c) throw notFound('Channel not found');
  const models = modelsOf(c);
  if (model !== undefined && !models.includes(model)) {
    throw badRequest(`model: channel #${c.id} does not serve '${model}' (it serves ${models.join(', ')})`, { param: 'model' });
  }
  p.channels.invalidate();
  return runTest(p, c, model ?? models[0]!);
}

/** The admins running a "test all" in this process: one at a time each. */
const testingAll = new Set<number>();

/** Tests every enabled channel the admin manages with its first model, TEST_ALL_CONCURRENCY at a time. */
export async function testAllChannels(p: Platform, admin: AuthUser): Promise<z.infer<typeof channelTestAllSummary>> {
  if (testingAll.has(admin.id)) throw conflict('A test of all channels is already running; wait for it to end.');
  testingAll.add(admin.id);
  try {
    const channels: ChannelRow[] = [];
    for (let offset = 0; ; offset += 500) {
      const { rows } = await store.listChannels(p.db, admin, { offset, limit: 500 });
      channels.push(...rows.filter((c) => c.status === CHANNEL_STATUS.enabled));
      if (rows.length < 500) break;
    }
    p.channels.invalidate();
    const limit = pLimit(TEST_ALL_CONCURRENCY);
    const results = await Promise.all(channels.map((c) => limit(async () => ({ id: c.id, name: c.name, ...(await runTest(p, c, modelsOf(c)[0]!)) }))));
    const succeeded = results.filter((r) => r.success).length;
    return { tested: results.length, succeeded, failed: results.length - succeeded, results };
  } finally {
    testingAll.delete(admin.id);
  }
}
