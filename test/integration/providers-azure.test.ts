// Azure OpenAI channels (type "azure", one-api 3): the fake Azure resource checked with openai's AzureOpenAI client, then
// the gateway's calls to it with the official openai client as the caller — the classic deployments path with its
// api-version and the v1 path, the api-key header, model → deployment mapping, dimensions, floats and base64, a refused
// key disabling the channel, and a 429's retry-after-ms cooling the channel down while another answers.
import OpenAI, { AzureOpenAI } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AZURE_DEFAULT_API_VERSION } from '../../src/channels/providers/azure.js';
import { FakeAzure } from '../helpers/fake-azure.js';
import { fakeVector } from '../helpers/fake-openai.js';
import { asFloat32 as f32, type Gateway, startGateway } from '../helpers/provider-gateway.js';

let g: Gateway;
let az: FakeAzure;
let other: FakeAzure;
let client: OpenAI;
let seq = 0;

beforeAll(async () => {
  az = await new FakeAzure().start();
  other = await new FakeAzure('azure-other-key-0123456789abcdef').start();
  g = await startGateway('azure');
  client = g.client();
});
afterAll(async () => {
  await g?.t.close();
  await az?.stop();
  await other?.stop();
});
beforeEach(() => {
  az.behaviour = { kind: 'ok' };
  other.behaviour = { kind: 'ok' };
});

/** An Azure channel on `up` serving a model of its own (returned), mapped to my-embedding-deployment, with these fields. */
async function azureChannel(up: FakeAzure, body: Record<string, unknown> = {}): Promise<{ id: number; model: string }> {
  const model = (body.models as string | undefined) ?? `azure-model-${++seq}`;
  const id = await g.channel('azure', model, { key: up.key, base_url: up.url, model_mapping: { [model]: 'my-embedding-deployment' }, ...body, models: model });
  return { id, model };
}
const callsSince = (up: FakeAzure, n: number) => up.calls.slice(n);

describe('the fake Azure resource, checked with openai’s AzureOpenAI client', () => {
  it('answers the client’s classic deployments call (api-key header, api-version query) with the vectors it makes, as base64 and as floats', async () => {
    const azure = new AzureOpenAI({
      endpoint: az.url,
      apiKey: az.key,
      apiVersion: AZURE_DEFAULT_API_VERSION,
      deployment: 'my-embedding-deployment',
      maxRetries: 0,
    });
    const before = az.calls.length;
    const b64 = await azure.embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta gamma'] });
    expect(b64.data.map((d) => d.embedding)).toEqual([f32(fakeVector('alpha')), f32(fakeVector('beta gamma'))]);
    const floats = await azure.embeddings.create({ model: 'text-embedding-3-small', input: 'delta', encoding_format: 'float', dimensions: 6 });
    expect(floats.data[0]!.embedding).toEqual(fakeVector('delta', 6));
    const [c1, c2] = callsSince(az, before);
    expect(c1!.url).toBe(`/openai/deployments/my-embedding-deployment/embeddings?api-version=${AZURE_DEFAULT_API_VERSION}`);
    expect(c1!.headers['api-key']).toBe(az.key);
    expect(c1!.body.encoding_format).toBe('base64');
    expect(c2!.body.dimensions).toBe(6);
  });

  it('answers the v1 path (OpenAI’s client on {endpoint}/openai/v1, the deployment as model), and refuses a wrong key with Azure’s 401', async () => {
    const v1 = new OpenAI({ baseURL: `${az.url}/openai/v1`, apiKey: az.key, maxRetries: 0 });
    const res = await v1.embeddings.create({ model: 'my-embedding-deployment', input: ['v1 text'] });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('v1 text')));
    const wrong = new AzureOpenAI({ endpoint: az.url, apiKey: 'not-the-key', apiVersion: AZURE_DEFAULT_API_VERSION, maxRetries: 0 });
    const err = await wrong.embeddings.create({ model: 'my-embedding-deployment', input: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as Error).message).toMatch(/Access denied due to invalid subscription key/);
  });
});

