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

export const channelsRouter = (p: Platform): ApiRouter => new ApiRouter('Channels', p).add(list, search, create, get, update, updateById, remove);
