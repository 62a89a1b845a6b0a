// HTTP routes for upstream channels (admin): one-api's /api/channel/ paths and envelope; keys never shown again.
import { Router } from '@koa/router';
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { authorize } from '../http/auth.js';
import { envelope, envelopeList } from '../http/envelope.js';
import { notFound } from '../errors.js';
import { parse } from '../validate.js';
import * as ch from './channels.js';
import { idParam, pageQuery, ROLE } from './schema.js';

export function channelsRouter(p: Platform): Router {
  const router = new Router();
  const admin = (ctx: Context) => authorize(ctx, p, ROLE.admin);

  async function list(ctx: Context) {
    await admin(ctx);
    const q = parse(pageQuery, ctx.query);
    const { rows, total } = await ch.listChannels(p.db, { offset: q.p * q.page_size, limit: q.page_size, keyword: q.keyword });
    envelopeList(ctx, rows.map(ch.publicChannel), total);
  }
  router.get('/api/channel/', list);
  router.get('/api/channel/search', list);

  router.post('/api/channel/', async (ctx) => {
    await admin(ctx);
    const body = parse(ch.createChannelBody, ctx.request.body ?? {});
    const row = await ch.createChannel(p.db, p.secrets, body);
    p.channels.invalidate();
    envelope(ctx, ch.publicChannel(row), 201);
  });

  router.get('/api/channel/:id', async (ctx) => {
    await admin(ctx);
    const row = await ch.getChannel(p.db, parse(idParam, ctx.params.id, { param: 'id' }));
    if (!row) throw notFound('Channel not found');
    envelope(ctx, ch.publicChannel(row));
  });

  const update = async (ctx: Context, id: number | undefined) => {
    await admin(ctx);
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    const body = parse(ch.updateChannelBody, { ...raw, id: id ?? raw.id });
    const row = await ch.updateChannel(p.db, p.secrets, body);
    if (!row) throw notFound('Channel not found');
    p.channels.invalidate();
    envelope(ctx, ch.publicChannel(row));
  };
  router.put('/api/channel/', (ctx) => update(ctx, undefined));
  router.put('/api/channel/:id', (ctx) => update(ctx, parse(idParam, ctx.params.id, { param: 'id' })));

  router.delete('/api/channel/:id', async (ctx) => {
    await admin(ctx);
    if (!(await ch.deleteChannel(p.db, parse(idParam, ctx.params.id, { param: 'id' })))) throw notFound('Channel not found');
    p.channels.invalidate();
    envelope(ctx);
  });

  return router;
}
