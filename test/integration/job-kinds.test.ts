// A job kind is one declaration (issue 23): one declared here, in a test, and added to the application's list the way
// src/job-kinds.ts lists the areas', runs end to end: enqueued by name through the platform's client, taken from real
// Redis by a real worker, its handler given the payload its schema parsed, its result shown by the jobs API.
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { jobList } from '../../src/job-kinds.js';
import type { JobClient } from '../../src/jobs/client.js';
import { defineJob } from '../../src/jobs/define.js';
import { byName } from '../../src/jobs/registry.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

/** What the handler was given, each time it ran. */
const runs: { text: string; times: number; owner: number | null }[] = [];

/** The test's job kind, all of it: name, queue, payload schema, handler. */
const echo = defineJob<{ echoed: string; worker: string }>()({
  name: 'probe.echo',
  queue: 'content',
  payload: z.object({ text: z.string().min(1), times: z.number().int().min(1).max(3).default(1) }),
  run: async ({ text, times }, { owner, job }) => {
    runs.push({ text, times, owner });
    await job.updateProgress(50);
    return { echoed: text.repeat(times), worker: `${process.pid}` };
  },
});
const kinds = byName([...jobList, echo]);

let t: TestApp;
let jobs: JobClient<typeof kinds>;

beforeAll(async () => {
  t = await startTestApp({ jobs: kinds });
  // The platform's client, typed by these kinds rather than the registered ones.
  jobs = t.platform.jobs as unknown as JobClient<typeof kinds>;
});

afterAll(async () => {
  await t?.close();
});

describe('a job kind declared once, in a test', () => {
  it("is enqueued by name with its payload's type, run by a worker with the parsed payload, and answers its result", async () => {
    expectTypeOf<Parameters<typeof jobs.run<'probe.echo'>>[1]>().toEqualTypeOf<{ text: string; times?: number }>();
    const outcome = await jobs.run('probe.echo', { text: 'ab' }, { owner: null, waitMs: 15_000 });
    expect(outcome).toMatchObject({ done: true, result: { echoed: 'ab', worker: `${process.pid}` } });
    // The default came from the schema, applied in the worker.
    expect(runs).toEqual([{ text: 'ab', times: 1, owner: null }]);

    const twice = await jobs.run('probe.echo', { text: 'ab', times: 2 }, { owner: null, waitMs: 15_000 });
    if (!twice.done) throw new Error('the job did not finish');
    expectTypeOf(twice.result).toEqualTypeOf<{ echoed: string; worker: string }>();
    expect(twice.result.echoed).toBe('abab');

    // The jobs API shows it as any other job: its queue, name, progress and result.
    const status = await t.root.get(`/api/jobs/${twice.jobId}`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ queue: 'content', name: 'probe.echo', state: 'completed', progress: 50, result: { echoed: 'abab' } });
  });

  it('a payload its schema refuses fails in the worker at once (400, not retried), and the handler never runs', async () => {
    runs.length = 0;
    await expect(jobs.run('probe.echo', { text: '' }, { owner: null, waitMs: 15_000 })).rejects.toMatchObject({ status: 400, code: 'invalid_payload' });
    expect(runs).toEqual([]);
  });

  it('a name the platform was not given is refused before anything is enqueued', async () => {
    await expect(t.platform.jobs.enqueue('probe.nothing' as never, {} as never, { owner: null })).rejects.toThrow(
      /job "probe.nothing" is not among this platform's job kinds/,
    );
  });
});
