// Bull Board at /admin/queues, for admins only (session cookie or HTTP Basic), mounted on the main app.
import type { Context, Middleware } from 'koa';
import type { Platform } from '../platform.js';
import { enforceAuth, type Endpoint } from './route.js';
import { AppError, badRequest, forbidden, notFound } from '../errors.js';

export const BOARD_PATH = '/admin/queues';

/** The board is a sub-app, not a router: its description is declared here, and its guard enforces it (enforceAuth). */
export const boardEndpoint: Endpoint = {
  method: 'get',
  path: BOARD_PATH,
  tag: 'Operations',
  summary: 'Bull Board (admins: session cookie or HTTP Basic)',
  auth: 'adminBasic',
  responses: { 200: 'HTML', 401: 'Basic challenge', 403: 'not an admin' },
};

/**
 * The board behind its guard, in one middleware that other paths pass straight through: nobody
 * below admin ever reaches the board.
 */
export function boardMiddleware(p: Platform): Middleware {
  let plugin: Middleware | undefined;
  return async (ctx, next) => {
    if (ctx.path !== BOARD_PATH && !ctx.path.startsWith(`${BOARD_PATH}/`)) return next();
    try {
      await enforceAuth(ctx, p, boardEndpoint, undefined);
    } catch (err) {
      // Ask a browser for Basic credentials instead of showing a bare 401.
      if (err instanceof AppError && err.status === 401) {
        throw new AppError(401, err.message, { code: err.code, headers: { 'WWW-Authenticate': 'Basic realm="Switchyard queues", charset="UTF-8"' } });
      }
      throw err;
    }
    if (await guardJobWrites(p, ctx)) return;
    // Built on first use: processes whose board nobody opens never load it.
    plugin ??= await boardPlugin(p);
    // What the board does not serve must not reach our routes: its body parser has already read
    // the request (our parser would wait forever for it), and its error handler would turn our
    // 404/405 into a 500. So it ends here, as a 404 or 405 of ours, outside the board.
    let unserved = false;
    await plugin(ctx, async () => {
      unserved = true;
    });
    if (unserved) throw unservedBoardRoute(ctx.method, ctx.path);
    if (ctx.response.is('html')) keepPageLocal(ctx);
  };
}

/**
 * The board's page asks a public font CDN for its fonts: that fails offline and tells the CDN every operator's address
 * and when they look. The link is taken out (the board falls back to system fonts), and its policy lets the page load
 * nothing from elsewhere (framing is refused for every HTML answer, in app.ts).
 */
const BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');
const REMOTE_LINK = /<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?\/\/[^>]*>\s*/gi;

/**
 * The way back to the console, always in view at the bottom of the board's left column (the board's own menu has it
 * too, behind its user icon): a plain link, styled inline (the policy allows inline styles, not scripts).
 */
const CONSOLE_LINK =
  '<a href="/" data-switchyard="console-link" style="position:fixed;left:12px;bottom:36px;z-index:1000;padding:6px 10px;' +
  'border-radius:6px;background:#fff;border:1px solid #d8dde3;color:#2456d6;font:14px/1.3 system-ui,sans-serif;text-decoration:none">' +
  '&larr; Switchyard console</a>';

function keepPageLocal(ctx: Context): void {
  if (typeof ctx.body === 'string') ctx.body = ctx.body.replace(REMOTE_LINK, '').replace(/<\/body>/i, `${CONSOLE_LINK}</body>`);
  ctx.set('Content-Security-Policy', BOARD_CSP);
}

