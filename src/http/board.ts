// Bull Board at /admin/queues, for admins only (session cookie or HTTP Basic), mounted on the main app.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Middleware } from 'koa';
import type { Platform } from '../platform.js';
import { ROLE } from '../accounts/schema.js';
import { authorize } from './auth.js';
import { AppError } from './errors.js';

export const BOARD_PATH = '/admin/queues';

/** The guard runs before the board: nobody below admin ever reaches it. */
export function boardGuard(p: Platform): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== BOARD_PATH && !ctx.path.startsWith(`${BOARD_PATH}/`)) return next();
    try {
      await authorize(ctx, p, ROLE.admin, { allowBasic: true });
    } catch (err) {
      // Ask a browser for Basic credentials instead of showing a bare 401.
      if (err instanceof AppError && err.status === 401) {
        throw new AppError(401, err.message, { code: err.code, headers: { 'WWW-Authenticate': 'Basic realm="Switchyard queues", charset="UTF-8"' } });
      }
      throw err;
    }
    return next();
  };
}

export function boardPlugin(p: Platform): Middleware {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: [...p.jobs.queues.values()].map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Switchyard queues' } },
  });
  return serverAdapter.registerPlugin();
}
