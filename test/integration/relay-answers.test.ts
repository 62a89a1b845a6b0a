// What the relay takes from an upstream, and what it refuses: odd answers never become vectors, a bill, or a leak.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/embeddings/relay.js';
import { ChannelDirectory } from '../../src/channels/directory.js';
import { count } from '../../src/embeddings/tokenizer.js';
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

/** Channels serving `model` on these upstreams, each at its priority (a key of its own, price 1000). */
async function prioritized(app: TestApp, model: string, ups: [FakeOpenAI, number][]): Promise<void> {
  for (const [upstream, priority] of ups) {
    const ch = await app.root.post('/api/channel/', {
      type: 'openai',
      name: `${model}-${priority}`,
      key: `sk-${model}-${priority}-0123456789`,
      base_url: upstream.url,
      models: model,
      price: 1000,
      priority,
    });
    expect(ch.status, ch.text).toBe(201);
  }
}

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
    [
      'embeddings of different lengths in one answer (no dimensions asked for)',
      () =>
        answer([
          { object: 'embedding', index: 0, embedding: b64([0.1, 0.2, 0.3]) },
          { object: 'embedding', index: 1, embedding: b64([0.1, 0.2]) },
        ]),
    ],
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

  it('vectors of different lengths in one answer: 502 after one round (the channel would only answer it again)', async () => {
    up.behaviour = {
      kind: 'raw',
      status: 200,
      body: () =>
        answer([
          { object: 'embedding', index: 0, embedding: b64([0.1, 0.2, 0.3]) },
          { object: 'embedding', index: 1, embedding: b64([0.1, 0.2]) },
        ]),
    };
    const res = await v1({ input: ['one length', 'another length'] });
    expect(res.status, res.text).toBe(502);
    expect(up.calls).toHaveLength(1);
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

  it("an upstream's count above ours, within what another tokenizer could count, is what the call is charged", async () => {
    up.behaviour = {
      kind: 'raw',
      status: 200,
      body: () => answer([{ object: 'embedding', index: 0, embedding: b64([0.3, 0.4]) }]).replace('"prompt_tokens":3', '"prompt_tokens":40'),
    };
    const before = await quota();
    const res = await v1({ input: 'two words' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.usage.prompt_tokens).toBe(40);
    expect(before - (await quota())).toBe(40); // price 1000: a quota per token
  });

  const withUsage = (tokens: string) => () =>
    `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"${b64([0.1, 0.2])}"}],"usage":{"prompt_tokens":${tokens}}}`;
  for (const tokens of ['1e400', '1.5', '-3', '"12"', 'null']) {
    it(`usage.prompt_tokens of ${tokens} is not a number of tokens: the call is answered and charged our own count`, async () => {
      up.behaviour = { kind: 'raw', status: 200, body: withUsage(tokens) };
      const input = `count me ${tokens}`;
      const before = await quota();
      const res = await v1({ input });
      expect(res.status, res.text).toBe(200);
      expect(res.body.usage.prompt_tokens).toBe(count(input));
      expect(before - (await quota())).toBe(count(input)); // price 1000: a quota per token
    });
  }

  it('usage.prompt_tokens past anything the input could be (9e15) is held to 4 × our count + 16 per input + 64: answered, and charged that', async () => {
    up.behaviour = { kind: 'raw', status: 200, body: withUsage('9000000000000000') };
    const input = 'drain my balance';
    const bound = 4 * count(input) + 16 + 64;
    const before = await quota();
    const res = await v1({ input });
    expect(res.status, res.text).toBe(200);
    expect(res.body.usage.prompt_tokens).toBe(bound);
    expect(before - (await quota())).toBe(bound);
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
    up.behaviour = {
      kind: 'status',
      status: 400,
      message: `Incorrect API key provided: ${CHANNEL_KEY} is not valid here, nor sk-another-key-0123456789`,
      times: 1,
    };
    const res = await v1({ input: 'leak please' });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(CHANNEL_KEY.slice(6));
    expect(res.text).toContain('Incorrect API key provided: *** is not valid');
    expect(res.text).toContain('nor sk-ano…'); // another key's shape: cut to a hint
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

  it("a channel's key is cut out of an upstream's message even where the message is cut short in its middle, or quotes most of it", async () => {
    const secret = 'Zq7WvLmN3pXrTs9YbK2dHfGjC4';
    const ch = await t.root.post('/api/channel/', { type: 'openai', name: 'cut', key: secret, base_url: up.url, models: 'cut-model', price: 1000 });
    expect(ch.status, ch.text).toBe(201);
    const call = () => t.anon.post('/v1/embeddings', { model: 'cut-model', input: 'leak at the cut' }, { authorization: `Bearer ${key}` });
    for (const message of [`${'x'.repeat(480)} ${secret} end`, `the key ${secret.slice(0, -1)} is not valid`, `the key ${secret.slice(3)} is not valid`]) {
      up.behaviour = { kind: 'status', status: 400, message, times: 1 };
      const res = await call();
      expect(res.status, res.text).toBe(400);
      for (let i = 0; i + 8 <= secret.length; i++) expect(res.text).not.toContain(secret.slice(i, i + 8));
    }
    const rows = await t.platform.db('logs').where({ model_name: 'cut-model' }).select('content');
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) for (let i = 0; i + 8 <= secret.length; i++) expect(r.content).not.toContain(secret.slice(i, i + 8));
  });

  it("a channel's key is cut out of an upstream's message when echoed reversed, base64 or base64url (each alignment), percent-encoded, as hex, upper-cased or spaced", async () => {
    const secret = 'sk-Hq4VtR8wLm2NxB7cYp5KdJ3sFg6ZaE9u';
    const ch = await t.root.post('/api/channel/', { type: 'openai', name: 'echo', key: secret, base_url: up.url, models: 'echo-model', price: 1000 });
    expect(ch.status, ch.text).toBe(201);
    const bytes = (s: string) => [...Buffer.from(s)];
    const forms: Record<string, (k: string) => string> = {
      reversed: (k) => [...k].reverse().join(''),
      'base64, aligned': (k) => Buffer.from(k).toString('base64'),
      'base64 after 1 byte': (k) => Buffer.from(`=${k}`).toString('base64'),
      'base64url after 2 bytes': (k) => Buffer.from(`k=${k}`).toString('base64url'),
      'base64 inside a longer text': (k) => Buffer.from(`{"authorization":"Bearer ${k}"}`).toString('base64'),
      'percent-encoded, every byte': (k) =>
        bytes(k)
          .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
          .join(''),
      hex: (k) => Buffer.from(k).toString('hex'),
      'upper-cased': (k) => k.toUpperCase(),
      'spaced out': (k) => [...k].join(' '),
      'dotted, with a zero-width space': (k) => [...k].join('.\u200b'),
      'spaced and reversed': (k) => [...k].reverse().join(' '),
    };
    /** What a reader could make of a text: as it is, reversed, without separators, percent- and base64-decoded at each offset. */
    const readings = (text: string): string[] => {
      const bare = text.replace(/[^A-Za-z0-9-]/g, '');
      const out = [text, [...text].reverse().join(''), bare, [...bare].reverse().join('')];
      out.push(text.replace(/%([0-9a-f]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))));
      for (const hex of text.match(/[0-9a-f]{16,}/gi) ?? []) for (const o of [0, 1]) out.push(Buffer.from(hex.slice(o), 'hex').toString('latin1'));
      for (const token of text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? [])
        for (let o = 0; o < 4; o++) out.push(Buffer.from(token.slice(o).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1'));
      return out;
    };
    const leaked = (text: string) => {
      const found: string[] = [];
      for (const r of readings(text))
        for (let i = 0; i + 8 <= secret.length; i++) {
          const w = secret.slice(i, i + 8);
          if (r.includes(w) || r.includes(w.toUpperCase())) found.push(w);
        }
      return found;
    };
    for (const [name, form] of Object.entries(forms)) {
      up.behaviour = {
        kind: 'raw',
        status: 400,
        body: (call) =>
          JSON.stringify({ error: { message: `Incorrect API key provided: ${form(call.authorization!.slice('Bearer '.length))}. See your account.` } }),
      };
      // The fake does echo the key in this form (the test's reader finds it there).
      expect(leaked(form(secret)), name).not.toEqual([]);
      const res = await t.anon.post('/v1/embeddings', { model: 'echo-model', input: `echo ${name}` }, { authorization: `Bearer ${key}` });
      expect(res.status, `${name}: ${res.text}`).toBe(400);
      expect(res.text, name).toMatch(/Incorrect API key provided: \S*\*\*\*/);
      expect(leaked(res.text), `${name}: ${res.text}`).toEqual([]);
    }
    const rows = await t.platform.db('logs').where({ model_name: 'echo-model' }).select('content');
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(leaked(String(r.content)), r.content).toEqual([]);
  });

  it("an upstream message quoting the caller's input is not passed on, so the key's scrubbing tells no guess from another", async () => {
    const secret = 'sk-Zq7PwX3mKt9RbLe2NcVy';
    const ch = await t.root.post('/api/channel/', { type: 'openai', name: 'quote', key: secret, base_url: up.url, models: 'quote-model', price: 1000 });
    expect(ch.status, ch.text).toBe(201);
    // An upstream that quotes the input in its error (some do): guesses at pieces of the key's hex form, one right.
    up.behaviour = { kind: 'raw', status: 400, body: (call) => JSON.stringify({ error: { message: `Invalid input: ${[call.body.input].flat()[0]}` } }) };
    const hex = Buffer.from(secret).toString('hex');
    const right = `guesses ${hex.slice(0, 16)}`;
    const wrong = `guesses ${'0'.repeat(16)}`;
    const answers: string[] = [];
    for (const input of [right, wrong]) {
      const res = await t.anon.post('/v1/embeddings', { model: 'quote-model', input }, { authorization: `Bearer ${key}` });
      expect(res.status, res.text).toBe(400);
      answers.push(res.body.error.message);
    }
    expect(answers[0]).toBe(answers[1]);
    expect(answers[0]).toMatch(/quoted the input/);
    expect(answers[0]).not.toContain('***');
  });

  it('Retry-After is held to at most a day, whatever the channel says', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '1e306' }))).toBe(86_400_000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '1500' }))).toBe(1500);
  });
});

