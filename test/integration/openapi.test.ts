// /openapi.json describes every route the app serves (and nothing else); /docs works offline; /metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRouters } from '../../src/http/app.js';
import { openApiSpec } from '../../scripts/gen-web-types.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => {
  await t?.close();
});

describe('/openapi.json', () => {
  it('is OpenAPI 3.1 and lists exactly the routes the routers serve', async () => {
    const res = await t.anon.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const documented = new Set<string>();
    for (const [p, ops] of Object.entries(res.body.paths as Record<string, Record<string, unknown>>))
      for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${p}`);
    const served = new Set<string>();
    for (const r of buildRouters(t.platform)) {
      for (const layer of r.stack) {
        const p = String(layer.path).replace(/:([A-Za-z]+)/g, '{$1}');
        if (p.startsWith('/docs/')) continue; // the docs page's own assets
        for (const m of layer.methods) if (m !== 'HEAD') served.add(`${m} ${p}`);
      }
    }
    served.add('GET /admin/queues'); // mounted as a sub-app, not a router
    expect([...served].filter((x) => !documented.has(x))).toEqual([]);
    expect([...documented].filter((x) => !served.has(x))).toEqual([]);
  });

  it('takes request schemas from the validating zod schemas', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    const token = doc.paths['/api/token/'].post.requestBody.content['application/json'].schema;
    expect(token.properties.name.maxLength).toBe(50);
    expect(token.properties.remain_quota.minimum).toBe(0);
    const emb = doc.paths['/v1/embeddings'].post.requestBody.content['application/json'].schema;
    expect(emb.properties.encoding_format.enum).toEqual(['float', 'base64']);
    const list = doc.paths['/api/content'].get.parameters.find((x: { name: string }) => x.name === 'orderBy');
    expect(list.schema.enum).toEqual(['score', 'createdAt', 'analyzedAt']);
    expect(doc.paths['/api/content/batch'].post.responses['202']).toBeDefined();
  });

  it("is the document the console's types are generated from (scripts/gen-web-types.ts builds it without Postgres or Redis)", async () => {
    const served = (await t.anon.get('/openapi.json')).body;
    expect(served).toEqual(JSON.parse(JSON.stringify(openApiSpec())));
  });
});

describe('/docs', () => {
  it('serves the page and its assets from this server (no CDN)', async () => {
    const page = await t.anon.get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/https?:\/\//);
    for (const src of [...page.text.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]!)) {
      const asset = await fetch(t.url + src);
      expect(asset.status, src).toBe(200);
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(10);
    }
    expect((await t.anon.get('/docs/assets/../../package.json')).status).toBe(404);
    // Names every object has (its prototype's) are not assets.
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const res = await t.anon.get(`/docs/assets/${name}`);
      expect(res.status, name).toBe(404);
      expect(res.headers.get('content-type'), name).toMatch(/json/);
    }
  });
});

describe('/metrics', () => {
  it('has HTTP latency by route, queue depth by state and process metrics', async () => {
    await t.anon.get('/healthz');
    await t.root.get('/api/user/self');
    const res = await t.anon.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    expect(res.text).toMatch(/switchyard_http_request_duration_seconds_bucket\{.*route="\/api\/user\/self".*status="200"/);
    expect(res.text).toMatch(/switchyard_queue_jobs\{queue="content",state="waiting"\} \d+/);
    expect(res.text).toMatch(/switchyard_process_resident_memory_bytes \d+/);
  });
});
