// npm run test:mutation [-- module...]: Stryker on each core module in turn (stryker.config.mjs lists them), one
// test runner at a time, then a table of each module's mutants: killed (timeouts count as killed), survived, without
// coverage, and the score. Reports: reports/mutation/<module>/index.html. A second run re-tests only the mutants whose
// code or tests changed (incremental); delete reports/mutation/<module>/ for a full run.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { modules } from './mutation-modules.mjs';

const asked = process.argv.slice(2);
for (const m of asked) if (!(m in modules)) throw new Error(`no module "${m}"; the modules: ${Object.keys(modules).join(', ')}`);
const rows = [];
for (const name of asked.length ? asked : Object.keys(modules)) {
  const started = Date.now();
  const run = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs'], { stdio: 'inherit', env: { ...process.env, MUTATION_MODULE: name } });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (run.status !== 0) {
    rows.push({ name, seconds, failed: true });
    continue;
  }
  const report = JSON.parse(fs.readFileSync(`reports/mutation/${name}/mutation.json`, 'utf8'));
  const count = { Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, Ignored: 0, RuntimeError: 0, CompileError: 0 };
  for (const file of Object.values(report.files)) for (const m of file.mutants) count[m.status] = (count[m.status] ?? 0) + 1;
  const killed = count.Killed + count.Timeout;
  const valid = killed + count.Survived + count.NoCoverage;
  rows.push({
    name,
    seconds,
    mutants: valid,
    killed,
    survived: count.Survived,
    noCoverage: count.NoCoverage,
    score: valid ? ((100 * killed) / valid).toFixed(1) : '-',
  });
}
console.log('\nmodule       mutants  killed  survived  no coverage  score   time');
for (const r of rows) {
  if (r.failed) console.log(`${r.name.padEnd(12)} the run failed after ${r.seconds} s`);
  else
    console.log(
      `${r.name.padEnd(12)} ${String(r.mutants).padStart(7)} ${String(r.killed).padStart(7)} ${String(r.survived).padStart(9)} ${String(r.noCoverage).padStart(12)}  ${String(r.score).padStart(5)}%  ${r.seconds} s`,
    );
}
process.exitCode = rows.some((r) => r.failed) ? 1 : 0;