describe('several channels: which answer the caller gets', () => {
  let first: FakeOpenAI;
  let second: FakeOpenAI;
  let seq = 0;
  beforeAll(async () => {
    first = await new FakeOpenAI().start();
    second = await new FakeOpenAI().start();
  });
  afterAll(async () => {
    await first?.stop();
    await second?.stop();
  });
  /** A model of its own (so no cool-down carries over), served by `first` (priority 10) and then `second` (priority 5). */
  async function twoChannels(): Promise<string> {
    const model = `duo-${++seq}`;
    await prioritized(t, model, [
      [first, 10],
      [second, 5],
    ]);
    first.calls.length = 0;
    second.calls.length = 0;
    return model;
  }
  const call = (model: string) => t.anon.post('/v1/embeddings', { model, input: `to ${model}` }, { authorization: `Bearer ${key}` });

  it('a redirect is not followed and not blamed on the request: the next channel answers', async () => {
    const model = await twoChannels();
    first.behaviour = { kind: 'status', status: 307, headers: { location: 'http://127.0.0.1:9/v1/embeddings' } };
    second.behaviour = { kind: 'ok', reportUsage: true };
    const res = await call(model);
    expect(res.status, res.text).toBe(200);
    expect(first.calls).toHaveLength(1);
    expect(second.calls).toHaveLength(1);
  });

  it('every channel rate limited: 429 with the shortest Retry-After of them, whatever their order', async () => {
    const model = await twoChannels();
    // The shortest is the first channel's: the last one asked must not set the wait.
    first.behaviour = { kind: 'status', status: 429, retryAfter: '2' };
    second.behaviour = { kind: 'status', status: 429, retryAfter: '60' };
    const res = await call(model);
    expect(res.status, res.text).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    // Both set aside now: the next call answers at once, from the cool-downs, with the same shortest wait.
    const again = await call(model);
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    expect(first.calls.length + second.calls.length).toBe(2);
  });

  it('one channel rate limited and the other failing: 502, not a promise that waiting will help', async () => {
    const model = await twoChannels();
    first.behaviour = { kind: 'status', status: 503 };
    second.behaviour = { kind: 'status', status: 429, retryAfter: '30' };
    const res = await call(model);
    expect(res.status, res.text).toBe(502);
    expect(res.body.error.code).toBe('upstream_error');
  });
});

