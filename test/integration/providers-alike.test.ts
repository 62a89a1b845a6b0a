// The README's providers table: "failover, cool-downs, quota and batches work the same for each" channel type.
// Failover and cool-downs are proven in each provider's own file (providers-*.test.ts); here every registered type, on
// its fake, is charged a call's tokens at its channel's price, and runs the lines of a Batch API batch, as OpenAI does.
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDERS } from '../../src/channels/providers/registry.js';
import { FakeAzure } from '../helpers/fake-azure.js';
import { type AwsCredentials, FakeBedrock } from '../helpers/fake-bedrock.js';
import { FakeCohere } from '../helpers/fake-cohere.js';
import { FakeGemini } from '../helpers/fake-gemini.js';
import { FakeOllama } from '../helpers/fake-ollama.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { FakeTei } from '../helpers/fake-tei.js';
import { FakeVoyage } from '../helpers/fake-voyage.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { until } from '../helpers/until.js';

/** A provider's fake, and the channel fields that aim a channel at it. */
interface Upstream {
  calls: unknown[];
  channel: Record<string, unknown>;
  stop(): Promise<void>;
}

const CREDS: AwsCredentials = { accessKeyId: 'AKIAFAKEALIKE0000001', secretAccessKey: 'fakeSecret/For+Alike/Tests0123456789abcd' };

/** One per registered type: a new provider without a line here fails the test below. */
const UPSTREAMS: Record<string, () => Promise<Upstream>> = {
  async openai() {
    const f = await new FakeOpenAI().start();
    return { calls: f.calls, stop: () => f.stop(), channel: { key: 'sk-alike-openai', base_url: `${f.url}/v1`, upstream: 'text-embedding-3-small' } };
  },
  async azure() {
    const f = await new FakeAzure().start();
    return { calls: f.calls, stop: () => f.stop(), channel: { key: f.key, base_url: f.url, upstream: 'my-embedding-deployment' } };
  },
  async gemini() {
    const f = await new FakeGemini().start();
    return { calls: f.calls, stop: () => f.stop(), channel: { key: f.key, base_url: f.url, upstream: 'gemini-embedding-001' } };
  },
  async cohere() {
    const f = await new FakeCohere().start();
    f.key = 'co-alike-key-0123456789';
    return { calls: f.calls, stop: () => f.stop(), channel: { key: f.key, base_url: f.url, upstream: 'embed-english-v3.0' } };
  },
  async voyage() {
    const f = await new FakeVoyage().start();
    f.key = 'pa-alike-key-0123456789';
    return { calls: f.calls, stop: () => f.stop(), channel: { key: f.key, base_url: f.url, upstream: 'voyage-3.5' } };
  },
  async bedrock() {
    const f = await new FakeBedrock([CREDS]).start();
    const key = `${CREDS.accessKeyId}|${CREDS.secretAccessKey}`;
    return {
      calls: f.calls,
      stop: () => f.stop(),
      channel: { key, base_url: f.url, upstream: 'amazon.titan-embed-text-v2:0', config: { region: 'us-east-1' } },
    };
  },
  async ollama() {
    const f = await new FakeOllama().start();
    return { calls: f.calls, stop: () => f.stop(), channel: { key: 'none', base_url: f.url, upstream: 'nomic-embed-text' } };
  },
  async tei() {
    const f = await new FakeTei().start();
    return { calls: f.calls, stop: () => f.stop(), channel: { key: 'none', base_url: f.url, upstream: 'bge-small-en-v1.5' } };
  },
};

let t: TestApp;
let user: HttpClient;
let client: OpenAI;
const upstreams = new Map<string, Upstream>();

beforeAll(async () => {
  t = await startTestApp({ env: { BATCH_CHUNK_LINES: '2' } });
  for (const [type, start] of Object.entries(UPSTREAMS)) upstreams.set(type, await start());
  await t.root.post('/api/user/', { username: 'alike', password: 'alike-password', quota: 1_000_000 });
  user = new HttpClient(t.url);
  await user.login('alike', 'alike-password');
  const key = (await user.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key as string;
  client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await Promise.all([...upstreams.values()].map((u) => u.stop()));
});

const quotaLeft = async () => (await user.get('/api/user/self')).body.data.quota as number;
const jsonl = (lines: unknown[]) => `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;

describe('every channel type', () => {
  it('has a fake here', () => {
    expect(Object.keys(UPSTREAMS).sort()).toEqual(PROVIDERS.map((p) => p.type).sort());
  });

  for (const { type } of PROVIDERS) {
    it(`${type}: a call costs its tokens at the channel's price, and a batch's lines run on the channel, charged the same way`, async () => {
      const up = upstreams.get(type);
      expect(up, `a fake for ${type}`).toBeDefined();
      const { upstream, ...fields } = up!.channel;
      const model = `alike-${type}`;
      // 2000 per 1K tokens: a charge is twice the tokens.
      const made = await t.root.post('/api/channel/', { type, name: model, models: model, model_mapping: { [model]: upstream }, price: 2000, ...fields });
      expect(made.status, made.text).toBe(201);

      const before = await quotaLeft();
      const direct = await client.embeddings.create({ model, input: [`${type} direct one`, `${type} direct two`], encoding_format: 'float' });
      expect(direct.data).toHaveLength(2);
      expect(direct.usage.prompt_tokens).toBeGreaterThan(0);
      expect(await quotaLeft()).toBe(before - 2 * direct.usage.prompt_tokens);

      const calls = up!.calls.length;
      const inputs = [`${type} batch line one`, `${type} batch line two`, `${type} batch line three`];
      const file = await client.files.create({
        file: await toFile(
          Buffer.from(jsonl(inputs.map((input, i) => ({ custom_id: `l${i}`, method: 'POST', url: '/v1/embeddings', body: { model, input } })))),
          'in.jsonl',
        ),
        purpose: 'batch',
      });
      const afterDirect = await quotaLeft();
      const { id } = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
      const done = await until(
        `the ${type} batch to end`,
        () => client.batches.retrieve(id),
        (b) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status),
        60_000,
      );
      expect(done.status).toBe('completed');
      expect(done.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
      expect(up!.calls.length, 'the lines went to the provider').toBeGreaterThan(calls);
      const out = (await (await client.files.content(done.output_file_id!)).text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const tokens = out.reduce((n, o) => n + o.response.body.usage.prompt_tokens, 0);
      expect(tokens).toBeGreaterThan(0);
      expect(await quotaLeft()).toBe(afterDirect - 2 * tokens);
      // Each line's answer is what /v1/embeddings answers for its input (now from the cache the batch filled).
      for (const o of out) {
        const again = await client.embeddings.create({ model, input: inputs[Number(o.custom_id.slice(1))]!, encoding_format: 'float' });
        expect(o.response.body.data[0].embedding).toEqual(again.data[0]!.embedding);
      }
    }, 90_000);
  }
});
