// A stand-in for an OpenAI-compatible upstream (it cannot run here): a real HTTP server on loopback.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface UpstreamCall {
  path: string;
  authorization: string | undefined;
  body: { model: string; input: string[] | string; encoding_format?: string; dimensions?: number };
}

export type Behaviour =
  | { kind: 'ok'; reportUsage?: boolean }
  /** An error status (with extra headers); after `times` answers (if given) it answers ok again. */
  | { kind: 'status'; status: number; retryAfter?: string; message?: string; headers?: Record<string, string>; times?: number }
  | { kind: 'hang' };

/** Vectors that depend only on the text, so tests can check which input landed where. */
export function fakeVector(text: string, dims = 4): number[] {
  const v = new Array(dims).fill(0).map((_, i) => ((text.length * 31 + i * 7 + text.charCodeAt(0)) % 97) / 97);
  return v;
}

export class FakeOpenAI {
  readonly calls: UpstreamCall[] = [];
  behaviour: Behaviour = { kind: 'ok', reportUsage: true };
  /** Vectors to answer for given input texts, written into the JSON exactly as given; fakeVector for the rest. */
  readonly fixed = new Map<string, number[]>();
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw || '{}');
        this.calls.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
        const b = this.behaviour;
        if (b.kind === 'hang') return; // never answers
        if (b.kind === 'status') {
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (b.retryAfter) headers['retry-after'] = b.retryAfter;
          Object.assign(headers, b.headers);
          if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok', reportUsage: true };
          res.writeHead(b.status, headers);
          res.end(JSON.stringify({ error: { message: b.message ?? `fake upstream says ${b.status}`, type: 'fake', code: null } }));
          return;
        }
        const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
        const dims = body.dimensions ?? 4;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: this.fixed.get(text) ?? fakeVector(text, dims) })).reverse(),
            model: body.model,
            ...(b.reportUsage === false ? {} : { usage: { prompt_tokens: inputs.length * 10, total_tokens: inputs.length * 10 } }),
          }),
        );
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}
