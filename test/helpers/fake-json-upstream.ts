// What every fake of a provider's JSON embeddings API does the same: a real HTTP server on loopback taking POSTs at one
// path with a Bearer key, recording each call, checking the body as the provider does (a wrong request is its 400), and
// answering as a test sets it (ok, an error status with the provider's error body and headers, or never). A provider's
// fake says only its path, its checks, its answer and its error shape.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall<B> {
  method: string;
  path: string;
  authorization: string | undefined;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (as sent, before any check). */
  body: B;
}

export type FakeBehaviour =
  /** Answers the call (after `delayMs`); `reportUsage: false` leaves the token count out. */
  | { kind: 'ok'; reportUsage?: boolean; delayMs?: number }
  /** An error status with the provider's error body (its `message`) and these headers; after `times` answers, ok again. */
  | { kind: 'status'; status: number; message?: string; headers?: Record<string, string>; times?: number }
  | { kind: 'hang' };

/** A refusal of the request itself: the status and the provider's message. */
export interface Refusal {
  status: number;
  message: string;
}

export abstract class FakeJsonUpstream<B> {
  readonly calls: RecordedCall<B>[] = [];
  behaviour: FakeBehaviour = { kind: 'ok' };
  /** The one key it takes (as `Authorization: Bearer <key>`); undefined: any non-empty Bearer key. */
  key?: string;
  url = '';
  private server?: http.Server;

  /** The path it serves (POST). */
  protected abstract readonly path: string;
  /** The provider's error body for a message. */
  protected abstract errorBody(message: string): unknown;
  /** The provider's refusal of a key that is missing or not the one it takes. */
  protected abstract readonly badKey: Refusal;
  /** Why the provider would refuse this body (a 400, or its own status), if it would. */
  protected abstract check(body: unknown): Refusal | undefined;
  /** The answer to a body that passed `check`. */
  protected abstract answer(body: B, reportUsage: boolean): unknown;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (raw += c));
      req.on('end', () => this.handle(req, res, raw));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** POSTs a body of the test's own (not through an SDK) at the fake's path with its key: the status and the parsed answer. */
  async post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(this.url + this.path, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.key ?? 'any-key'}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    this.calls.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, headers: req.headers, body: body as B });
    const refuse = (r: Refusal) => this.send(res, r.status, this.errorBody(r.message));
    if (req.method !== 'POST' || req.url !== this.path) return refuse({ status: 404, message: `no route for ${req.method} ${req.url}` });
    const auth = req.headers.authorization ?? '';
    const given = /^Bearer (\S+)$/.exec(auth)?.[1];
    if (!given || (this.key !== undefined && given !== this.key)) return refuse(this.badKey);
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return refuse({ status: 400, message: 'the body must be application/json' });
    if (body === undefined) return refuse({ status: 400, message: 'the body is not JSON' });
    const b = this.behaviour;
    if (b.kind === 'hang') return;
    if (b.kind === 'status') {
      if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok' };
      return this.send(res, b.status, this.errorBody(b.message ?? `fake upstream says ${b.status}`), b.headers);
    }
    const wrong = this.check(body);
    if (wrong) return refuse(wrong);
    const answer = () => this.send(res, 200, this.answer(body as B, b.reportUsage !== false));
    if (b.delayMs) setTimeout(answer, b.delayMs);
    else answer();
  }
}

/** Whether a value is a list of non-empty strings, of 1 to `max` items. */
export const isTexts = (v: unknown, max: number): v is string[] =>
  Array.isArray(v) && v.length >= 1 && v.length <= max && v.every((t) => typeof t === 'string' && t.length > 0);

/** The keys of an object that are not among `allowed`. */
export const unknownKeys = (o: object, allowed: readonly string[]) => Object.keys(o).filter((k) => !allowed.includes(k));