describe('a channel that hangs, with the default UPSTREAM_TIMEOUT_MS (longer than the wait)', () => {
  let app: TestApp;
  let hangs: FakeOpenAI;
  let answers: FakeOpenAI;
  let slowOne: FakeOpenAI;
  let rootKey: string;
  beforeAll(async () => {
    slowOne = await new FakeOpenAI().start();
    hangs = await new FakeOpenAI().start();
    answers = await new FakeOpenAI().start();
    hangs.behaviour = { kind: 'hang' };
    app = await startTestApp({ env: { SYNC_WAIT_MS: '2000', UPSTREAM_TIMEOUT_MS: '30000' } });
    await app.platform.db('users').where({ username: 'root' }).update({ quota: 1_000_000 });
    rootKey = (await app.root.post('/api/token/', { name: 'hang', unlimited_quota: true })).body.data.key;
  });
  afterAll(async () => {
    await app?.close();
    await hangs?.stop();
    await answers?.stop();
    await slowOne?.stop();
  });

  it('gets two thirds of the wait, and the next channel answers; later calls ask the answering channel first', async () => {
    await prioritized(app, 'hang-duo', [
      [hangs, 10],
      [answers, 5],
    ]);
    const call = (input: string) => app.anon.post('/v1/embeddings', { model: 'hang-duo', input }, { authorization: `Bearer ${rootKey}` });
    const res = await call('first call');
    expect(res.status, res.text).toBe(200);
    expect(hangs.calls).toHaveLength(1);
    expect(answers.calls).toHaveLength(1);
    const again = await call('second call');
    expect(again.status, again.text).toBe(200);
    expect(hangs.calls).toHaveLength(1); // not waited on again
    expect(answers.calls).toHaveLength(2);
  });

  it('a slow channel that answers within two thirds of the wait is waited for, though another channel remains', async () => {
    const model = 'slow-duo';
    await prioritized(app, model, [
      [slowOne, 10],
      [answers, 5],
    ]);
    slowOne.behaviour = { kind: 'ok', reportUsage: true, delayMs: 1_100 }; // the wait is 2 s: 1.33 s for the first channel
    const before = answers.calls.length;
    const res = await app.anon.post('/v1/embeddings', { model, input: 'take your time' }, { authorization: `Bearer ${rootKey}` });
    expect(res.status, res.text).toBe(200);
    expect(slowOne.calls).toHaveLength(1);
    expect(answers.calls.length).toBe(before); // not called: the slow one answered
  });
});

