#!/usr/bin/env node
// `npx switchyard <command>` and `npm run cli -- <command>`: the operator CLI (src/cli/main.ts). In a checkout it first
// builds the server when its sources changed, as npm start does (the build's output goes to standard error: standard
// output is the command's answer); in an image with dist/ only, it runs what is built.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const builder = path.join(root, 'scripts', 'build-if-stale.mjs');
if (fs.existsSync(builder)) {
  const built = spawnSync(process.execPath, [builder, 'server'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
process.setSourceMapsEnabled(true);
await import(pathToFileURL(path.join(root, 'dist', 'src', 'cli', 'main.js')).href);
