// AWS Bedrock channels (Titan Text Embeddings and Cohere Embed on Bedrock): every call signed with SigV4 by AWS's own
// package, checked by a fake that recomputes the signature (and that the AWS SDK itself talks to), through the gateway
// with the official openai client as the caller.
import { BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bedrock } from '../../src/channels/providers/bedrock.js';
import { type AwsCredentials, FakeBedrock, titanTokens } from '../helpers/fake-bedrock.js';
import { fakeVector } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

const CREDS: AwsCredentials = { accessKeyId: 'AKIAFAKEBEDROCK00001', secretAccessKey: 'fakeSecret/For+Bedrock/Tests0123456789abc' };
const TEMP: AwsCredentials = {
  accessKeyId: 'ASIAFAKEBEDROCK00002',
  secretAccessKey: 'fakeTemporarySecret/0123456789abcdefghij',
  sessionToken: 'FwoGZXIvYXdzEFakeSessionTokenForBedrockTests0123456789',
};
const keyOf = (c: AwsCredentials) => [c.accessKeyId, c.secretAccessKey, c.sessionToken].filter(Boolean).join('|');
const TITAN = 'amazon.titan-embed-text-v2:0';
const COHERE = 'cohere.embed-english-v3';
/** The SigV4 Authorization header the gateway sends (host, content type, accept, payload hash, date signed). */
const SIGV4 = (c: AwsCredentials, extra = '') =>
  new RegExp(
    `^AWS4-HMAC-SHA256 Credential=${c.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=accept;content-type;host;x-amz-content-sha256;x-amz-date${extra}, Signature=[0-9a-f]{64}$`,
  );
const f32 = (v: number[]) => v.map(Math.fround);
/** The error a call through the gateway ends with (it must not answer). */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (err) {
    return err as InstanceType<typeof OpenAI.APIError>;
  }
  throw new Error('the call answered');
}

let fake: FakeBedrock;

beforeAll(async () => {
  fake = await new FakeBedrock([CREDS, TEMP]).start();
});
afterAll(async () => {
  await fake?.stop();
});
beforeEach(() => {
  fake.calls.length = 0;
  fake.behaviour = { kind: 'ok' };
});

