// HTTP routes of channels (admins): one-api's /api/channel/ paths and envelope; keys never shown again.
import { Router } from '@koa/router';
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { authorize } from '../http/auth.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { notFound } from '../errors.js';
import { parse } from '../validate.js';
import { idParam, pageQuery, ROLE } from '../accounts/schema.js';
import { createChannelBody, publicChannel, updateChannelBody } from './schema.js';
import * as store from './store.js';

export function channelsRouter(p: Platform): Router {
  const router = new Router();
  const admin = (ctx: Context) => authorize(ctx, p, ROLE.admin);

  async function list(ctx: Context) {
    await admin(ctx);
    const q = parse(pageQuery, ctx.query);
    const { rows, total } = await store.listChannels(p.db, { offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword });
    envelopeList(ctx, rows.map(publicChannel), total);
  }
  router.get('/api/channel/', list);
  router.get('/api/channel/search', list);

  router.post('/api/channel/', async (ctx) => {
    await admin(ctx);
    const body = parse(createChannelBody, ctx.request.body ?? {});
    const row = await store.createChannel(p.db, p.secrets, body);
    p.channels.invalidate();
    envelope(ctx, publicChannel(row), 201);
  });

  router.get('/api/channel/:id', async (ctx) => {
    await admin(ctx);
    const row = await store.getChannel(p.db, parse(idParam, ctx.params.id, { param: 'id' }));
    if (!row) throw notFound('Channel not found');
    envelope(ctx, publicChannel(row));
  });

  const update = async (ctx: Context, id: number | undefined) => {
    await admin(ctx);
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    const body = parse(updateChannelBody, { ...raw, id: id ?? raw.id });
    const row = await store.updateChannel(p.db, p.secrets, body);
    if (!row) throw notFound('Channel not found');
    p.channels.invalidate();
    envelope(ctx, publicChannel(row));
  };
  router.put('/api/channel/', (ctx) => update(ctx, undefined));
  router.put('/api/channel/:id', (ctx) => update(ctx, parse(idParam, ctx.params.id, { param: 'id' })));

  router.delete('/api/channel/:id', async (ctx) => {
    await admin(ctx);
    if (!(await store.deleteChannel(p.db, parse(idParam, ctx.params.id, { param: 'id' })))) throw notFound('Channel not found');
    p.channels.invalidate();
    envelope(ctx);
  });

  return router;
}
