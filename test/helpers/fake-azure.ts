// A stand-in for an Azure OpenAI resource (it cannot run here): a real HTTP server on loopback speaking Azure's
// embeddings API — the classic `/openai/deployments/{deployment}/embeddings?api-version=…` and the v1
// `/openai/v1/embeddings` — with the `api-key` header, OpenAI's body and answer, and Azure's error bodies and headers.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakeVector } from './fake-openai.js';

export interface AzureCall {
  /** The path and query as sent. */
  url: string;
  /** The classic path's deployment; undefined on the v1 path. */
  deployment?: string;
  apiVersion: string | null;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export type AzureBehaviour =
  | { kind: 'ok'; delayMs?: number }
  /** An error status with Azure's body ({"error":{"code","message"}}) and these headers; after `times` answers, ok again. */
  | { kind: 'status'; status: number; message?: string; code?: string; headers?: Record<string, string>; times?: number };

const API_VERSION = /^\d{4}-\d{2}-\d{2}(-preview)?$/;
const BODY_FIELDS = new Set(['model', 'input', 'encoding_format', 'dimensions', 'user']);

const isTokens = (x: unknown) => Array.isArray(x) && x.length > 0 && x.every((n) => Number.isInteger(n) && n >= 0);

/** Why a body is not an Azure embeddings request, or null when it is one. */
function invalid(body: Record<string, unknown>, v1: boolean): string | null {
  for (const k of Object.keys(body)) if (!BODY_FIELDS.has(k)) return `Unrecognized request argument supplied: ${k}`;
  if (v1 && (typeof body.model !== 'string' || !body.model)) return "'model' is a required property";
  if (body.model !== undefined && typeof body.model !== 'string') return "'model' must be a string";
  const input = body.input;
  const ok =
    (typeof input === 'string' && input.length > 0) ||
    isTokens(input) ||
    (Array.isArray(input) && input.length > 0 && input.length <= 2048 && (input.every((s) => typeof s === 'string' && s.length > 0) || input.every(isTokens)));
  if (!ok) return "'input' must be a non-empty string, an array of strings, or token arrays";
  if (body.encoding_format !== undefined && body.encoding_format !== 'float' && body.encoding_format !== 'base64')
    return "'encoding_format' must be 'float' or 'base64'";
  if (body.dimensions !== undefined && !(Number.isInteger(body.dimensions) && (body.dimensions as number) > 0))
    return "'dimensions' must be a positive integer";
  return null;
}

export class FakeAzure {
  readonly calls: AzureCall[] = [];
  behaviour: AzureBehaviour = { kind: 'ok' };
  private server?: http.Server;
  url = '';

  /** `key`: the resource's key (the `api-key` header must carry it); `deployments`: the deployments it has. */
  constructor(
    readonly key = 'azure-test-key-0123456789abcdef',
    readonly deployments = new Set(['text-embedding-3-small', 'my-embedding-deployment']),
  ) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => this.answer(req, raw, res));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private answer(req: http.IncomingMessage, raw: string, res: http.ServerResponse): void {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, code: string, message: string, headers?: Record<string, string>) => send(status, { error: { code, message } }, headers);
    const u = new URL(req.url ?? '/', 'http://fake');
    const classic = /^\/openai\/deployments\/([^/]+)\/embeddings$/.exec(u.pathname);
    const v1 = u.pathname === '/openai/v1/embeddings';
    if (req.method !== 'POST' || (!classic && !v1)) return error(404, '404', 'Resource not found');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw);
    } catch {
      return error(400, 'BadRequest', 'The request body is not valid JSON.');
    }
    const apiVersion = u.searchParams.get('api-version');
    this.calls.push({
      url: req.url ?? '',
      deployment: classic ? decodeURIComponent(classic[1]!) : undefined,
      apiVersion,
      headers: req.headers,
      body,
    });
    // The key: in `api-key`; the v1 API also takes it as a Bearer token (as OpenAI's own client sends it).
    const given = req.headers['api-key'] ?? (v1 ? /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] : undefined);
    if (given !== this.key)
      return error(
        401,
        '401',
        'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
      );
    if (classic && (!apiVersion || !API_VERSION.test(apiVersion))) return error(404, '404', 'Resource not found');
    if (v1 && apiVersion !== null && apiVersion !== 'preview') return error(400, 'BadRequest', 'API version not supported');
    const b = this.behaviour;
    if (b.kind === 'status') {
      if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok' };
      return error(b.status, b.code ?? String(b.status), b.message ?? `fake Azure says ${b.status}`, b.headers);
    }
    const why = invalid(body, v1);
    if (why) return error(400, 'BadRequest', why);
    const deployment = classic ? decodeURIComponent(classic[1]!) : (body.model as string);
    if (!this.deployments.has(deployment))
      return error(
        404,
        'DeploymentNotFound',
        'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.',
      );
    const input = body.input as string | string[] | number[] | number[][];
    const inputs: (string | number[])[] = typeof input === 'string' || isTokens(input) ? [input as string | number[]] : (input as (string | number[])[]);
    const dims = (body.dimensions as number | undefined) ?? 4;
    const base64 = body.encoding_format === 'base64';
    const ok = () =>
      send(200, {
        object: 'list',
        data: inputs.map((one, index) => {
          const v = fakeVector(typeof one === 'string' ? one : one.join(' '), dims);
          return { object: 'embedding', index, embedding: base64 ? Buffer.from(Float32Array.from(v).buffer).toString('base64') : v };
        }),
        model: deployment,
        usage: { prompt_tokens: inputs.length * 7, total_tokens: inputs.length * 7 },
      });
    if (b.delayMs) setTimeout(ok, b.delayMs);
    else ok();
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}
