// One user's many built-in-model calls do not queue another user's call behind all of theirs at the workers (issue 22
// item 2, from an attack: 96 medium calls in flight kept another user's sentence ~30 s in the embeddings queue).
// Real Redis and Postgres; no workers, so the jobs stay queued and their order can be read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingsCoalescer } from '../../src/embeddings/coalescer.js';
import type { GenerationRequest } from '../../src/embeddings/schema.js';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { REDIS_URL, startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
beforeAll(async () => {
  // Calls give up soon: nothing will run their jobs.
  t = await startTestApp({ workers: false, env: { SYNC_WAIT_MS: '1500' } });
});
afterAll(async () => {
  await t?.close();
});

const call = (caller: number, i: number): GenerationRequest => ({ model: 'use-lite', inputs: [`text ${caller}-${i}`], tokens: [3], caller });
const nextTurn = () => new Promise((r) => setImmediate(r));

describe('the embeddings queue', () => {
  it("takes a caller's first call out before another caller's calls queued earlier, and that caller's in the order sent", async () => {
    const coalescer = new EmbeddingsCoalescer(t.platform, 64);
    const queue = t.platform.jobs.queues.get('embeddings')!;
    const answers: Promise<unknown>[] = [];
    // Caller 1 sends five calls, each in a turn of its own (so each is a job of its own); then caller 2 sends one.
    for (let i = 0; i < 5; i++) {
      answers.push(coalescer.submit(call(1, i)).catch(() => {}));
      await nextTurn();
    }
    answers.push(coalescer.submit(call(2, 0)).catch(() => {}));
    await nextTurn();
    let jobs: Awaited<ReturnType<typeof queue.getJobs>> = [];
    for (let i = 0; i < 50 && jobs.length < 6; i++) {
      jobs = await queue.getJobs(['wait', 'prioritized']);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(jobs).toHaveLength(6);
    // A worker (one job at a time) takes them: caller 2's one call second, not sixth.
    const callerOf = (data: { sealed: string }) =>
      (JSON.parse(t.platform.secrets.decrypt(data.sealed)) as { requests: GenerationRequest[] }).requests[0]!.caller;
    const taken: (number | undefined)[] = [];
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker('embeddings', async (job) => void taken.push(callerOf(job.data)), {
      connection,
      prefix: t.platform.keys.queuePrefix('embeddings'),
      concurrency: 1,
    });
    for (let i = 0; i < 100 && taken.length < 6; i++) await new Promise((r) => setTimeout(r, 50));
    await worker.close();
    connection.disconnect();
    expect(taken).toEqual([1, 2, 1, 1, 1, 1]);
    await Promise.all(answers);
  });
});
