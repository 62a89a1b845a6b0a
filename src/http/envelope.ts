// one-api's response envelope {success, message, data}, with an HTTP status that tells the truth too.
import type { Context } from 'koa';

export function envelope(ctx: Context, data?: unknown, status = 200, message = ''): void {
  ctx.status = status;
  ctx.body = data === undefined ? { success: true, message } : { success: true, message, data };
}

/** Lists carry the total in X-Total-Count; `data` stays a bare array, as one-api clients expect. */
export function envelopeList(ctx: Context, rows: unknown[], total: number): void {
  ctx.set('X-Total-Count', String(total));
  envelope(ctx, rows);
}