/** The board's job-writing routes: adding a job, replacing a job's data, and re-running every completed job. */
const JOB_WRITES: { method: string; path: RegExp }[] = [
  { method: 'POST', path: new RegExp(`^${BOARD_PATH}/api/queues/[^/]+/add/?$`, 'i') },
  { method: 'PATCH', path: new RegExp(`^${BOARD_PATH}/api/queues/[^/]+/[^/]+/update-data/?$`, 'i') },
  { method: 'PUT', path: new RegExp(`^${BOARD_PATH}/api/queues/[^/]+/retry/completed/?$`, 'i') },
];
/** Retrying one job: answered here, for a failed job only (see guardJobWrites). */
const RETRY_ONE = new RegExp(`^${BOARD_PATH}/api/queues/([^/]+)/([^/]+)/retry/?$`, 'i');

/**
 * Jobs are made by the API, for a principal it has checked, and signed (jobs/wire.ts): a job added or edited on the
 * board would name any owner and any account, so the board refuses both, for every role (root too: a worker would
 * refuse the job anyway). Nor does it run a completed job again: that would be a new action of the job's owner
 * (another purge of their inbox, another batch), taken by whoever clicked; a failed job's retry finishes what its
 * owner asked for and stays open, as do promote, clean, remove and pause.
 *
 * The retry of one job is done here rather than by the board, whose handler reads the job's state and then retries it
 * "from" that state: a job finishing between the two was retried as completed. BullMQ's retry from the failed state
 * moves the job only if it is in the failed set, in one script. Answers true when it has answered the request.
 */
async function guardJobWrites(p: Platform, ctx: Context): Promise<boolean> {
  // The board's router matches case-insensitively and decodes: so does this check, on the path as it would read it.
  let path = ctx.path;
  try {
    path = decodeURIComponent(ctx.path);
  } catch {
    // undecodable: the board cannot route it either
  }
  path = path.replace(/\/{2,}/g, '/');
  const method = ctx.method.toUpperCase();
  if (JOB_WRITES.some((w) => w.method === method && w.path.test(path)))
    throw forbidden("Jobs are made through the API: Bull Board may not add jobs, change a job's data or run completed jobs again", {
      code: 'board_job_write_refused',
    });
  const retry = method === 'PUT' ? RETRY_ONE.exec(path) : null;
  const queue = retry && [...p.jobs.queues.values()].find((q) => q.name.toLowerCase() === retry[1]!.toLowerCase());
  if (!queue) return false;
  const job = await queue.getJob(retry![2]!);
  if (!job) throw notFound('Job not found');
  try {
    await job.retry('failed');
  } catch {
    const state = await job.getState();
    if (state === 'completed')
      throw forbidden('A completed job is not run again from Bull Board: ask for it again through the API', { code: 'board_job_write_refused' });
    throw badRequest(`Only a failed job can be retried (this one is ${state})`, { code: 'job_not_retriable' });
  }
  ctx.status = 204;
  return true;
}

/** The board answers GETs (pages, assets, its API) and PUTs (its actions); nothing else. */
function unservedBoardRoute(method: string, path: string): AppError {
  if (method === 'GET' || method === 'HEAD' || method === 'PUT') return new AppError(404, `No route for ${method} ${path}`, { code: 'not_found' });
  return new AppError(405, `Method ${method} not allowed for ${path} (allowed: GET, PUT)`, { code: 'method_not_allowed', headers: { Allow: 'GET, PUT' } });
}

/** No retry button on completed jobs (refused anyway: guardJobWrites). The adapter reads the option; its types omit it. */
const ADAPTER_OPTIONS = { allowRetries: true, allowCompletedRetries: false };

async function boardPlugin(p: Platform): Promise<Middleware> {
  const [{ createBullBoard }, { BullMQAdapter }, { KoaAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/koa'),
  ]);
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: [...p.jobs.queues.values()].map((q) => new BullMQAdapter(q, ADAPTER_OPTIONS)),
    serverAdapter,
    // The board's own menu of links holds the way back to the console (its page lists no other).
    options: { uiConfig: { boardTitle: 'Switchyard queues', miscLinks: [{ text: 'Back to the console', url: '/' }] } },
  });
  return serverAdapter.registerPlugin();
}
