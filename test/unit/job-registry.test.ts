// The job registry and the processor boot check: every declared job has exactly one processor, or workers refuse to start.
import { describe, expect, it } from 'vitest';
import type { ProcessorMap } from '../../src/jobs/processor.js';
import { processorMaps } from '../../src/jobs/processors.js';
import { jobDefinitions } from '../../src/jobs/registry.js';
import { buildProcessorTable } from '../../workers/index.js';

describe('the processor boot check', () => {
  it('refuses a job without a processor, a job with two, and a processor for no job', () => {
    expect(() => buildProcessorTable({})).toThrow(/job "content.ping" has no processor/);
    expect(() => buildProcessorTable({ ...processorMaps, content: {} })).toThrow(/job "content.batch" has no processor/);
    expect(() => buildProcessorTable({ a: processorMaps.content!, b: processorMaps.content! })).toThrow(
      /job "content\.[a-z]+" has two processors \(in a and b\)/,
    );
    expect(() => buildProcessorTable({ ...processorMaps, extra: { 'content.ghost': async () => ({}) } as unknown as ProcessorMap })).toThrow(
      /undeclared job "content.ghost"/,
    );
  });

  it('says where the missing processor goes', () => {
    const { 'mail.send': _send, ...mailWithoutSend } = processorMaps.mail!;
    expect(() => buildProcessorTable({ ...processorMaps, mail: mailWithoutSend })).toThrow(
      /job "mail.send" has no processor: add one to the processors.ts of the area that declares it \(src\/<area>\/processors.ts\)/,
    );
  });

  it('finds exactly one processor for every job in the registry', () => {
    const table = buildProcessorTable(processorMaps);
    expect([...table.keys()].sort()).toEqual(Object.keys(jobDefinitions).sort());
  });
});

describe('the registry', () => {
  it('names every job <area>.<verb>, keyed by its own name', () => {
    for (const [key, def] of Object.entries(jobDefinitions)) {
      expect(def.name).toBe(key);
      expect(def.name).toMatch(/^[a-z]+\.[a-z]+$/);
    }
  });
});
