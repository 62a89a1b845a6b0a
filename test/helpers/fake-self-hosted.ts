// The part the fakes of self-hosted embedding servers (Ollama, TEI) share: a real HTTP server on loopback with one POST
// route, a key only when the test sets one (as the real servers: none unless their operator gives one), each call
// recorded, and the answer the test chose (ok after an optional delay, an error status in the server's own shape, or
// none). A server's fake says its route, how it checks a body, its answer and its error shape.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SelfHostedCall<B> {
  path: string;
  authorization: string | undefined;
  headers: http.IncomingHttpHeaders;
  /** The JSON body as sent (undefined when it was not JSON). */
  body: B;
}

export type SelfHostedBehaviour =
  | { kind: 'ok'; delayMs?: number; reportUsage?: boolean }
  /** This status with the server's error body (its message, and TEI's error_type) and headers; after `times` answers, ok again. */
  | { kind: 'status'; status: number; message?: string; errorType?: string; headers?: Record<string, string>; times?: number }
  | { kind: 'hang' };

/** The server refusing a request: a status and the body it sends (undefined: an empty body). */
export interface Refused {
  status: number;
  body: unknown;
}

export abstract class SelfHostedFake<B> {
  readonly calls: SelfHostedCall<B>[] = [];
  behaviour: SelfHostedBehaviour = { kind: 'ok' };
  /** The key it was started with: every call must bring `Authorization: Bearer <key>`. Unset: no key asked for. */
  key?: string;
  url = '';
  private server?: http.Server;

  protected abstract readonly route: string;
  /** Its refusal of a call without the key, or with another. */
  protected abstract readonly wrongKey: Refused;
  /** Its error body for a status and message (and error type, where it has them). */
  protected abstract errorBody(status: number, message: string, errorType?: string): unknown;
  /** Why it would refuse this body, if it would. */
  protected abstract check(body: unknown): Refused | undefined;
  protected abstract answer(body: B, reportUsage: boolean): unknown;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.serve(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** The calls since `from` (an index into calls). */
  since(from: number): SelfHostedCall<B>[] {
    return this.calls.slice(from);
  }

  private reply(res: http.ServerResponse, r: Refused, headers: Record<string, string> = {}): void {
    if (r.body === undefined) {
      res.writeHead(r.status, headers);
      res.end();
      return;
    }
    res.writeHead(r.status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(r.body));
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {}
    this.calls.push({ path: req.url ?? '', authorization: req.headers.authorization, headers: req.headers, body: body as B });
    if (req.method !== 'POST' || req.url !== this.route)
      return this.reply(res, { status: 404, body: this.errorBody(404, `no route ${req.method} ${req.url}`) });
    if (this.key !== undefined && req.headers.authorization !== `Bearer ${this.key}`) return this.reply(res, this.wrongKey);
    const b = this.behaviour;
    if (b.kind === 'hang') return;
    if (b.kind === 'status') {
      if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok' };
      return this.reply(res, { status: b.status, body: this.errorBody(b.status, b.message ?? `fake server says ${b.status}`, b.errorType) }, b.headers);
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '') || body === undefined)
      return this.reply(res, { status: 400, body: this.errorBody(400, 'the body must be JSON (application/json)') });
    const refused = this.check(body);
    if (refused) return this.reply(res, refused);
    const send = () => this.reply(res, { status: 200, body: this.answer(body as B, b.reportUsage !== false) });
    if (b.delayMs) setTimeout(send, b.delayMs);
    else send();
  }
}

/** Object keys not among `allowed`. */
export const extraKeys = (o: object, allowed: readonly string[]) => Object.keys(o).filter((k) => !allowed.includes(k));
