// A stand-in for an OpenAI-compatible upstream (it cannot run here): a real HTTP server on loopback.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface UpstreamCall {
  path: string;
  authorization: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: { model: string; input: string[] | string; encoding_format?: string; dimensions?: number };
}

export type Behaviour =
  | { kind: 'ok'; reportUsage?: boolean /** Answers after this long. */; delayMs?: number }
  /** An error status (with extra headers); after `times` answers (if given) it answers ok again. */
  | { kind: 'status'; status: number; retryAfter?: string; message?: string; headers?: Record<string, string>; times?: number }
  | { kind: 'hang' }
  /** Answers exactly this (the test builds odd or broken answers itself). */
  | { kind: 'raw'; status: number | ((call: UpstreamCall) => number); body: (call: UpstreamCall) => string | Buffer };

/** Vectors that depend only on the text, so tests can check which input landed where. */
export function fakeVector(text: string, dims = 4): number[] {
  const v = new Array(dims).fill(0).map((_, i) => ((text.length * 31 + i * 7 + text.charCodeAt(0)) % 97) / 97);
  return v;
}

/**
 * How the fake answers encoding_format: as OpenAI does (base64 of little-endian float32 when asked), or as some
 * OpenAI-compatible servers do: floats whatever was asked ('ignores'), or 400 for anything but float ('float-only').
 */
export type Encodings = 'openai' | 'ignores' | 'float-only';

export class FakeOpenAI {
  readonly calls: UpstreamCall[] = [];
  behaviour: Behaviour = { kind: 'ok', reportUsage: true };
  encodings: Encodings = 'openai';
  /** Vectors to answer for given input texts, written into the JSON exactly as given (floats), or as their float32 (base64); fakeVector for the rest. */
  readonly fixed = new Map<string, number[]>();
  private server?: http.Server;
  url = '';
  /** Calls being answered now, and the most there were at once (reset it to watch a stretch). */
  inFlight = 0;
  maxInFlight = 0;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw || '{}');
        this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
        res.on('close', () => this.inFlight--);
        this.calls.push({ path: req.url ?? '', authorization: req.headers.authorization, headers: req.headers, body });
        const b = this.behaviour;
        if (b.kind === 'hang') return; // never answers
        if (b.kind === 'raw') {
          const call = this.calls[this.calls.length - 1]!;
          res.writeHead(typeof b.status === 'number' ? b.status : b.status(call), { 'content-type': 'application/json' });
          res.end(b.body(call));
          return;
        }
        if (b.kind === 'status') {
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (b.retryAfter) headers['retry-after'] = b.retryAfter;
          Object.assign(headers, b.headers);
          if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok', reportUsage: true };
          res.writeHead(b.status, headers);
          res.end(JSON.stringify({ error: { message: b.message ?? `fake upstream says ${b.status}`, type: 'fake', code: null } }));
          return;
        }
        const format = body.encoding_format ?? 'float';
        if (this.encodings === 'float-only' && format !== 'float') {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `encoding_format must be float, not ${format}`, type: 'invalid_request_error', code: null } }));
          return;
        }
        const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
        const dims = body.dimensions ?? 4;
        const encode = (v: number[]) => (format === 'base64' && this.encodings === 'openai' ? Buffer.from(Float32Array.from(v).buffer).toString('base64') : v);
        const answer = () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              object: 'list',
              data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: encode(this.fixed.get(text) ?? fakeVector(text, dims)) })).reverse(),
              model: body.model,
              ...(b.reportUsage === false ? {} : { usage: { prompt_tokens: inputs.length * 10, total_tokens: inputs.length * 10 } }),
            }),
          );
        };
        if (b.delayMs) setTimeout(answer, b.delayMs);
        else answer();
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