describe('the fake, checked with the AWS SDK (BedrockRuntimeClient + InvokeModelCommand, its default HTTP/2 handler)', () => {
  const sdk = (credentials: AwsCredentials) => new BedrockRuntimeClient({ region: 'us-east-1', endpoint: fake.url, credentials, maxAttempts: 1 });
  const invoke = async (client: BedrockRuntimeClient, modelId: string, body: unknown) => {
    const res = await client.send(new InvokeModelCommand({ modelId, body: JSON.stringify(body), contentType: 'application/json', accept: 'application/json' }));
    return JSON.parse(new TextDecoder().decode(res.body));
  };
  let client: BedrockRuntimeClient;
  beforeAll(() => {
    client = sdk(CREDS);
  });
  afterAll(() => client.destroy());

  it('Titan v2: the SDK’s signed call passes the fake’s signature check and gets the fake’s vector, its dimensions and token count', async () => {
    const out = await invoke(client, TITAN, { inputText: 'sdk titan text', dimensions: 256 });
    expect(out.embedding).toEqual(fakeVector('sdk titan text', 256));
    expect(out.inputTextTokenCount).toBe(titanTokens('sdk titan text'));
    // The model id's ':' is %3A in the path, as the adapter writes it.
    expect(fake.calls[0]).toMatchObject({ httpVersion: '2.0', path: '/model/amazon.titan-embed-text-v2%3A0/invoke', model: TITAN, signed: true });
  });

  it('Cohere: texts and input_type in, Cohere’s embeddings_floats shape out (embeddings_by_type with embedding_types)', async () => {
    const floats = await invoke(client, COHERE, { texts: ['one', 'two'], input_type: 'search_document' });
    expect(floats).toMatchObject({ response_type: 'embeddings_floats', embeddings: [fakeVector('one', 1024), fakeVector('two', 1024)], texts: ['one', 'two'] });
    const byType = await invoke(client, COHERE, { texts: ['one'], input_type: 'search_query', embedding_types: ['float'] });
    expect(byType).toMatchObject({ response_type: 'embeddings_by_type', embeddings: { float: [fakeVector('one', 1024)] } });
  });

  it('temporary credentials (with a session token) sign too', async () => {
    const temp = sdk(TEMP);
    const out = await invoke(temp, TITAN, { inputText: 'temporary' });
    temp.destroy();
    expect(out.embedding).toEqual(fakeVector('temporary', 1024));
    expect(fake.calls[0]!.headers['x-amz-security-token']).toBe(TEMP.sessionToken);
  });

  it('a wrong secret key is refused as AWS does: 403 InvalidSignatureException; an unknown access key: UnrecognizedClientException', async () => {
    const wrong = sdk({ ...CREDS, secretAccessKey: 'not-the-secret-key/0123456789abcdefghijk' });
    const err = await invoke(wrong, TITAN, { inputText: 'x' }).catch(
      (e: unknown) => e as { name: string; message: string; $metadata: { httpStatusCode: number } },
    );
    wrong.destroy();
    expect(err.name).toBe('InvalidSignatureException');
    expect(err.$metadata.httpStatusCode).toBe(403);
    expect(err.message).toMatch(/signature we calculated does not match/);
    const unknown = sdk({ accessKeyId: 'AKIANOTKNOWN00000000', secretAccessKey: CREDS.secretAccessKey });
    const err2 = await invoke(unknown, TITAN, { inputText: 'x' }).catch((e: unknown) => e as { name: string });
    unknown.destroy();
    expect(err2.name).toBe('UnrecognizedClientException');
    expect(fake.calls.map((c) => c.signed)).toEqual([false, false]);
  });

  it('its errors reach the SDK as Bedrock’s typed errors: a throttle, and a body the model refuses', async () => {
    fake.behaviour = {
      kind: 'status',
      status: 429,
      errorType: 'ThrottlingException',
      message: 'Too many requests, please wait before trying again.',
      times: 1,
    };
    const throttled = await invoke(client, TITAN, { inputText: 'x' }).catch((e: unknown) => e as { name: string; message: string });
    expect(throttled.name).toBe('ThrottlingException');
    expect(throttled.message).toBe('Too many requests, please wait before trying again.');
    const invalid = await invoke(client, TITAN, { inputText: 'x', dimensions: 300 }).catch((e: unknown) => e as { name: string; message: string });
    expect(invalid.name).toBe('ValidationException');
    expect(invalid.message).toMatch(/dimensions/);
  });
});

