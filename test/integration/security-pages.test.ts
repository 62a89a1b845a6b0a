// Issue 22 item 8: no HTML page of ours can be framed by another site, and Bull Board's pages load nothing from another origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await t?.close();
});

/** Framing refused both ways: X-Frame-Options for old browsers, frame-ancestors for the rest. */
function expectNoFraming(res: { headers: Headers }, what: string) {
  expect(res.headers.get('content-type'), what).toMatch(/^text\/html/);
  expect(res.headers.get('x-frame-options'), what).toBe('DENY');
  expect(res.headers.get('content-security-policy'), what).toMatch(/(^|;)\s*frame-ancestors 'none'/);
}

/** Any reference to another origin: an absolute or protocol-relative URL in an attribute, a CSS url() or @import. */
const REMOTE = /(?:\b(?:src|href)\s*=\s*["']?|url\(\s*["']?|@import\s+["']?)(?:https?:)?\/\//i;

describe('HTML answers refuse framing (X-Frame-Options: DENY, frame-ancestors none)', () => {
  it('/docs', async () => {
    expectNoFraming(await t.anon.get('/docs'), '/docs');
  });

  it("Bull Board's page and its sub-pages, for admins", async () => {
    for (const path of ['/admin/queues', '/admin/queues/', '/admin/queues/queue/content']) {
      const res = await t.root.get(path);
      expect(res.status, path).toBe(200);
      expectNoFraming(res, path);
    }
  });

  it("the console's routes (built or not)", async () => {
    for (const path of ['/', '/keys']) expectNoFraming(await t.anon.get(path), path);
  });

  it('a page policy that already names frame-ancestors keeps its own; JSON answers get no framing headers', async () => {
    const console = await t.anon.get('/');
    expect(console.headers.get('content-security-policy')!.match(/frame-ancestors/g)).toHaveLength(1);
    const json = await t.anon.get('/healthz');
    expect(json.headers.get('x-frame-options')).toBeNull();
  });
});

describe('Bull Board loads nothing from another origin', () => {
  it('its pages name no other origin (the font CDN link is gone) and its policy allows none', async () => {
    for (const path of ['/admin/queues', '/admin/queues/queue/content']) {
      const res = await t.root.get(path);
      expect(res.text, path).toContain('<div id="root">');
      expect(res.text, path).not.toMatch(REMOTE);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp, path).not.toMatch(/https?:|\/\/|\*/);
      for (const d of ['default-src', 'font-src', 'style-src', 'script-src', 'connect-src']) expect(csp, `${path} ${d}`).toMatch(new RegExp(`${d} 'self'`));
    }
  });

  it('every stylesheet and script its page names is served from here, and no stylesheet imports or loads from elsewhere', async () => {
    const page = await t.root.get('/admin/queues');
    const files = [...page.text.matchAll(/<(?:link|script)\b[^>]*\b(?:href|src)="([^"]+\.(?:css|js))"/g)].map((m) => m[1]!);
    expect(files.filter((f) => f.endsWith('.css')).length).toBeGreaterThan(0);
    expect(files.filter((f) => f.endsWith('.js')).length).toBeGreaterThan(0);
    for (const f of files) {
      const res = await t.root.get(new URL(f, `${t.url}/admin/queues/`).pathname);
      expect(res.status, f).toBe(200);
      if (f.endsWith('.css')) expect(res.text, f).not.toMatch(REMOTE);
    }
  });
});
