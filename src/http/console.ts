// The web console (web/, built by Vite into dist/console/): its static files and index.html for the console's own routes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import type { Context, Middleware } from 'koa';

/**
 * The paths the console's router answers (web/src/routes.ts lists the same pages): these get index.html. Any other
 * unknown path is the API's JSON 404, but for a browser opening a page outside the API's paths, which gets index.html
 * with status 404: the console's "Page not found".
 */
export const CONSOLE_ROUTE =
  /^\/(?:|login|account|keys|playground|jobs|schedules|batches|webhooks|logs|content|content\/[0-9a-fA-F-]{1,64}|mail|mail\/[^/]{1,254}|admin\/(?:users|channels|redemptions|logs))\/?$/;

/**
 * Paths that are the API's (or the board's, the docs', the probes'): an unknown one is always the API's JSON 404, even
 * when a browser asks for it.
 */
const API_PATH = /^\/(?:api|v1|assets|docs|openapi\.json|admin\/queues|healthz|readyz|metrics)(?:[/.]|$)/;

/**
 * A browser opening a page (not a script asking for data): what it accepts names HTML. curl, fetch() and the API's
 * clients send `*\/*` or JSON, and keep getting the JSON 404.
 */
const wantsPage = (ctx: Context): boolean => /\btext\/html\b/.test(ctx.get('accept'));

/** Content types of what Vite writes. */
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.js', '.css', '.html', '.svg', '.json', '.txt']);
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;

/**
 * Scripts only from this origin (the build has no inline script), nothing loaded from elsewhere, no
 * plugins, no framing, no base or form tricks. Mail bodies are shown in sandboxed srcdoc frames, which
 * inherit this policy on top of their own: inline styles are allowed so that mail keeps its looks.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchyard console: not built</title></head>
<body style="font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem">
<h1>The web console is not built</h1>
<p>The API is running; only the console's files are missing. Build them with</p>
<pre>npm run build</pre>
<p>(or just the console: <code>npx vite build --config web/vite.config.ts</code>), then reload this page.
The API itself is documented at <a href="/docs">/docs</a>.</p>
</body></html>`;

/** Where the built console is: dist/console/ next to src/ (tsx) or dist/src/ (the compiled build). */
export function defaultConsoleDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, '../../dist/console'), path.resolve(here, '../../console')];
  return candidates.find((d) => fs.existsSync(path.join(d, 'index.html'))) ?? candidates[0]!;
}

interface FileEntry {
  body: Buffer;
  gzip?: Buffer;
  type: string;
  etag: string;
  mtimeMs: number;
}

const mtimeOf = (file: string): number => {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return -1;
  }
};

/**
 * Serves the console after the API's routes have had their turn (only unmatched requests reach it):
 * hashed files under /assets/ for a year, other top-level files for an hour, and index.html (never
 * cached without revalidation) for the console's routes. Anything else goes on to the JSON 404.
 */
export function consoleMiddleware(opts: { dir?: string } = {}): Middleware {
  const files = new Map<string, FileEntry | null>();
  let foundDir: string | undefined;
  // Looked for until found: a console built after the server started is served without a restart.
  const consoleDir = (): string => {
    if (opts.dir) return opts.dir;
    if (foundDir) return foundDir;
    const dir = defaultConsoleDir();
    if (fs.existsSync(path.join(dir, 'index.html'))) foundDir = dir;
    return dir;
  };

  function load(dir: string, rel: string): FileEntry | null {
    const key = `${dir}\0${rel}`;
    const cached = files.get(key);
    // Hashed files never change; index.html does when the console is rebuilt under a running server.
    if (cached !== undefined && (rel !== 'index.html' || (cached && mtimeOf(path.join(dir, rel)) === cached.mtimeMs))) return cached;
    const full = path.join(dir, rel);
    let entry: FileEntry | null = null;
    try {
      const body = fs.readFileSync(full);
      const ext = path.extname(full).toLowerCase();
      entry = {
        body,
        mtimeMs: mtimeOf(full),
        type: TYPES[ext] ?? 'application/octet-stream',
        etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
        ...(COMPRESSIBLE.has(ext) && body.length > 512 ? { gzip: zlib.gzipSync(body, { level: 9 }) } : {}),
      };
    } catch {
      entry = null;
    }
    // A missing index.html is looked for again next time (the build may come later); files are kept once read.
    if (entry || rel !== 'index.html') files.set(key, entry);
    return entry;
  }

  /** `status` 404: the page that says so (never a 304: it is not the file's own address). */
  function send(ctx: Context, f: FileEntry, cacheControl: string, status: 200 | 404 = 200) {
    ctx.set('Cache-Control', cacheControl);
    if (status === 200) ctx.set('ETag', f.etag);
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (f.gzip) ctx.vary('Accept-Encoding');
    ctx.type = f.type;
    if (status === 200 && ctx.get('if-none-match') === f.etag) {
      ctx.status = 304;
      return;
    }
    ctx.status = status;
    if (f.gzip && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = f.gzip;
    } else ctx.body = f.body;
  }

  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const dir = consoleDir();
    const p = ctx.path;
    if (p.startsWith('/assets/')) {
      const name = p.slice('/assets/'.length);
      const f = ASSET_NAME.test(name) ? load(dir, path.join('assets', name)) : null;
      if (!f) return next();
      return send(ctx, f, 'public, max-age=31536000, immutable');
    }
    // A console path that is no page (a mistyped or old address, opened in a browser): the console's own "Page not
    // found", as a 404, rather than the API's JSON.
    const notFoundPage = !CONSOLE_ROUTE.test(p) && wantsPage(ctx) && !API_PATH.test(p) && !/\.[^/]*$/.test(p);
    if (CONSOLE_ROUTE.test(p) || notFoundPage) {
      const index = load(dir, 'index.html');
      if (notFoundPage && !index) return next();
      ctx.set('Content-Security-Policy', CONSOLE_CSP);
      ctx.set('Referrer-Policy', 'same-origin');
      ctx.set('X-Frame-Options', 'DENY');
      if (!index) {
        ctx.status = 503;
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('Cache-Control', 'no-store');
        ctx.body = NOT_BUILT;
        return;
      }
      return send(ctx, index, notFoundPage ? 'no-store' : 'no-cache', notFoundPage ? 404 : 200);
    }
    // Top-level files of web/public (favicon, …): one name, a dot, no directories.
    const name = p.slice(1);
    if (ASSET_NAME.test(name) && name.includes('.') && name !== 'index.html') {
      const f = load(dir, name);
      if (f) return send(ctx, f, 'public, max-age=3600');
    }
    return next();
  };
}