describe('Bedrock channels through the gateway (the openai client as the caller)', () => {
  let t: TestApp;
  let second: FakeBedrock;
  let client: OpenAI;
  let seq = 0;

  beforeAll(async () => {
    second = await new FakeBedrock([CREDS]).start();
    t = await startTestApp();
    await t.root.post('/api/user/', { username: 'bedrock', password: 'bedrock-password', quota: 1_000_000 });
    const session = new HttpClient(t.url);
    await session.login('bedrock', 'bedrock-password');
    const key = (await session.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
    client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await t?.close();
    await second?.stop();
  });
  beforeEach(() => {
    second.calls.length = 0;
    second.behaviour = { kind: 'ok' };
  });

  /** A Bedrock channel serving a model of its own (`model`, mapped to the Bedrock model id), on the fake. */
  async function channel(upstream: string, body: Record<string, unknown> = {}, on = fake): Promise<{ id: number; model: string }> {
    const model = `bedrock-${++seq}`;
    const res = await t.root.post('/api/channel/', {
      type: 'bedrock',
      name: model,
      key: keyOf(CREDS),
      base_url: on.url,
      models: model,
      model_mapping: { [model]: upstream },
      config: { region: 'us-east-1' },
      price: 1000,
      ...body,
    });
    expect(res.status, res.text).toBe(201);
    return { id: res.body.data.id, model };
  }
  const channelRow = (id: number) => t.platform.db('channels').where({ id }).first('status', 'status_reason');

  it('Titan v2: floats and base64 (the client’s default) are the fake’s vectors, usage is its inputTextTokenCount; the call is signed SigV4 for bedrock in the region, to /model/{id}/invoke', async () => {
    const { model } = await channel(TITAN, { config: { region: 'us-east-1', normalize: false } });
    const text = 'titan through the gateway';
    const floats = await client.embeddings.create({ model, input: text, encoding_format: 'float' });
    expect(f32(floats.data[0]!.embedding)).toEqual(f32(fakeVector(text, 1024)));
    expect(floats.usage.prompt_tokens).toBe(titanTokens(text));
    // Another text: the same one would be answered from the gateway's cache.
    const b64 = await client.embeddings.create({ model, input: `${text}, again` });
    expect(f32(b64.data[0]!.embedding)).toEqual(f32(fakeVector(`${text}, again`, 1024)));
    expect(fake.calls).toHaveLength(2);
    for (const call of fake.calls) {
      expect(call.signed).toBe(true);
      expect(call.httpVersion).toBe('1.1');
      expect(call.path).toBe('/model/amazon.titan-embed-text-v2%3A0/invoke');
      expect(call.headers.authorization).toMatch(SIGV4(CREDS));
      expect(call.headers['x-amz-security-token']).toBeUndefined();
      // The model mapping applied (the Bedrock id is in the path only), config.normalize sent.
    }
    expect(fake.calls.map((c) => c.body)).toEqual([
      { inputText: text, normalize: false },
      { inputText: `${text}, again`, normalize: false },
    ]);
  });

  it('dimensions go to Titan v2 as its own dimensions field', async () => {
    const { model } = await channel(TITAN);
    const res = await client.embeddings.create({ model, input: 'shorter titan', dimensions: 256, encoding_format: 'float' });
    expect(f32(res.data[0]!.embedding)).toEqual(f32(fakeVector('shorter titan', 256)));
    expect(fake.calls[0]!.body).toEqual({ inputText: 'shorter titan', dimensions: 256 });
  });

  it('three inputs to Titan (one text a call) are three signed calls, answered in order, usage summed', async () => {
    const { model } = await channel(TITAN);
    const inputs = ['first text', 'the second text', 'third'];
    const res = await client.embeddings.create({ model, input: inputs, encoding_format: 'float' });
    expect(res.data.map((d) => f32(d.embedding))).toEqual(inputs.map((i) => f32(fakeVector(i, 1024))));
    expect(res.usage.prompt_tokens).toBe(inputs.reduce((s, i) => s + titanTokens(i), 0));
    expect(fake.calls).toHaveLength(3);
    expect(fake.calls.every((c) => c.signed && SIGV4(CREDS).test(c.headers.authorization!))).toBe(true);
    expect(fake.calls.map((c) => c.body.inputText).sort()).toEqual([...inputs].sort());
  });

  it('Cohere: texts with input_type search_document by default (or the channel’s input_type and truncate), 96 a call; floats and base64', async () => {
    const plain = await channel(COHERE);
    const inputs = Array.from({ length: 100 }, (_, i) => `cohere text ${i}`);
    const res = await client.embeddings.create({ model: plain.model, input: inputs, encoding_format: 'float' });
    expect(res.data.map((d) => f32(d.embedding))).toEqual(inputs.map((i) => f32(fakeVector(i, 1024))));
    expect(fake.calls.map((c) => (c.body.texts as string[]).length).sort()).toEqual([4, 96]);
    for (const call of fake.calls) {
      expect(call.signed).toBe(true);
      expect(call.path).toBe('/model/cohere.embed-english-v3/invoke');
      expect(Object.keys(call.body).sort()).toEqual(['input_type', 'texts']);
      expect(call.body.input_type).toBe('search_document');
    }
    fake.calls.length = 0;
    const set = await channel(COHERE, { config: { region: 'us-east-1', input_type: 'search_query', truncate: 'END' } });
    const b64 = await client.embeddings.create({ model: set.model, input: ['a query'] });
    expect(f32(b64.data[0]!.embedding)).toEqual(f32(fakeVector('a query', 1024)));
    expect(fake.calls[0]!.body).toEqual({ texts: ['a query'], input_type: 'search_query', truncate: 'END' });
  });

  it('dimensions on a Cohere model: 400 naming dimensions, and nothing is sent', async () => {
    const { model } = await channel(COHERE);
    const err = await failure(client.embeddings.create({ model, input: 'x', dimensions: 256 }));
    expect(err.status).toBe(400);
    expect(err.param).toBe('dimensions');
    expect(fake.calls).toHaveLength(0);
  });

  it('temporary credentials in the key (ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN) sign with x-amz-security-token', async () => {
    const { model } = await channel(COHERE, { key: keyOf(TEMP) });
    const res = await client.embeddings.create({ model, input: 'with a session token', encoding_format: 'float' });
    expect(f32(res.data[0]!.embedding)).toEqual(f32(fakeVector('with a session token', 1024)));
    expect(fake.calls[0]!.headers['x-amz-security-token']).toBe(TEMP.sessionToken);
    expect(fake.calls[0]!.headers.authorization).toMatch(SIGV4(TEMP, ';x-amz-security-token'));
  });

  it('a wrong secret key: the fake refuses the signature (403), the channel is disabled saying why, without the secret', async () => {
    const secret = 'wrongSecretKeyForBedrock/0123456789abcdef';
    const { id, model } = await channel(TITAN, { key: keyOf({ ...CREDS, secretAccessKey: secret }) });
    const err = await failure(client.embeddings.create({ model, input: 'refused' }));
    expect(err.status).toBe(502);
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]!.signed).toBe(false);
    const row = await channelRow(id);
    expect(row.status).toBe(3);
    expect(row.status_reason).toMatch(/^upstream answered 403: The request signature we calculated does not match/);
    expect(row.status_reason).not.toContain(secret);
    expect(row.status_reason).not.toContain(secret.slice(0, 12));
  });

  it('a throttle (429 ThrottlingException, no retry hint): the channel cools down (5 s) and the call fails over; the next call skips it', async () => {
    const first = await channel(TITAN, { priority: 10 });
    const res = await t.root.post('/api/channel/', {
      type: 'bedrock',
      name: `${first.model}-second`,
      key: keyOf(CREDS),
      base_url: second.url,
      models: first.model,
      model_mapping: { [first.model]: TITAN },
      config: { region: 'us-east-1' },
      price: 1000,
      priority: 5,
    });
    expect(res.status, res.text).toBe(201);
    fake.behaviour = { kind: 'status', status: 429, errorType: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' };
    const one = await client.embeddings.create({ model: first.model, input: 'throttled', encoding_format: 'float' });
    expect(f32(one.data[0]!.embedding)).toEqual(f32(fakeVector('throttled', 1024)));
    expect(fake.calls).toHaveLength(1);
    expect(second.calls).toHaveLength(1);
    const ttl = await t.platform.redis.pttl(t.platform.keys.grouped('channel-cooldown', first.id));
    expect(ttl).toBeGreaterThan(3_000);
    expect(ttl).toBeLessThanOrEqual(5_000);
    await client.embeddings.create({ model: first.model, input: 'next call', encoding_format: 'float' });
    expect(fake.calls).toHaveLength(1);
    expect(second.calls).toHaveLength(2);
    expect((await channelRow(first.id)).status).toBe(1);
  });

  it('ModelErrorException (424) and ServiceUnavailableException (503) are the upstream’s failures: the call fails over', async () => {
    for (const [status, errorType] of [
      [424, 'ModelErrorException'],
      [503, 'ServiceUnavailableException'],
    ] as const) {
      const first = await channel(COHERE, { priority: 10 });
      await channel(COHERE, { priority: 5, name: `${first.model}-b`, models: first.model, model_mapping: { [first.model]: COHERE } }, second);
      fake.behaviour = { kind: 'status', status, errorType };
      fake.calls.length = 0;
      second.calls.length = 0;
      const res = await client.embeddings.create({ model: first.model, input: 'fails over', encoding_format: 'float' });
      expect(f32(res.data[0]!.embedding), errorType).toEqual(f32(fakeVector('fails over', 1024)));
      expect([fake.calls.length, second.calls.length], errorType).toEqual([1, 1]);
    }
  });

  it('a ServiceQuotaExceededException (sent as a 400, its type in x-amzn-ErrorType) is a rate limit: the channel cools down and the call fails over', async () => {
    const first = await channel(COHERE, { priority: 10 });
    await channel(COHERE, { priority: 5, name: `${first.model}-b`, models: first.model, model_mapping: { [first.model]: COHERE } }, second);
    fake.behaviour = { kind: 'status', status: 400, errorType: 'ServiceQuotaExceededException', message: 'Your request exceeds the service quota.' };
    fake.calls.length = 0;
    second.calls.length = 0;
    const res = await client.embeddings.create({ model: first.model, input: 'over quota', encoding_format: 'float' });
    expect(f32(res.data[0]!.embedding)).toEqual(f32(fakeVector('over quota', 1024)));
    expect([fake.calls.length, second.calls.length]).toEqual([1, 1]);
    expect(await t.platform.redis.pttl(t.platform.keys.grouped('channel-cooldown', first.id))).toBeGreaterThan(0);
    fake.behaviour = { kind: 'ok' };
  });

  it('a ValidationException is the request’s fault: 400 with Bedrock’s message', async () => {
    const { model } = await channel(TITAN);
    fake.behaviour = { kind: 'status', status: 400, errorType: 'ValidationException', message: 'Input is too long for requested model.' };
    const err = await failure(client.embeddings.create({ model, input: 'too long' }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/Input is too long for requested model\./);
  });

  it('a key not of the form ACCESS_KEY_ID|SECRET_ACCESS_KEY is refused when the channel is saved (400 naming key, without the key), made or changed', async () => {
    const bad = 'AKIAONLYTHEKEYID0000secretwithoutabar';
    const made = await t.root.post('/api/channel/', {
      type: 'bedrock',
      name: 'bad-key',
      key: bad,
      base_url: fake.url,
      models: 'bad-key-model',
      config: { region: 'us-east-1' },
    });
    expect(made.status).toBe(400);
    expect(made.body.message).toMatch(/^key: for AWS Bedrock, the key must be ACCESS_KEY_ID\|SECRET_ACCESS_KEY/);
    expect(made.body.message).not.toContain('AKIAONLY');
    const { id } = await channel(TITAN);
    const changed = await t.root.put('/api/channel/', { id, key: bad });
    expect(changed.status).toBe(400);
    expect(changed.body.message).not.toContain('AKIAONLY');
    expect(fake.calls).toHaveLength(0);
  });

  it('an upstream model that is neither Titan nor Cohere: the call fails saying so, nothing is sent', async () => {
    const { model } = await channel('meta.llama3-8b-instruct-v1:0');
    const err = await failure(client.embeddings.create({ model, input: 'x' }));
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/not a Bedrock embedding model/);
    expect(fake.calls).toHaveLength(0);
  });

  it('config is checked when saved: region is required and must be a region; only Bedrock’s settings', async () => {
    for (const config of [{}, { region: 'US East' }, { region: 'us-east-1', input_type: 'query' }, { region: 'us-east-1', path: '/x' }]) {
      const res = await t.root.post('/api/channel/', { type: 'bedrock', name: 'bad', key: keyOf(CREDS), base_url: fake.url, models: 'bad-bedrock', config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
    // No default base URL: a Bedrock channel names its regional endpoint.
    const noBase = await t.root.post('/api/channel/', {
      type: 'bedrock',
      name: 'bad',
      key: keyOf(CREDS),
      models: 'bad-bedrock',
      config: { region: 'us-east-1' },
    });
    expect(noBase.status).toBe(400);
    expect(noBase.body.message).toMatch(/base_url/);
  });
});

describe('the adapter’s reading of Bedrock’s error types (x-amzn-ErrorType)', () => {
  const h = (type: string) => new Headers({ 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` });
  it('a quota exceeded (a 400 from Bedrock) is a rate limit; credential errors are refusals; 424 is the upstream’s failure', () => {
    const status = bedrock.status as (status: number, body: unknown, headers?: Headers) => number;
    expect(status(400, {}, h('ServiceQuotaExceededException'))).toBe(429);
    expect(status(400, {}, h('ExpiredTokenException'))).toBe(403);
    expect(status(400, {}, h('ValidationException'))).toBe(400);
    expect(status(424, {})).toBe(502);
    expect(status(400, {})).toBe(400);
  });
  it('reads {message} (and {Message}), nothing else', () => {
    expect(bedrock.errorMessage({ message: 'm' })).toBe('m');
    expect(bedrock.errorMessage({ Message: 'M' })).toBe('M');
    expect(bedrock.errorMessage({ error: { message: 'x' } })).toBeUndefined();
  });
});
