// Redis keys matching a pattern, on one Redis or on every master of a cluster (SCAN: never blocks the server).
import { Cluster } from 'ioredis';
import type { Redis, RedisKeys } from '../redis.js';

export async function* scanKeys(redis: Redis, pattern: string): AsyncGenerator<string> {
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      yield* keys;
    } while (cursor !== '0');
  }
}

/** The pattern of every key `keys.of(kind, id)` makes for ids starting with `idStart`. */
export const keysOfPattern = (keys: RedisKeys, kind: string, idStart = '') => keys.of(kind, `${idStart}\u0000`).replace('\u0000', '*');
