// Job kinds (issue 23): a job is declared in one place, its area's jobs.ts (name, queue, payload, options and its
// handler); src/job-kinds.ts lists the areas; the worker's boot check refuses a gap; declaring loads no worker code.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { queueNames } from '../../src/config.js';
import { contentBatch } from '../../src/content/jobs.js';
import { jobKinds, jobList, queueHooks } from '../../src/job-kinds.js';
import { byName, type JobKind, type JobKinds } from '../../src/jobs/registry.js';
import { checkJobKinds } from '../../workers/index.js';
import { ROOT_DIR } from '../helpers/spawn.js';

/** All that a job declaration consists of (JobKind, src/jobs/registry.ts): nothing of a job kind is kept elsewhere. */
const DECLARATION_KEYS = [
  'name',
  'queue',
  'payload',
  'run',
  'options',
  'payloadIn',
  'resultIn',
  'reply',
  'notCancellable',
  'ownerConcurrency',
  'retryDelay',
] as const;

describe('a job declaration', () => {
  it('consists of its name, queue, payload schema and handler (run), and optionally options, payloadIn, resultIn, reply, notCancellable, ownerConcurrency, retryDelay', () => {
    expectTypeOf<keyof JobKind>().toEqualTypeOf<(typeof DECLARATION_KEYS)[number]>();
    for (const def of jobList) {
      expect(DECLARATION_KEYS, def.name).toEqual(expect.arrayContaining(Object.keys(def)));
      expect(typeof def.run, `${def.name} has a handler`).toBe('function');
      expect(queueNames, def.name).toContain(def.queue);
      expect(typeof def.payload.safeParse, `${def.name}'s payload is a schema`).toBe('function');
    }
  });

  it('names every job <area>.<verb>, each once, keyed by its own name', () => {
    const names = jobList.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(jobKinds).sort()).toEqual([...names].sort());
    for (const [key, def] of Object.entries(jobKinds)) {
      expect(def.name).toBe(key);
      expect(def.name).toMatch(/^[a-z]+\.[a-z]+$/);
    }
    expect(() => byName([...jobList, { ...contentBatch }])).toThrow(/job "content.batch" is declared twice/);
  });
});

describe("the worker's boot check", () => {
  it('passes the application: every kind with a handler, every hook on a queue', () => {
    expect(() => checkJobKinds(jobKinds, queueHooks)).not.toThrow();
  });

  it('refuses a kind without a handler (a cast past the type), listed under another name, or on no queue, and a hook on no queue', () => {
    const { run: _run, ...withoutHandler } = contentBatch;
    expect(() => checkJobKinds({ ...jobKinds, 'content.batch': withoutHandler } as unknown as JobKinds, queueHooks)).toThrow(
      /job "content.batch" has no handler: give its declaration a run \(defineJob, in the jobs.ts of the area that declares it\)/,
    );
    expect(() => checkJobKinds({ ...jobKinds, 'content.other': contentBatch }, queueHooks)).toThrow(/job "content.batch" is listed as "content.other"/);
    const nowhere = { ...contentBatch, queue: 'nowhere' } as unknown as JobKind;
    expect(() => checkJobKinds({ ...jobKinds, 'content.batch': nowhere }, queueHooks)).toThrow(
      /job "content.batch" is declared on "nowhere", which is not a queue/,
    );
    expect(() => checkJobKinds(jobKinds, [...queueHooks, { queue: 'nowhere' } as never])).toThrow(/queue hooks for "nowhere", which is not a queue/);
  });
});

describe('declarations load no worker code', () => {
  it("importing every declaration (what an API process does) loads none of the handlers' modules nor the mail libraries", async () => {
    // A child process records every module it resolves while importing the composition root.
    const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sy-loads-')), 'loaded.txt');
    const hook = `import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  fs.appendFileSync(${JSON.stringify(log)}, resolved.url + '\\n');
  return resolved;
}`;
    const script = `import { register } from 'node:module';
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});
await import(${JSON.stringify(pathToFileURL(path.join(ROOT_DIR, 'src/job-kinds.ts')).href)});`;
    try {
      await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT_DIR });
      const loaded = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
      expect(loaded.some((url) => url.endsWith('/src/mail/jobs.ts'))).toBe(true);
      const workerCode = [
        /\/workers\//,
        /\/src\/content\/(batch|store)\.ts$/,
        /\/src\/embeddings\/(generate|use-lite|use-lite-worker|upstream)\.ts$/,
        /\/src\/mail\/(operations|imap|smtp|codes)\.ts$/,
        /\/node_modules\/(imapflow|mailparser|nodemailer)\//,
      ];
      expect(loaded.filter((url) => workerCode.some((re) => re.test(url)))).toEqual([]);
    } finally {
      fs.rmSync(path.dirname(log), { recursive: true, force: true });
    }
  });
});
