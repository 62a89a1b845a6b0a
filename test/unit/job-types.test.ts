// The job registry's types: enqueue()/run() take only registered names with their own payload types, and a job
// declaration must carry its handler, typed by its payload and result. These are compile-time checks: `npm run typecheck` (run by .ci/run) fails when they stop holding —
// an unused `@ts-expect-error` is an error, and so is an expectTypeOf mismatch. At run time they are no-ops.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { JobClient } from '../../src/jobs/client.js';
import { defineJob } from '../../src/jobs/define.js';
import type { JobName, PayloadOf, ResultOf } from '../../src/jobs/registry.js';
import type { BatchResult } from '../../src/content/schema.js';
import type { PingResult } from '../../src/jobs/ping.js';

declare const jobs: JobClient;

describe('job types (npm run typecheck)', () => {
  it('enqueue and run type each payload and result by job name, and refuse unknown names and wrong payloads at compile time', () => {
    expectTypeOf<PayloadOf<'content.batch'>>().toEqualTypeOf<{ items: unknown[] }>();
    expectTypeOf<Parameters<typeof jobs.enqueue<'content.batch'>>[1]>().toEqualTypeOf<{ items: unknown[] }>();
    expectTypeOf<Parameters<typeof jobs.run<'content.batch'>>[1]>().toEqualTypeOf<{ items: unknown[] }>();
    expectTypeOf<ResultOf<'content.batch'>>().toEqualTypeOf<BatchResult>();
    expectTypeOf<'content.nope'>().not.toExtend<JobName>();
    expectTypeOf<'content.batch'>().toExtend<JobName>();

    // Never called: only compiled. Each line below must be a type error, or typecheck fails on the directive.
    const misuse = async () => {
      // @ts-expect-error the payload of content.batch is { items: unknown[] }
      await jobs.enqueue('content.batch', { entries: [] }, { owner: null });
      // @ts-expect-error items must be an array
      await jobs.enqueue('content.batch', { items: 'x' }, { owner: null });
      // @ts-expect-error there is no such job
      await jobs.enqueue('content.nope', { items: [] }, { owner: null });
      // @ts-expect-error the payload of mail.send is not content's
      await jobs.run('mail.send', { items: [] }, { owner: null, waitMs: 0 });
      const run = await jobs.run('content.batch', { items: [] }, { owner: null, waitMs: 0 });
      // @ts-expect-error a content.batch result has no messageId
      if (run.done) void run.result.messageId;
    };
    void misuse;
  });

  it("types by the kinds the composition root registers (src/job-kinds.ts): the areas' and the pings", () => {
    expectTypeOf<JobName>().toEqualTypeOf<
      | 'content.ping'
      | 'embeddings.ping'
      | 'mail.ping'
      | 'content.batch'
      | 'embeddings.create'
      | 'mail.fetch'
      | 'mail.purge'
      | 'mail.code'
      | 'mail.send'
      | 'webhooks.ping'
      | 'webhooks.deliver'
      | 'logs.maintain'
      | 'schedules.tick'
      | 'schedules.ping'
      | 'batches.ping'
      | 'batches.run'
      | 'batches.chunk'
      | 'batches.finalize'
      | 'files.expire'
    >();
    expectTypeOf<ResultOf<'mail.ping'>>().toEqualTypeOf<PingResult>();
  });

  it('a declaration needs its handler, which takes the parsed payload and returns the declared result', () => {
    const payload = z.object({ n: z.coerce.number() });
    const job = defineJob<{ doubled: number }>()({ name: 'test.double', queue: 'content', payload, run: async ({ n }) => ({ doubled: n * 2 }) });
    expectTypeOf<Parameters<typeof job.run>[0]>().toEqualTypeOf<{ n: number }>();
    // Never called: only compiled.
    const misuse = () => {
      // @ts-expect-error a declaration without its handler (run) does not compile
      defineJob<{ doubled: number }>()({ name: 'test.nohandler', queue: 'content', payload });
      // @ts-expect-error the handler must return the declared result
      defineJob<{ doubled: number }>()({ name: 'test.wrong', queue: 'content', payload, run: async ({ n }) => ({ tripled: n * 3 }) });
      // @ts-expect-error its payload is the schema's output: n is a number
      defineJob<{ doubled: number }>()({ name: 'test.string', queue: 'content', payload, run: async ({ n }: { n: string }) => ({ doubled: n.length }) });
      // @ts-expect-error a declaration has no other fields (a processor elsewhere, say)
      defineJob<{ doubled: number }>()({ name: 'test.extra', queue: 'content', payload, run: async () => ({ doubled: 0 }), processor: 'content' });
    };
    void misuse;
  });
});
