// HTTP routes of channels (admins): one-api's /api/channel/ paths and envelope; keys never shown again.
// Each endpoint is declared (src/http/route.ts): auth and parsing are enforced before its handler runs.
import type { Context } from 'koa';
import { z } from 'zod';
import type { Principal } from '../accounts/auth.js';
import { idParam, type PageQuery, pageQuery } from '../accounts/schema.js';
import type { Platform } from '../platform.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { ApiRouter, endpoint, envelopeOf, ok } from '../http/route.js';
import { channelView, createChannelBody, parseChannelUpdate, updateChannelBody } from './schema.js';
import * as service from './service.js';
import { providerTypes, providerTypeView } from './provider-types.js';
import { channelTestAllSummary, channelTestAnswer, TEST_ALL_CONCURRENCY, testAllChannels, testChannel } from './test-service.js';

const one = ok('envelope with the channel (key as a hint)', envelopeOf(channelView));
const listed = ok('envelope with channels (keys as hints); X-Total-Count', envelopeOf(z.array(channelView)));

type Caller = { p: Platform; principal: Principal };

const listChannels = async (ctx: Context, { p, principal, query }: Caller & { query: PageQuery }) => {
  const { channels, total } = await service.listChannels(p, principal.user, query);
  envelopeList(ctx, channels, total);
};

const list = endpoint(
  { method: 'get', path: '/api/channel/', summary: 'List upstream channels', auth: 'admin', query: pageQuery, responses: { 200: listed } },
  listChannels,
);

const search = endpoint(
  { method: 'get', path: '/api/channel/search', summary: 'Search channels by name or model', auth: 'admin', query: pageQuery, responses: { 200: listed } },
  listChannels,
);

const create = endpoint(
  {
    method: 'post',
    path: '/api/channel/',
    summary: 'Add an upstream channel (key encrypted, never shown again)',
    auth: 'admin',
    body: createChannelBody,
    responses: { 201: one, 400: ok('invalid', envelopeOf()) },
  },
  async (ctx, { p, principal, body }) => envelope(ctx, await service.createChannel(p, principal.user, body), 201),
);

const types = endpoint(
  {
    method: 'get',
    path: '/api/channel/types',
    summary: 'The channel types (providers): one-api number, label, default base URL, config settings, what each supports',
    auth: 'admin',
    responses: { 200: ok('envelope with every channel type', envelopeOf(z.array(providerTypeView))) },
  },
  (ctx) => envelope(ctx, providerTypes()),
);

const testOne = endpoint(
  {
    method: 'get',
    path: '/api/channel/test/:id',
    summary: 'Test a channel directly: one short embeddings call to it (not charged), its time recorded on it',
    auth: 'admin',
    // It records the test on the channel and may disable it: same-origin for cookies, as a POST would be.
    changesState: true,
    pathParams: { id: idParam },
    query: z.object({ model: z.string().min(1).max(200).optional().describe("one of the channel's models (default: its first)") }),
    responses: {
      200: ok("one-api's answer: success false (with why) when the channel failed; a refused key disables it", channelTestAnswer),
      400: 'a model the channel does not serve',
      404: 'unknown (or not one the admin manages)',
    },
  },
  async (ctx, { p, principal, path, query }) => {
    ctx.body = await testChannel(p, principal.user, path.id, query.model);
  },
);

const testAll = endpoint(
  {
    method: 'get',
    path: '/api/channel/test',
    summary: `Test every enabled channel the admin manages, ${TEST_ALL_CONCURRENCY} at a time, with its first model; answers when all are done`,
    auth: 'admin',
    changesState: true,
    responses: { 200: ok('envelope with how many answered and each one', envelopeOf(channelTestAllSummary)), 409: 'a test of all is already running' },
  },
  async (ctx, { p, principal }) => {
    const summary = await testAllChannels(p, principal.user);
    envelope(ctx, summary, 200, `Tested ${summary.tested} channels: ${summary.succeeded} answered, ${summary.failed} failed`);
  },
);

const get = endpoint(
  { method: 'get', path: '/api/channel/:id', summary: 'One channel', auth: 'admin', pathParams: { id: idParam }, responses: { 200: one, 404: 'unknown' } },
  async (ctx, { p, principal, path }) => envelope(ctx, await service.getChannel(p, principal.user, path.id)),
);

// The path's id, when there is one, wins over the body's (parseChannelUpdate).
const updateChannel = async (ctx: Context, { p, principal, body }: Caller & { body: z.output<typeof updateChannelBody> }) =>
  envelope(ctx, await service.updateChannel(p, principal.user, body));

const changeSpec = { method: 'put', auth: 'admin', parseBody: parseChannelUpdate, responses: { 200: one } } as const;

const update = endpoint({ ...changeSpec, path: '/api/channel/', summary: 'Change a channel (id in the body)', body: updateChannelBody }, updateChannel);

const updateById = endpoint(
  { ...changeSpec, path: '/api/channel/:id', summary: 'Change a channel', body: updateChannelBody.partial({ id: true }) },
  updateChannel,
);

const remove = endpoint(
  {
    method: 'delete',
    path: '/api/channel/:id',
    summary: 'Delete a channel',
    auth: 'admin',
    pathParams: { id: idParam },
    responses: { 200: 'envelope', 404: 'unknown' },
  },
  async (ctx, { p, principal, path }) => {
    await service.deleteChannel(p, principal.user, path.id);
    envelope(ctx);
  },
);

export const channelsRouter = (p: Platform): ApiRouter =>
  new ApiRouter('Channels', p).add(list, search, types, testAll, testOne, create, get, update, updateById, remove);
