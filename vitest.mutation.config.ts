// The vitest config of mutation runs (stryker.config.mjs): the main one, with only the test files of the module being
// mutated (MUTATION_MODULE).
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { modules } from './stryker.config.mjs';

const chosen = modules[process.env.MUTATION_MODULE ?? ''];
if (!chosen) throw new Error('MUTATION_MODULE names no module of stryker.config.mjs');

// (mergeConfig would add the files to the main config's include, not replace it)
export default defineConfig({ ...base, test: { ...base.test, include: chosen.testFiles } });
