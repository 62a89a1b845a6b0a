// A Postgres that accepts connections but never answers (a frozen server, a black-holed proxy) is "database
// unavailable" (503 with Retry-After), like one that refuses them: not a 500.
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDbUnavailable } from '../../src/db.js';
import { toAppError } from '../../src/errors.js';

let silent: net.Server;
let port: number;
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  // Takes every connection and says nothing: pg's startup message goes unanswered.
  silent = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  port = (silent.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

describe('a database that never answers', () => {
  it("pg's connection timeout is database unavailable: 503 database_unavailable with Retry-After", async () => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/x`, connectionTimeoutMillis: 200 });
    const err = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, 'the connection attempt timed out').toBeInstanceOf(Error);
    expect(isDbUnavailable(err)).toBe(true);
    const answer = toAppError(err);
    expect(answer).toMatchObject({ status: 503, code: 'database_unavailable' });
    expect(answer.headers?.['Retry-After']).toBeDefined();
  });
});