describe("channels' used_quota", () => {
  it('a write that fails for one channel keeps its sum for the next flush, and the others are written regardless', async () => {
    const ids: number[] = [];
    for (const name of ['usage-a', 'usage-b']) {
      const ch = await t.root.post('/api/channel/', {
        type: 'openai',
        name,
        key: `sk-${name}-0123456789`,
        base_url: up.url,
        models: `${name}-model`,
        price: 1000,
      });
      expect(ch.status, ch.text).toBe(201);
      ids.push(ch.body.data.id);
    }
    const [a, b] = ids as [number, number];
    const used = async (id: number) => Number((await t.platform.db('channels').where({ id }).first('used_quota')).used_quota);
    const directory = new ChannelDirectory(t.platform.db);
    // A's row is near bigint's end: adding 2^62 more overflows, so its UPDATE fails until the row is lowered.
    await t.platform
      .db('channels')
      .where({ id: a })
      .update({ used_quota: (2n ** 62n).toString() });
    directory.recordUsage(a, 2 ** 62);
    directory.recordUsage(b, 5);
    await expect(directory.flushUsage()).rejects.toThrow(/out of range/);
    expect(await used(b)).toBe(5);
    // The failed sum was kept: written by the next flush once it fits.
    await t.platform.db('channels').where({ id: a }).update({ used_quota: 0 });
    await directory.flushUsage();
    expect(await used(a)).toBe(2 ** 62);
    expect(await used(b)).toBe(5);
  });
});
