// Builds the web console (web/) into dist/console/, which the API serves at / (src/http/console.ts).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const API = process.env.SWITCHYARD_API ?? 'http://127.0.0.1:3000';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  // Preact's automatic JSX runtime, compiled by Vite's own transformer: no plugin needed.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The browsers that run this console support module preload: no injected polyfill.
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
  // `npx vite --config web/vite.config.ts` serves the console with hot reload against an API on :3000.
  server: {
    proxy: Object.fromEntries(['/api', '/v1', '/openapi.json', '/docs', '/admin/queues', '/readyz', '/healthz'].map((p) => [p, API])),
  },
});
