// What the relay takes from an upstream, and what it refuses: odd answers never become vectors, a bill, or a leak.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/embeddings/relay.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { FakeOpenAI, type UpstreamCall } from '../helpers/fake-openai.js';

let t: TestApp;
let up: FakeOpenAI;
let key: string;
const CHANNEL_KEY = 'sk-relay-answers-channel-key-0123456789';

const b64 = (v: number[]) => Buffer.from(Float32Array.from(v).buffer).toString('base64');
const answer = (data: unknown[]) => JSON.stringify({ object: 'list', data, model: 'm', usage: { prompt_tokens: 3, total_tokens: 3 } });
const v1 = (body: Record<string, unknown>) => t.anon.post('/v1/embeddings', { model: 'answers-model', ...body }, { authorization: `Bearer ${key}` });
const quota = async () => (await t.platform.db('users').where({ username: 'answers' }).first('quota')).quota as number;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  t = await startTestApp({ env: { JOB_BACKOFF_MS: '50' } });
  const ch = await t.root.post('/api/channel/', { type: 'openai', name: 'answers', key: CHANNEL_KEY, base_url: up.url, models: 'answers-model', price: 1000 });
  expect(ch.status, ch.text).toBe(201);
  await t.root.post('/api/user/', { username: 'answers', password: 'answers-password', quota: 1_000_000 });
  const session = new HttpClient(t.url);
  await session.login('answers', 'answers-password');
  key = (await session.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
});
afterAll(async () => {
  await t?.close();
  await up?.stop();
});
beforeEach(() => {
  up.calls.length = 0;
  up.behaviour = { kind: 'ok', reportUsage: true };
  up.encodings = 'openai';
});

describe('answers the relay refuses (502, nothing charged, nothing cached)', () => {
  const cases: [string, (call: UpstreamCall) => string][] = [
    [
      'an index that is not a whole number',
      () =>
        answer([
          { object: 'embedding', index: 0.5, embedding: b64([1, 2]) },
          { object: 'embedding', index: 1, embedding: b64([3, 4]) },
        ]),
    ],
    ['base64 cut short (not a multiple of 4 characters)', () => answer([{ object: 'embedding', index: 0, embedding: b64([0.1, 0.2, 0.3]).slice(0, -1) }])],
    ...(['-', ' '] as const).map((odd): [string, (call: UpstreamCall) => string] => [
      `base64 of the right length holding ${JSON.stringify(odd)}, outside its alphabet`,
      () => {
        const good = b64([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
        return answer([{ object: 'embedding', index: 0, embedding: `${good.slice(0, 4)}${odd}${good.slice(5)}` }]);
      },
    ]),
    ['text that is not base64', () => answer([{ object: 'embedding', index: 0, embedding: '<html>Service Unavailable</html>' }])],
  ];
  for (const [what, body] of cases) {
    it(what, async () => {
      up.behaviour = { kind: 'raw', status: 200, body };
      const before = await quota();
      const res = await v1({ input: ['first input', 'second input'].slice(0, what.includes('base64') ? 1 : 2) });
      expect(res.status, res.text).toBe(502);
      expect(res.body.error.code).toBe('upstream_error');
      expect(await quota()).toBe(before);
      expect(await t.platform.db('embedding_cache').where({ model: 'answers-model' })).toEqual([]);
    });
  }

  it('vectors of another length than the `dimensions` asked for: the channel is not asked again in later rounds', async () => {
    up.behaviour = { kind: 'raw', status: 200, body: () => answer([{ object: 'embedding', index: 0, embedding: b64([0.1, 0.2, 0.3, 0.4]) }]) };
    const res = await v1({ input: 'dims ignored', dimensions: 2 });
    expect(res.status, res.text).toBe(502);
    expect(res.body.error.message).toMatch(/4 dimensions, not the 2 asked for/);
    expect(up.calls).toHaveLength(1); // not three rounds of paid upstream calls for the same answer
  });

  it('an answer past its size bound is cut off: 502, and the process goes on', async () => {
    const huge = Buffer.alloc(2 ** 20 + 2 ** 18 + 1024, 'a');
    up.behaviour = { kind: 'raw', status: 200, body: () => huge };
    const res = await v1({ input: 'one input' });
    expect(res.status, res.text).toBe(502);
    up.behaviour = { kind: 'ok', reportUsage: true };
    expect((await v1({ input: 'after the big one' })).status).toBe(200);
  });
});

describe('answers the relay takes', () => {
  it("an upstream that refuses base64 with a 422 in its own shape (not OpenAI's) is asked for floats", async () => {
    const refusal = JSON.stringify({ detail: [{ loc: ['body', 'encoding_format'], msg: "Input should be 'float'", type: 'literal_error' }] });
    up.behaviour = {
      kind: 'raw',
      status: (call) => (call.body.encoding_format === 'base64' ? 422 : 200),
      body: (call) => (call.body.encoding_format === 'base64' ? refusal : answer([{ object: 'embedding', index: 0, embedding: [0.6, 0.8] }])),
    };
    const res = await v1({ input: 'float only, pydantic style', encoding_format: 'float' });
    expect(res.status, res.text).toBe(200);
    expect(res.text).toContain('"embedding":[0.6,0.8]');
    expect(up.calls.map((c) => c.body.encoding_format)).toEqual(['base64', 'float']);
  });

  it('a lone surrogate is sent, counted and cached as U+FFFD: the same text as the one written with U+FFFD', async () => {
    const a = await v1({ input: 'a\uD800b' });
    expect(a.status, a.text).toBe(200);
    expect(up.calls[0]!.body.input).toEqual(['a\uFFFDb']);
    const b = await v1({ input: 'a\uFFFDb' });
    expect(b.body.data[0].embedding).toEqual(a.body.data[0].embedding);
    expect(up.calls).toHaveLength(1);
  });
});

describe('what the caller is told', () => {
  it("an upstream's error message never carries the channel's key, whatever its shape", async () => {
    up.behaviour = { kind: 'status', status: 400, message: `Incorrect API key provided: ${CHANNEL_KEY} is not valid here`, times: 1 };
    const res = await v1({ input: 'leak please' });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(CHANNEL_KEY.slice(6));
    expect(res.text).toContain('sk-rel…'); // shaped like a key: cut to a hint
    // A key of another shape (no sk- prefix) is cut out too.
    const other = 'plainUpstreamSecretWithoutPrefix0123456789';
    const ch = await t.root.post('/api/channel/', { type: 'openai', name: 'plain', key: other, base_url: up.url, models: 'plain-model', price: 1000 });
    expect(ch.status, ch.text).toBe(201);
    up.behaviour = { kind: 'status', status: 400, message: `bad key ${other} for this model`, times: 1 };
    const plain = await t.anon.post('/v1/embeddings', { model: 'plain-model', input: 'leak please' }, { authorization: `Bearer ${key}` });
    expect(plain.status).toBe(400);
    expect(plain.text).not.toContain(other);
    expect(plain.text).toContain('bad key *** for this model');
  });

  it('Retry-After is held to at most a day, whatever the channel says', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '1e306' }))).toBe(86_400_000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '1500' }))).toBe(1500);
  });
});
