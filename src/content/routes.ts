// HTTP routes of area C: items, batches (as jobs), listing with keyset cursors, stats. Errors are {error}.
import { Router } from '@koa/router';
import type { Context } from 'koa';
import type { Platform } from '../platform.js';
import { authorize } from '../http/auth.js';
import { AppError, badRequest, notFound, toAppError } from '../errors.js';
import { runJobForRequest } from '../http/jobs.js';
import * as s from './schema.js';
import * as store from './store.js';

/** Unexpected failures answer the area's fixed message (the cause goes to the log, not the body). */
async function failingWith<T>(ctx: Context, message: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (raw) {
    const err = toAppError(raw);
    if (err.status !== 500) throw err;
    ctx.state.log?.error({ err: raw }, message);
    throw new AppError(500, message, { code: 'internal_error' });
  }
}

export function contentRouter(p: Platform): Router {
  const router = new Router();
  const auth = (ctx: Context) => authorize(ctx, p);

  router.post('/api/content', async (ctx) => {
    await auth(ctx);
    const check = s.checkItem(ctx.request.body);
    if (!check.ok) throw badRequest(check.error);
    const row = await failingWith(ctx, 'Failed to create content', () => store.upsertItem(p.db, check.item));
    ctx.status = row!.inserted ? 201 : 200;
    ctx.body = s.publicItem(row!);
  });

  router.post('/api/content/batch', async (ctx) => {
    const principal = await auth(ctx);
    const body = ctx.request.body;
    if (!Array.isArray(body)) throw badRequest(s.BATCH_NOT_ARRAY);
    if (body.length === 0) throw badRequest(s.BATCH_EMPTY);
    if (body.length > s.MAX_BATCH) throw badRequest(s.BATCH_TOO_LARGE);
    const result = await failingWith(ctx, 'Failed to process batch upload', () => runJobForRequest(ctx, p, 'content.batch', { items: body }, principal));
    if (result) ctx.body = result;
  });

  router.get('/api/content', async (ctx) => {
    await auth(ctx);
    const parsed = s.parseListQuery(ctx.query);
    if (!parsed.ok) throw badRequest(parsed.error);
    const q = parsed.value;
    const cursor = q.cursor === undefined ? undefined : store.decodeCursor(q.cursor, q);
    if (q.cursor !== undefined && !cursor) throw badRequest('Invalid cursor: it does not belong to this orderBy/order, or is damaged');
    const { rows, more, total, exact } = await failingWith(ctx, 'Failed to fetch contents', () => store.listItems(p.db, q, cursor));
    ctx.set('X-Total-Count', String(total));
    if (!exact) ctx.set('X-Total-Count-Estimated', 'true');
    if (more) {
      const last = rows[rows.length - 1]!;
      const next = new URL(ctx.href);
      next.searchParams.set('cursor', store.encodeCursor({ orderBy: q.orderBy, order: q.order, value: store.sortValue(last, q.orderBy), id: last.id }));
      ctx.set('Link', `<${next.pathname}${next.search}>; rel="next"`);
    }
    ctx.body = rows.map(s.publicItem);
  });

  router.get('/api/content/:id', async (ctx) => {
    await auth(ctx);
    const id = String(ctx.params.id);
    const row = s.UUID_RE.test(id) ? await failingWith(ctx, 'Failed to fetch content', () => store.getItem(p.db, id)) : undefined;
    if (!row) throw notFound(s.NOT_FOUND);
    ctx.body = s.publicItem(row);
  });

  router.delete('/api/content/:id', async (ctx) => {
    await auth(ctx);
    const id = String(ctx.params.id);
    const deleted = s.UUID_RE.test(id) && (await failingWith(ctx, 'Failed to delete content', () => store.deleteItem(p.db, id)));
    if (!deleted) throw notFound(s.NOT_FOUND);
    ctx.body = { success: true };
  });

  router.get('/api/stats', async (ctx) => {
    await auth(ctx);
    ctx.body = await failingWith(ctx, 'Failed to fetch stats', () => store.getStats(p.db));
  });

  return router;
}