describe('Azure channels through the gateway (the openai client as the caller)', () => {
  it('needs a base_url (the resource endpoint) and checks api_version: a date, a -preview date or "v1"', async () => {
    const noBase = await g.t.root.post('/api/channel/', { type: 'azure', name: 'no-base', key: 'k-0123456789', models: 'nb' });
    expect(noBase.status).toBe(400);
    expect(noBase.body.message).toMatch(/base_url/);
    for (const api_version of ['2024-10-21x', '24-10-21', '2024-13-01', 'v2', 'latest', 7]) {
      const bad = await g.t.root.post('/api/channel/', {
        type: 3,
        name: 'bad-version',
        key: 'k-0123456789',
        base_url: az.url,
        models: 'bv',
        config: { api_version },
      });
      expect(bad.status, String(api_version)).toBe(400);
      expect(bad.body.message, String(api_version)).toMatch(/^config\.api_version/);
    }
    const unknown = await g.t.root.post('/api/channel/', {
      type: 'azure',
      name: 'unknown',
      key: 'k-0123456789',
      base_url: az.url,
      models: 'us',
      config: { region: 'x' },
    });
    expect(unknown.status).toBe(400);
    for (const api_version of ['2024-10-21', '2025-04-01-preview', 'v1']) {
      const good = await g.t.root.post('/api/channel/', {
        type: 3,
        name: 'good-version',
        key: 'k-0123456789',
        base_url: az.url,
        models: `gv-${api_version}`,
        config: { api_version },
      });
      expect(good.status, good.text).toBe(201);
      expect(good.body.data.type).toBe('azure');
    }
  });

  it('calls {endpoint}/openai/deployments/{mapped deployment}/embeddings?api-version=<default> with the api-key header; floats and base64 reach the caller', async () => {
    const { model } = await azureChannel(az);
    const before = az.calls.length;
    const b64 = await client.embeddings.create({ model, input: ['one', 'two three'] });
    expect(b64.data.map((d) => d.embedding)).toEqual([f32(fakeVector('one')), f32(fakeVector('two three'))]);
    const floats = await client.embeddings.create({ model, input: 'four', encoding_format: 'float' });
    // Floats as the gateway prints them: the shortest text of each float32.
    expect(floats.data[0]!.embedding.map(Math.fround)).toEqual(f32(fakeVector('four')));
    const raw = await g.t.anon.post('/v1/embeddings', { model, input: 'five', encoding_format: 'base64' }, { authorization: `Bearer ${g.key}` });
    expect(raw.body.data[0].embedding).toBe(Buffer.from(Float32Array.from(fakeVector('five')).buffer).toString('base64'));
    const calls = callsSince(az, before);
    expect(calls).toHaveLength(3);
    for (const c of calls) {
      expect(c.url).toBe(`/openai/deployments/my-embedding-deployment/embeddings?api-version=${AZURE_DEFAULT_API_VERSION}`);
      expect(c.headers['api-key']).toBe(az.key);
      expect(c.headers.authorization).toBeUndefined();
      // The classic body: no model (the deployment is in the path); base64 asked of Azure whatever the caller wants.
      expect(Object.keys(c.body).sort()).toEqual(['encoding_format', 'input']);
      expect(c.body.encoding_format).toBe('base64');
    }
    expect(calls[0]!.body.input).toEqual(['one', 'two three']);
    expect(b64.usage.prompt_tokens).toBe(14);
  });

  it('sends dimensions in the body, and the channel’s api_version; a model without a mapping is its own deployment name', async () => {
    const { model } = await azureChannel(az, { models: 'text-embedding-3-small', model_mapping: {}, config: { api_version: '2025-04-01-preview' } });
    const before = az.calls.length;
    const res = await client.embeddings.create({ model, input: 'shorter', dimensions: 3 });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('shorter', 3)));
    const [c] = callsSince(az, before);
    expect(c!.url).toBe('/openai/deployments/text-embedding-3-small/embeddings?api-version=2025-04-01-preview');
    expect(c!.body.dimensions).toBe(3);
  });

  it('with api_version "v1" calls {endpoint}/openai/v1/embeddings with the deployment as model and no api-version (an endpoint given with /openai works too)', async () => {
    const { model } = await azureChannel(az, { base_url: `${az.url}/openai`, config: { api_version: 'v1' } });
    const before = az.calls.length;
    const res = await client.embeddings.create({ model, input: ['via v1'], dimensions: 5 });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('via v1', 5)));
    const [c] = callsSince(az, before);
    expect(c!.url).toBe('/openai/v1/embeddings');
    expect(c!.headers['api-key']).toBe(az.key);
    expect(c!.body).toEqual({ model: 'my-embedding-deployment', input: ['via v1'], encoding_format: 'base64', dimensions: 5 });
  });

  it('sends token-id inputs to Azure as they are (as LangChain sends them)', async () => {
    const { model } = await azureChannel(az);
    const before = az.calls.length;
    const res = await g.t.anon.post(
      '/v1/embeddings',
      { model, input: [[9906, 1917], [15339]], encoding_format: 'float' },
      { authorization: `Bearer ${g.key}` },
    );
    expect(res.status, res.text).toBe(200);
    const [c] = callsSince(az, before);
    expect(c!.body.input).toEqual([[9906, 1917], [15339]]);
    expect(res.body.data.map((d: { embedding: number[] }) => f32(d.embedding))).toEqual([f32(fakeVector('9906 1917')), f32(fakeVector('15339'))]);
  });

  it('a deployment the resource does not have (404) is the channel’s fault: the next channel answers', async () => {
    const { model } = await azureChannel(az, { model_mapping: {}, priority: 10 });
    await azureChannel(other, { models: model, priority: 5 });
    const before = [az.calls.length, other.calls.length];
    const res = await client.embeddings.create({ model, input: 'no such deployment' });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('no such deployment')));
    expect([az.calls.length - before[0]!, other.calls.length - before[1]!]).toEqual([1, 1]);
  });

  it('a refused key (401) disables the channel with Azure’s reason (no key in it), and the next channel answers', async () => {
    const wrongKey = 'azure-revoked-key-fedcba9876543210';
    const { id, model } = await azureChannel(az, { key: wrongKey, priority: 10 });
    await azureChannel(other, { models: model, priority: 5 });
    const res = await client.embeddings.create({ model, input: 'auth failover' });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('auth failover')));
    const seen = await g.seen(id);
    expect(seen.status).toBe(3);
    expect(seen.status_reason).toMatch(/^upstream answered 401: Access denied due to invalid subscription key/);
    expect(seen.status_reason).not.toContain(wrongKey);
    const before = az.calls.length;
    await client.embeddings.create({ model, input: 'again' });
    expect(az.calls.length).toBe(before);
  });

  it('a 429 with retry-after-ms cools the channel down for that long; the call fails over, and the next call skips it', async () => {
    const { id, model } = await azureChannel(az, { priority: 10 });
    await azureChannel(other, { models: model, priority: 5 });
    az.behaviour = {
      kind: 'status',
      status: 429,
      message:
        'Requests to the Embeddings_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit. Please retry after 42 seconds.',
      headers: { 'retry-after': '42', 'retry-after-ms': '42000' },
    };
    const before = [az.calls.length, other.calls.length];
    const res = await client.embeddings.create({ model, input: 'throttled' });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('throttled')));
    expect([az.calls.length - before[0]!, other.calls.length - before[1]!]).toEqual([1, 1]);
    const ttl = await g.t.platform.redis.pttl(g.t.platform.keys.grouped('channel-cooldown', id));
    expect(ttl).toBeGreaterThan(40_000);
    expect(ttl).toBeLessThanOrEqual(42_000);
    az.behaviour = { kind: 'ok' };
    await client.embeddings.create({ model, input: 'skips the cooled one' });
    expect([az.calls.length - before[0]!, other.calls.length - before[1]!]).toEqual([1, 2]);
    expect((await g.seen(id)).status).toBe(1);
  });
});
