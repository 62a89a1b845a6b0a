// What the tests of self-hosted servers' channel types (Ollama, TEI) share through the gateway: the app, the official
// openai client as the caller, three fakes (`up` without a key, `backup` for failover, `keyed` started with a key),
// their channels, and the checks every such type goes through (failover, a refused key, a cool-down).
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { SelfHostedFake } from './fake-self-hosted.js';
import { asFloat32, type Gateway, received, startGateway } from './provider-gateway.js';
import type { TestApp } from './services.js';

export interface SelfHostedSuite<F extends SelfHostedFake<unknown>> {
  g: Gateway;
  t: TestApp;
  client: OpenAI;
  up: F;
  backup: F;
  keyed: F;
  /** A channel of the type (key "none", on `up` unless given), 201 expected; its id. */
  channel(body: Record<string, unknown>): Promise<number>;
  /** Calls each fake got since this was called: [up, backup]. */
  counter(): () => [number, number];
  /** When a channel's cool-down ends (epoch ms; 0: none). */
  cooldownUntil(id: number): Promise<number>;
}

/** A test file's suite: before each test, every fake answers ok again and `reset` puts back what else the file changes. */
export function selfHostedSuite<F extends SelfHostedFake<unknown>>(type: string, key: string, make: () => F, reset?: (f: F) => void): SelfHostedSuite<F> {
  const s = {} as SelfHostedSuite<F>;
  beforeAll(async () => {
    [s.up, s.backup, s.keyed] = await Promise.all([make().start(), make().start(), make().start()]);
    s.keyed.key = key;
    s.g = await startGateway(type);
    s.t = s.g.t;
    s.client = s.g.client();
  });
  afterAll(async () => {
    await s.t?.close();
    await Promise.all([s.up?.stop(), s.backup?.stop(), s.keyed?.stop()]);
  });
  beforeEach(() => {
    for (const f of [s.up, s.backup, s.keyed]) {
      f.behaviour = { kind: 'ok' };
      reset?.(f);
    }
  });
  s.channel = (body) => s.g.channel(type, String(body.models), { name: type, key: 'none', base_url: s.up.url, ...body });
  s.counter = () => {
    const [up, backup] = [s.up.calls.length, s.backup.calls.length];
    return () => [s.up.calls.length - up, s.backup.calls.length - backup];
  };
  s.cooldownUntil = async (id) => Number(await s.t.platform.redis.get(s.t.platform.keys.grouped('channel-cooldown', id)));
  return s;
}

/**
 * A channel for `model` on `keyed` with a wrong key (priority 10) and one on `backup` (priority 1): the call is answered
 * by `backup` with `expected`, and the first channel is disabled (status 3) with `reason`, which does not hold the key.
 */
export async function expectKeyRefused<F extends SelfHostedFake<unknown>>(s: SelfHostedSuite<F>, model: string, expected: number[], reason: string) {
  const wrongKey = `${model}-wrong-key-0123456789`;
  const refused = await s.channel({ name: 'wrong-key', base_url: s.keyed.url, key: wrongKey, models: model, priority: 10 });
  await s.channel({ name: 'spare', base_url: s.backup.url, models: model, priority: 1 });
  const res = await s.client.embeddings.create({ model, input: 'refused key text' });
  expect(received(res)).toEqual([asFloat32(expected)]);
  expect(s.keyed.calls.at(-1)!.authorization).toBe(`Bearer ${wrongKey}`);
  const seen = await s.g.seen(refused);
  expect(seen.status).toBe(3);
  expect(seen.status_reason).toBe(reason);
  expect(seen.status_reason).not.toContain(wrongKey.slice(0, 12));
}

/** Input sizes of the calls `fake` got since call number `from`, smallest first. */
export const partSizes = <B>(fake: SelfHostedFake<B>, from: number, inputs: (body: B) => unknown[]) =>
  fake
    .since(from)
    .map((c) => inputs(c.body).length)
    .sort((a, b) => a - b);
