// The API serves the built console: its files with the right types and caching, index.html for the console's own
// routes (and, as a 404, for a browser's unknown page outside the API's paths; every other unknown path keeps the API's
// JSON 404), a clear page when it is not built, and a small first load.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, consoleMiddleware, defaultConsoleDir } from '../../src/http/console.js';
import { startTestApp, type TestApp, tempDir } from '../helpers/services.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await t?.close();
});

/** A GET with no automatic decompression, so Content-Encoding and the bytes on the wire can be checked. */
function raw(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The files a first visit loads: the entry script, what it preloads, and the stylesheets named in index.html. */
function firstLoad(html: string): { scripts: string[]; styles: string[] } {
  const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g), ...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g)].map((m) => m[1]!);
  const styles = [...html.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"/g)].map((m) => m[1]!);
  return { scripts, styles };
}

describe('serving the console', () => {
  it('answers / with index.html: no caching without revalidation, a strict CSP, no inline script', async () => {
    const res = await fetch(`${t.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    expect(html).toContain('<div id="app">');
    // Every script has a src on this origin: nothing inline (which the CSP would refuse), nothing remote.
    for (const m of html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)) {
      expect(m[1]).toMatch(/\bsrc="\/assets\//);
      expect(m[2]!.trim()).toBe('');
    }
    expect(html).not.toMatch(/(src|href)="https?:/);
  });

  it('serves hashed assets for a year (immutable), gzipped when asked, with their content types', async () => {
    const html = await (await fetch(`${t.url}/`)).text();
    const { scripts, styles } = firstLoad(html);
    expect(scripts.length).toBeGreaterThan(0);
    expect(styles.length).toBeGreaterThan(0);
    for (const [file, type] of [...scripts.map((s) => [s, 'text/javascript; charset=utf-8']), ...styles.map((s) => [s, 'text/css; charset=utf-8'])] as const) {
      expect(file).toMatch(/^\/assets\/[\w-]+-[\w-]{8}\.(js|css)$/);
      const plain = await raw(t.url + file);
      expect(plain.status, file).toBe(200);
      expect(plain.headers['content-type']).toBe(type);
      expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(plain.headers['content-encoding']).toBeUndefined();
      const gz = await raw(t.url + file, { 'accept-encoding': 'gzip, br' });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers.vary).toMatch(/Accept-Encoding/);
      expect(zlib.gunzipSync(gz.body).equals(plain.body)).toBe(true);
      // Revalidation by ETag answers 304 without a body.
      const again = await raw(t.url + file, { 'if-none-match': String(plain.headers.etag) });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
    }
    const icon = await raw(`${t.url}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('public, max-age=3600');
  });

  it('answers the console routes with index.html, and HEAD with no body', async () => {
    const index = await (await fetch(`${t.url}/`)).text();
    for (const p of [
      '/login',
      '/keys',
      '/playground',
      '/content',
      '/content/0193a1b2-0000-7000-8000-000000000000',
      '/mail',
      '/mail/someone%40example.org',
      '/jobs',
      '/logs',
      '/account',
      '/admin/users',
      '/admin/channels',
      '/admin/redemptions',
      '/admin/logs',
    ]) {
      const res = await fetch(t.url + p);
      expect(res.status, p).toBe(200);
      expect(await res.text(), p).toBe(index);
    }
    const head = await raw(`${t.url}/keys`, {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
  });

  it('leaves every other path to the API: JSON 404s, the API, the docs, the board, the probes', async () => {
    for (const p of [
      '/nothing-here',
      '/api/nope',
      '/v1/nope',
      '/assets/nope.js',
      '/assets/../package.json',
      '/keys/extra/deep',
      '/admin/other',
      '/index.html',
    ]) {
      const res = await fetch(t.url + p);
      expect(res.status, p).toBe(404);
      expect(res.headers.get('content-type'), p).toMatch(/application\/json/);
    }
    expect(await (await fetch(`${t.url}/nothing-here`)).json()).toEqual({ error: 'No route for GET /nothing-here' });
    expect(await (await fetch(`${t.url}/v1/nope`)).json()).toMatchObject({ error: { message: expect.any(String) } });
    const post = await fetch(`${t.url}/`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(post.headers.get('content-type')).toMatch(/json/);
    expect((await fetch(`${t.url}/healthz`)).headers.get('content-type')).toMatch(/json/);
    expect((await fetch(`${t.url}/openapi.json`)).headers.get('content-type')).toMatch(/json/);
    expect((await (await fetch(`${t.url}/docs`)).text()).toLowerCase()).toContain('swagger');
    const board = await fetch(`${t.url}/admin/queues`);
    expect(board.status).toBe(401);
    expect(board.headers.get('content-type')).toMatch(/json/);
    const api = await t.root.get('/api/user/self');
    expect(api.status).toBe(200);
  });

  it("answers a browser's unknown page with the console's \"Page not found\" (a 404), and keeps the API's paths JSON", async () => {
    const page = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const index = await (await fetch(`${t.url}/`)).text();
    for (const p of ['/nothing-here', '/keys/extra/deep', '/admin/other', '/content/not-an-id/x']) {
      const res = await fetch(t.url + p, { headers: page });
      expect(res.status, p).toBe(404);
      expect(res.headers.get('content-type'), p).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy'), p).toBe(CONSOLE_CSP);
      expect(await res.text(), p).toBe(index);
    }
    // The API's own paths, files and the probes stay JSON for a browser too.
    for (const p of ['/api/nope', '/v1/nope', '/assets/nope.js', '/docs/nope', '/healthz/x', '/metrics/x', '/openapi.json/x', '/robots.txt', '/index.html']) {
      const res = await fetch(t.url + p, { headers: page });
      expect(res.status, p).toBe(404);
      expect(res.headers.get('content-type'), p).toMatch(/application\/json/);
    }
  });

  it('keeps the first load small, as docs/console.md says: entry script and preloads ≤ 35 KB, styles ≤ 5 KB, every script ≤ 110 KB, gzipped', async () => {
    const html = await (await fetch(`${t.url}/`)).text();
    const { scripts, styles } = firstLoad(html);
    let js = 0;
    let css = 0;
    for (const f of scripts) js += (await raw(t.url + f, { 'accept-encoding': 'gzip' })).body.length;
    for (const f of styles) css += (await raw(t.url + f, { 'accept-encoding': 'gzip' })).body.length;
    const all = fs.readdirSync(`${defaultConsoleDir()}/assets`).filter((f) => f.endsWith('.js'));
    const allJs = all.reduce((sum, f) => sum + zlib.gzipSync(fs.readFileSync(`${defaultConsoleDir()}/assets/${f}`), { level: 9 }).length, 0);
    console.log(
      `console size, gzipped: first load ${(js / 1024).toFixed(1)} KB JS + ${(css / 1024).toFixed(1)} KB CSS; all ${all.length} JS files ${(allJs / 1024).toFixed(1)} KB`,
    );
    // The manual says about 30 KB of JavaScript, 3.5 KB of CSS and 90 KB in all: a bound a little above each.
    expect(js).toBeLessThanOrEqual(35 * 1024);
    expect(css).toBeLessThanOrEqual(5 * 1024);
    expect(allJs).toBeLessThanOrEqual(110 * 1024);
  });
});

describe('when the console is not built', () => {
  it('says how to build it on the console routes, and leaves other paths alone', async () => {
    const app = new Koa();
    app.use(consoleMiddleware({ dir: tempDir('no-console') }));
    app.use((ctx) => {
      ctx.status = 404;
      ctx.body = { error: 'next' };
    });
    const server = await new Promise<http.Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const p of ['/', '/keys', '/admin/users']) {
        const res = await fetch(url + p);
        expect(res.status, p).toBe(503);
        expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
        const text = await res.text();
        expect(text).toContain('not built');
        expect(text).toContain('npm run build');
      }
      for (const p of ['/assets/index-abc.js', '/favicon.svg', '/nothing']) expect(await (await fetch(url + p)).json()).toEqual({ error: 'next' });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
