// The vitest config of mutation runs (stryker.config.mjs): the main one, with only the test files of the module being
// mutated (MUTATION_MODULE), run in the order scripts/mutation-modules.mjs lists them (the quick ones first: Stryker
// stops a mutant's run at its first failing test, so a mutant the unit tests kill never waits for a test app to start).
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { modules } from './scripts/mutation-modules.mjs';

const chosen = modules[process.env.MUTATION_MODULE ?? ''];
if (!chosen) throw new Error('MUTATION_MODULE names no module of scripts/mutation-modules.mjs');
const files: string[] = chosen.testFiles;

class ListedOrder extends BaseSequencer {
  override async sort(specs: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (s: TestSpecification) => files.findIndex((f) => s.moduleId.endsWith(path.sep + f.split('/').join(path.sep)));
    return [...specs].sort((a, b) => rank(a) - rank(b));
  }
}

// (mergeConfig would add the files to the main config's include, not replace it)
export default defineConfig({ ...base, test: { ...base.test, include: files, sequence: { sequencer: ListedOrder } } });
