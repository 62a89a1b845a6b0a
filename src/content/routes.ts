// HTTP routes of content: items, batches (as jobs), listing with keyset cursors, stats. Errors are {error}.
// Each endpoint is declared (src/http/route.ts): auth and parsing are enforced before its handler runs.
import type { Context } from 'koa';
import { z } from 'zod';
import type { Platform } from '../platform.js';
import { AppError, badRequest, conflict, forbidden, notFound, toAppError } from '../errors.js';
import { MAX_JSON_DEPTH } from '../http/body.js';
import { runJobForRequest } from '../http/jobs.js';
import { ApiRouter, endpoint, ok, plainError } from '../http/route.js';
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

const create = endpoint(
  {
    method: 'post',
    path: '/api/content',
    summary: 'Store an item (an existing url is updated in place)',
    auth: 'user',
    body: s.contentItemBody,
    parseBody: s.parseItemBody,
    idempotent: true,
    responses: {
      201: ok('created', s.itemView),
      200: ok('updated', s.itemView),
      400: ok('missing fields, score out of range, or a field named', plainError),
      409: ok("the url is another user's item (only admins replace those)", plainError),
      500: ok('Failed to create content', plainError),
    },
  },
  async (ctx, { p, principal, body }) => {
    const row = await failingWith(ctx, 'Failed to create content', () => store.upsertItem(p.db, body, store.callerOf(principal.user)));
    if (!row) throw conflict(s.NOT_OWNER_UPSERT);
    ctx.status = row.inserted ? 201 : 200;
    return s.publicItem(row);
  },
);

const batch = endpoint(
  {
    method: 'post',
    path: '/api/content/batch',
    summary: `Store 1-${s.MAX_BATCH} items in one job`,
    auth: 'user',
    body: z.array(s.contentItemBody).min(1).max(s.MAX_BATCH),
    parseBody: s.parseBatchBody,
    job: true,
    idempotent: true,
    responses: {
      200: ok('per-entry outcome', s.batchResultView),
      400: ok(`not an array, empty, over ${s.MAX_BATCH}, or JSON nested deeper than ${MAX_JSON_DEPTH} levels`, plainError),
    },
  },
  (ctx, { p, principal, body }) =>
    failingWith(ctx, 'Failed to process batch upload', () => runJobForRequest(ctx, p, 'content.batch', { items: body }, principal)),
);

const list = endpoint(
  {
    method: 'get',
    path: '/api/content',
    summary: 'List items (bare array; Link rel=next; X-Total-Count)',
    auth: 'user',
    query: s.listQuery,
    parseQuery: s.parseListParams,
    responses: { 200: ok('items', z.array(s.itemView)), 400: ok('invalid parameter', plainError) },
  },
  async (ctx, { p, query: q }) => {
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
    return rows.map(s.publicItem);
  },
);

const one = endpoint(
  {
    method: 'get',
    path: '/api/content/:id',
    summary: 'One item',
    auth: 'user',
    responses: {
      200: ok('the item (its `Allow` header says whether the caller may delete it: `GET, DELETE`, or `GET`)', s.itemView),
      404: ok('Content not found', plainError),
    },
  },
  async (ctx, { p, path, principal }) => {
    const row = s.UUID_RE.test(path.id) ? await failingWith(ctx, 'Failed to fetch content', () => store.getItem(p.db, path.id)) : undefined;
    if (!row) throw notFound(s.NOT_FOUND);
    // The body stays the item (content-analyzer's shape); what this caller may do with it is HTTP's Allow header.
    const canDelete = await failingWith(ctx, 'Failed to fetch content', () => store.mayDelete(p.db, row.id, store.callerOf(principal.user)));
    ctx.set('Allow', canDelete ? 'GET, DELETE' : 'GET');
    return s.publicItem(row);
  },
);

const remove = endpoint(
  {
    method: 'delete',
    path: '/api/content/:id',
    summary: 'Delete an item',
    auth: 'user',
    responses: {
      200: ok('{success:true}', z.object({ success: z.literal(true) })),
      403: ok("another user's item (only admins delete those)", plainError),
      404: ok('Content not found', plainError),
    },
  },
  async (ctx, { p, principal, path }) => {
    const outcome = s.UUID_RE.test(path.id)
      ? await failingWith(ctx, 'Failed to delete content', () => store.deleteItem(p.db, path.id, store.callerOf(principal.user)))
      : 'missing';
    if (outcome === 'forbidden') throw forbidden(s.NOT_OWNER_DELETE, { code: 'not_owner' });
    if (outcome === 'missing') throw notFound(s.NOT_FOUND);
    return { success: true };
  },
);

const stats = endpoint(
  { method: 'get', path: '/api/stats', summary: 'Counts by source', auth: 'user', responses: { 200: ok('totals', s.statsView) } },
  (ctx, { p }) => failingWith(ctx, 'Failed to fetch stats', () => store.getStats(p.db)),
);

export const contentRouter = (p: Platform): ApiRouter => new ApiRouter('Content', p).add(create, batch, list, one, remove, stats);
