// Global setup of the browser tests: builds the console (web/) into dist/console/, so they test the sources as they are.
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

export default async function buildConsole(): Promise<void> {
  await build({ configFile: fileURLToPath(new URL('../../web/vite.config.ts', import.meta.url)), logLevel: 'warn' });
}
