// HTTP routes of channels (admins): one-api's /api/channel/ paths and envelope; keys never shown again.
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { authorize } from '../http/auth.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { ApiRouter, envelopeOf, ok } from '../http/route.js';
import { badRequest, notFound } from '../errors.js';
import { refusedHostField } from '../outbound.js';
import { parse } from '../validate.js';
import { idParam, pageQuery, ROLE } from '../accounts/schema.js';
import { z } from 'zod';
import { channelView, createChannelBody, publicChannel, updateChannelBody } from './schema.js';
import * as store from './store.js';
import { adminActionEntry, describeChanges } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';

export function channelsRouter(p: Platform): ApiRouter {
  const router = new ApiRouter('Channels');
  const one = ok('envelope with the channel (key as a hint)', envelopeOf(channelView));
  const admin = (ctx: Context) => authorize(ctx, p, ROLE.admin);

  /** The outbound policy's save-time check of a base_url's host (src/outbound.ts): 400 naming base_url. */
  async function vetBaseUrl(baseUrl: string) {
    const refused = await refusedHostField(p.config.OUTBOUND_ALLOWLIST, { base_url: new URL(baseUrl).hostname });
    if (refused) throw badRequest(refused.message, { param: 'base_url' });
  }

  async function list(ctx: Context) {
    const { user: me } = await admin(ctx);
    const q = parse(pageQuery, ctx.query);
    const { rows, total } = await store.listChannels(p.db, me, { offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword });
    envelopeList(ctx, rows.map(publicChannel), total);
  }
  const listed = ok('envelope with channels (keys as hints); X-Total-Count', envelopeOf(z.array(channelView)));
  router.endpoint(
    { method: 'get', path: '/api/channel/', summary: 'List upstream channels', auth: 'admin', query: pageQuery, responses: { 200: listed } },
    list,
  );
  router.endpoint(
    { method: 'get', path: '/api/channel/search', summary: 'Search channels by name or model', auth: 'admin', query: pageQuery, responses: { 200: listed } },
    list,
  );

  const create = {
    method: 'post',
    path: '/api/channel/',
    summary: 'Add an upstream channel (key encrypted, never shown again)',
    auth: 'admin',
    body: createChannelBody,
    responses: { 201: one, 400: ok('invalid', envelopeOf()) },
  } as const;
  router.endpoint(create, async (ctx) => {
    const principal = await admin(ctx);
    const body = parse(createChannelBody, ctx.request.body ?? {});
    await vetBaseUrl(body.base_url);
    const row = await store.createChannel(p.db, p.secrets, body, principal.user.id);
    p.channels.invalidate();
    // What was made, never the key.
    await insertLogs(p.db, [
      adminActionEntry(principal.user, `Created channel #${row.id} "${row.name}" (${row.base_url}, models ${row.models})`, { channelId: row.id }),
    ]);
    envelope(ctx, publicChannel(row), 201);
  });

  router.endpoint({ method: 'get', path: '/api/channel/:id', summary: 'One channel', auth: 'admin', responses: { 200: one, 404: 'unknown' } }, async (ctx) => {
    const { user: me } = await admin(ctx);
    const row = await store.getChannel(p.db, me, parse(idParam, ctx.params.id, { param: 'id' }));
    if (!row) throw notFound('Channel not found');
    envelope(ctx, publicChannel(row));
  });

  const update = async (ctx: Context, id: number | undefined) => {
    const principal = await admin(ctx);
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    const body = parse(updateChannelBody, { ...raw, id: id ?? raw.id });
    const current = await store.getChannel(p.db, principal.user, body.id);
    if (body.base_url !== undefined) {
      if (!current) throw notFound('Channel not found');
      // Otherwise the stored key would be sent to a host of the caller's choosing.
      if (body.base_url !== current.base_url && !body.key) {
        throw badRequest("base_url: changing a channel's base_url needs its key again (send key)", { param: 'base_url' });
      }
      await vetBaseUrl(body.base_url);
    }
    const row = await store.updateChannel(p.db, p.secrets, principal.user, body);
    if (!row) throw notFound('Channel not found');
    p.channels.invalidate();
    // Which fields changed; the key only as "replaced".
    const fields = ['name', 'base_url', 'models', 'model_mapping', 'priority', 'weight', 'price', 'status', 'key_hint'] as const;
    const changes = current ? describeChanges(current, row, [...fields], ['key_hint']).map((c) => c.replace('key_hint changed', 'key replaced')) : [];
    if (changes.length)
      await insertLogs(p.db, [adminActionEntry(principal.user, `Changed channel #${row.id} "${row.name}": ${changes.join(', ')}`, { channelId: row.id })]);
    envelope(ctx, publicChannel(row));
  };
  router.endpoint(
    { method: 'put', path: '/api/channel/', summary: 'Change a channel (id in the body)', auth: 'admin', body: updateChannelBody, responses: { 200: one } },
    (ctx) => update(ctx, undefined),
  );
  router.endpoint(
    {
      method: 'put',
      path: '/api/channel/:id',
      summary: 'Change a channel',
      auth: 'admin',
      body: updateChannelBody.partial({ id: true }),
      responses: { 200: one },
    },
    (ctx) => update(ctx, parse(idParam, ctx.params.id, { param: 'id' })),
  );

  router.endpoint(
    { method: 'delete', path: '/api/channel/:id', summary: 'Delete a channel', auth: 'admin', responses: { 200: 'envelope', 404: 'unknown' } },
    async (ctx) => {
      const principal = await admin(ctx);
      const channelId = parse(idParam, ctx.params.id, { param: 'id' });
      if (!(await store.deleteChannel(p.db, principal.user, channelId))) throw notFound('Channel not found');
      p.channels.invalidate();
      await insertLogs(p.db, [adminActionEntry(principal.user, `Deleted channel #${channelId}`, { channelId })]);
      envelope(ctx);
    },
  );

  return router;
}
