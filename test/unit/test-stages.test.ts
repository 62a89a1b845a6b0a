// `npm test` (scripts/test-stages.mjs) runs every stage even when one fails, and reports each.
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';

const runner = (stages: Record<string, string[]>, args: string[] = []) =>
  spawnSync(process.execPath, ['scripts/test-stages.mjs', ...args], { env: { ...process.env, TEST_STAGES_JSON: JSON.stringify(stages) }, encoding: 'utf8' });

it('runs the stages after a failed one, reports each as passed or FAILED, and exits 1', () => {
  const r = runner({
    first: [process.execPath, '-e', 'process.exit(3)'],
    second: [process.execPath, '-e', 'console.log("second ran")'],
  });
  expect(r.stdout).toContain('second ran');
  expect(r.stdout).toMatch(/FAILED\s+first\s+\d+ s/);
  expect(r.stdout).toMatch(/passed\s+second\s+\d+ s/);
  expect(r.status).toBe(1);
});

it('exits 0 when every stage passes, and runs only the stages named', () => {
  const r = runner({ a: [process.execPath, '-e', ''], b: [process.execPath, '-e', 'process.exit(1)'] }, ['a']);
  expect(r.stdout).toMatch(/passed\s+a\s+\d+ s/);
  expect(r.stdout).not.toMatch(/\bb\b.*\d+ s/);
  expect(r.status).toBe(0);
});
