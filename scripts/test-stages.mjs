#!/usr/bin/env node
// `npm test`: the suite's stages one after another, each run whatever the last one did, then a summary of every
// stage (passed or failed, and how long it took); the exit code is non-zero when any stage failed.
//   node scripts/test-stages.mjs [main|scale|timing ...]   (default: all three)
import { spawn } from 'node:child_process';

// (TEST_STAGES_JSON replaces them: test/unit/test-stages.test.ts checks the runner with stages of its own.)
const STAGES = process.env.TEST_STAGES_JSON
  ? JSON.parse(process.env.TEST_STAGES_JSON)
  : {
      main: ['npx', 'vitest', 'run'],
      scale: ['npx', 'vitest', 'run', '--config', 'vitest.scale.config.ts'],
      timing: ['npx', 'vitest', 'run', '--config', 'vitest.timing.config.ts'],
    };

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!Object.hasOwn(STAGES, name)) {
    console.error(`unknown stage "${name}"; the stages are ${Object.keys(STAGES).join(', ')}`);
    process.exit(2);
  }
}
const names = wanted.length ? wanted : Object.keys(STAGES);

const run = (args) =>
  new Promise((resolve) => {
    const child = spawn(args[0], args.slice(1), { stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', () => resolve(1));
  });

const results = [];
for (const name of names) {
  console.log(`\n== npm test: stage ${name} (${STAGES[name].join(' ')})`);
  const started = Date.now();
  const code = await run(STAGES[name]);
  results.push({ name, code, seconds: (Date.now() - started) / 1000 });
}

console.log('\n== npm test: every stage');
for (const r of results) console.log(`${r.code === 0 ? 'passed' : 'FAILED'}  ${r.name.padEnd(6)} ${r.seconds.toFixed(0).padStart(5)} s`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
