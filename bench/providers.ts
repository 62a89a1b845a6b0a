// Each provider adapter's cost in the API process (docs/providers.md): /v1/embeddings relayed to a channel of each
// type, its fake upstream (test/helpers, in the bench process) answering 1536-dimension vectors, 16 connections, unique
// inputs (no cache hits); the API process's CPU time (user + system, /proc) per call. The calls differ only in the
// adapter (how the request is built and the answer read), so the figures compare the adapters.
import { FakeAzure } from '../test/helpers/fake-azure.js';
import { FakeCohere } from '../test/helpers/fake-cohere.js';
import { FakeGemini } from '../test/helpers/fake-gemini.js';
import { FakeOpenAI } from '../test/helpers/fake-openai.js';
import { cpuMs, load } from './load.js';

export interface ProvidersBenchContext {
  B: string;
  key: string;
  accessToken: string;
  apiPid: number;
  seconds: number;
  report: (f: { name: string; value: number; unit: string; baseline?: number; ratio?: number; goal: string; pass: boolean; note?: string }) => void;
  log: (msg: string) => void;
}

interface Fake {
  url: string;
  stop(): Promise<void>;
}

const DIMS = 1536;

export async function providersBench(c: ProvidersBenchContext): Promise<void> {
  const cases: { type: string; model: string; start: () => Promise<Fake>; channel: (f: Fake) => Record<string, unknown> }[] = [
    { type: 'openai', model: 'text-embedding-3-small', start: () => new FakeOpenAI().start(), channel: (f) => ({ key: 'sk-bench', base_url: f.url }) },
    {
      type: 'azure',
      model: 'text-embedding-3-small',
      start: () => new FakeAzure().start(),
      channel: (f) => ({ key: (f as FakeAzure).key, base_url: f.url }),
    },
    {
      type: 'gemini',
      model: 'gemini-embedding-001',
      start: () => new FakeGemini().start(),
      channel: (f) => ({ key: (f as FakeGemini).key, base_url: f.url }),
    },
    {
      type: 'cohere',
      model: 'embed-v4.0',
      start: () => new FakeCohere().start(),
      channel: (f) => ({ key: (f as FakeCohere).key ?? 'co-bench-key', base_url: f.url }),
    },
  ];
  const perCall = new Map<string, number>();
  for (const k of cases) {
    const fake = await k.start();
    try {
      const model = `bench-${k.type}-${Date.now().toString(36)}`;
      const made = await fetch(`${c.B}/api/channel/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: c.accessToken },
        body: JSON.stringify({ type: k.type, name: model, models: model, model_mapping: { [model]: k.model }, price: 1, ...k.channel(fake) }),
      });
      if (made.status !== 201) throw new Error(`${k.type} channel: ${made.status} ${await made.text()}`);
      const run = Date.now().toString(36);
      const body = (i: number) =>
        JSON.stringify({ model, input: `${k.type} ${run} sentence number ${i} about queues`, dimensions: DIMS, encoding_format: 'float' });
      c.log(`providers: ${k.type} (16 connections, ${DIMS} dimensions, unique inputs)`);
      const before = cpuMs(c.apiPid);
      const r = await load({
        url: `${c.B}/v1/embeddings`,
        method: 'POST',
        headers: { authorization: `Bearer ${c.key}` },
        body,
        connections: 16,
        durationMs: c.seconds * 1000,
        warmupMs: 0,
      });
      const cpu = cpuMs(c.apiPid) - before;
      if (r.errors) throw new Error(`${k.type}: ${r.errors} errors ${JSON.stringify(r.statuses)}`);
      perCall.set(k.type, (cpu * 1000) / r.requests);
      c.report({
        name: `provider_${k.type}_api_cpu_per_call`,
        value: (cpu * 1000) / r.requests,
        unit: 'µs',
        baseline: perCall.get('openai'),
        ratio: perCall.get('openai') ? (cpu * 1000) / r.requests / perCall.get('openai')! : 1,
        goal: 'reported (the API process’s CPU per relayed call; baseline: the OpenAI-compatible adapter, same run)',
        pass: true,
        note: `${Math.round(r.rps)} calls/s`,
      });
    } finally {
      await fake.stop();
    }
  }
}
