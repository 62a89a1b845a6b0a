// A stand-in for AWS Bedrock's runtime (InvokeModel for its embedding models): a real server on loopback that speaks
// HTTP/1.1 (as the gateway asks) and HTTP/2 without TLS (as the AWS SDK asks by default) on one port, checks each call's
// SigV4 signature as AWS does (recomputed with AWS's own signing package from the credentials it knows; a wrong one is
// refused with AWS's 403), checks the body as the model does, and answers Titan's and Cohere's shapes.
import { createHash } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { fakeVector } from './fake-openai.js';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface BedrockCall {
  /** '1.1' (as the gateway asks) or '2.0' (as the AWS SDK does). */
  httpVersion: string;
  method: string;
  /** The path as sent (the model id percent-encoded). */
  path: string;
  /** The model id, decoded. */
  model: string;
  headers: Record<string, string>;
  /** The parsed JSON body. */
  body: Record<string, unknown>;
  /** Whether its signature was the one AWS would compute (a call with a wrong one is refused before anything else). */
  signed: boolean;
}

export type BedrockBehaviour =
  | { kind: 'ok'; delayMs?: number }
  /** An error with Bedrock's body ({message}) and x-amzn-ErrorType; after `times` answers, ok again. */
  | { kind: 'status'; status: number; errorType: string; message?: string; headers?: Record<string, string>; times?: number }
  | { kind: 'hang' };

interface Refusal {
  status: number;
  errorType: string;
  message: string;
}

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';
const TITAN_V2_DIMENSIONS = [256, 512, 1024];
const COHERE_INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering', 'image'];
const COHERE_EMBEDDING_TYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary'];

/** Titan's token count for a text, as the fake reports it. */
export const titanTokens = (text: string) => Math.ceil(text.length / 4);

export class FakeBedrock {
  readonly calls: BedrockCall[] = [];
  behaviour: BedrockBehaviour = { kind: 'ok' };
  /** The credentials it knows (any of them signs). */
  credentials: AwsCredentials[] = [];
  region = 'us-east-1';
  /** The models it serves (Bedrock's own ids). */
  models = new Set(['amazon.titan-embed-text-v2:0', 'amazon.titan-embed-text-v1', 'cohere.embed-english-v3', 'cohere.embed-multilingual-v3']);
  /** How long a vector is when no dimensions are asked for (Titan v2 and Cohere v3 give 1024). */
  defaultDimensions = 1024;
  url = '';
  private server?: net.Server;
  private h1 = http.createServer((req, res) => this.collect(req, res, req.headers as Record<string, string | string[] | undefined>));
  private h2 = http2.createServer((req, res) => this.collect(req, res, req.headers as Record<string, string | string[] | undefined>));
  private sockets = new Set<net.Socket>();

  constructor(credentials: AwsCredentials[] = []) {
    this.credentials = credentials;
  }

  async start(): Promise<this> {
    // One port for both: HTTP/2 with prior knowledge starts with its preface ("PRI * HTTP/2.0"), HTTP/1.1 with a method.
    this.server = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.once('data', (first: Buffer) => {
        socket.pause();
        if (first.subarray(0, 3).toString('latin1') !== 'PRI') {
          socket.unshift(first);
          this.h1.emit('connection', socket);
          socket.resume();
          return;
        }
        // HTTP/2 reads a socket's handle directly, past what was read here: it is given a stream that starts with it.
        const stream = new Duplex({
          read: () => socket.resume(),
          write: (chunk, _encoding, done) => socket.write(chunk, done),
          final: (done) => socket.end(done),
          destroy: (err, done) => {
            socket.destroy(err ?? undefined);
            done(err);
          },
        });
        stream.push(first);
        socket.on('data', (c: Buffer) => {
          if (!stream.push(c)) socket.pause();
        });
        socket.on('end', () => stream.push(null));
        socket.on('error', (err) => stream.destroy(err));
        this.h2.emit('connection', stream);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }

  private collect(
    req: http.IncomingMessage | http2.Http2ServerRequest,
    res: http.ServerResponse | http2.Http2ServerResponse,
    raw: Record<string, string | string[] | undefined>,
  ) {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(raw)) if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
      void this.handle(req.httpVersion, req.method ?? '', req.url ?? '', headers, Buffer.concat(chunks), res);
    });
  }

  private send(res: http.ServerResponse | http2.Http2ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const out = JSON.stringify(body);
    (res as http.ServerResponse).writeHead(status, {
      'content-type': 'application/json',
      'x-amzn-requestid': `fake-${this.calls.length}`,
      ...headers,
    });
    res.end(out);
  }

  private refuse(res: http.ServerResponse | http2.Http2ServerResponse, r: Refusal) {
    this.send(res, r.status, { message: r.message }, { 'x-amzn-errortype': `${r.errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/` });
  }

  private async handle(
    httpVersion: string,
    method: string,
    path: string,
    headers: Record<string, string>,
    raw: Buffer,
    res: http.ServerResponse | http2.Http2ServerResponse,
  ) {
    const m = /^\/model\/([^/?]+)\/invoke$/.exec(path);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {}
    let model = '';
    try {
      model = m ? decodeURIComponent(m[1]!) : '';
    } catch {}
    const refusal = await this.checkSignature(method, path, headers, raw);
    this.calls.push({ httpVersion, method, path, model, headers, body, signed: !refusal });
    if (refusal) return this.refuse(res, refusal);
    if (method !== 'POST' || !m) return this.refuse(res, { status: 404, errorType: 'UnknownOperationException', message: 'Unknown operation' });
    if (!this.models.has(model))
      return this.refuse(res, { status: 400, errorType: 'ValidationException', message: 'The provided model identifier is invalid.' });
    const b = this.behaviour;
    if (b.kind === 'hang') return;
    if (b.kind === 'status') {
      if (b.times !== undefined && --b.times <= 0) this.behaviour = { kind: 'ok' };
      return this.send(
        res,
        b.status,
        { message: b.message ?? `fake Bedrock says ${b.errorType}` },
        {
          'x-amzn-errortype': `${b.errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
          ...b.headers,
        },
      );
    }
    if (!/^application\/json\b/i.test(headers['content-type'] ?? ''))
      return this.refuse(res, { status: 400, errorType: 'ValidationException', message: 'The provided content type is not supported.' });
    const wrong = model.startsWith('cohere.') ? this.checkCohere(raw, body) : this.checkTitan(model, raw, body);
    if (wrong) return this.refuse(res, { status: 400, errorType: 'ValidationException', message: wrong });
    const answer = () =>
      this.send(res, 200, model.startsWith('cohere.') ? this.cohereAnswer(body) : this.titanAnswer(body), { 'x-amzn-bedrock-input-token-count': '1' });
    if (b.delayMs) setTimeout(answer, b.delayMs);
    else answer();
  }

  /** AWS's checks of a SigV4 signature, in its order; undefined when it is right. */
  private async checkSignature(method: string, path: string, headers: Record<string, string>, raw: Buffer): Promise<Refusal | undefined> {
    const auth = headers.authorization;
    if (!auth) return { status: 403, errorType: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
    const parsed =
      /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;:-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
    if (!parsed)
      return { status: 403, errorType: 'IncompleteSignatureException', message: 'Authorization header requires Credential, SignedHeaders and Signature.' };
    const [, accessKeyId, day, region, service, signedList, signature] = parsed as unknown as string[];
    const creds = this.credentials.find((c) => c.accessKeyId === accessKeyId);
    if (!creds) return { status: 403, errorType: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
    if ((headers['x-amz-security-token'] ?? '') !== (creds.sessionToken ?? ''))
      return { status: 403, errorType: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
    if (service !== 'bedrock')
      return { status: 403, errorType: 'InvalidSignatureException', message: "Credential should be scoped to correct service: 'bedrock'." };
    if (region !== this.region)
      return { status: 403, errorType: 'InvalidSignatureException', message: `Credential should be scoped to a valid region, not '${region}'.` };
    const amzDate = headers['x-amz-date'] ?? '';
    const when = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
    if (!when || !amzDate.startsWith(day!))
      return {
        status: 403,
        errorType: 'IncompleteSignatureException',
        message: 'Authorization header requires existence of either a X-Amz-Date or a Date header.',
      };
    const signingDate = new Date(Date.UTC(+when[1]!, +when[2]! - 1, +when[3]!, +when[4]!, +when[5]!, +when[6]!));
    if (Math.abs(Date.now() - signingDate.getTime()) > 5 * 60_000)
      return { status: 403, errorType: 'InvalidSignatureException', message: 'Signature expired.' };
    const signed = signedList!.split(';');
    if (!signed.includes('host') && !signed.includes(':authority'))
      return { status: 403, errorType: 'InvalidSignatureException', message: "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization." };
    if (!signed.includes('x-amz-date'))
      return { status: 403, errorType: 'InvalidSignatureException', message: "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization." };
    const bodyHash = createHash('sha256').update(raw).digest('hex');
    if (headers['x-amz-content-sha256'] !== undefined && headers['x-amz-content-sha256'] !== bodyHash)
      return { status: 400, errorType: 'InvalidSignatureException', message: "The provided 'x-amz-content-sha256' header does not match what was computed." };
    // The canonical request from what arrived: the signed headers' values, the path as sent, the body.
    const [pathOnly, query = ''] = path.split('?', 2) as [string, string?];
    const signedHeaders: Record<string, string> = {};
    for (const name of signed) {
      const value = headers[name] ?? (name === 'host' ? headers[':authority'] : undefined);
      if (value === undefined) return { status: 403, errorType: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
      signedHeaders[name] = value;
    }
    const signer = new SignatureV4({ credentials: creds, region, service: 'bedrock', sha256: Sha256, applyChecksum: false });
    const again = await signer.sign(
      new HttpRequest({
        method,
        protocol: 'https:',
        hostname: 'bedrock',
        path: pathOnly,
        query: Object.fromEntries(new URLSearchParams(query)),
        headers: signedHeaders,
        body: raw,
      }),
      { signingDate },
    );
    const expected = /Signature=([0-9a-f]{64})$/.exec(String(again.headers.authorization))?.[1];
    if (expected !== signature) return { status: 403, errorType: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
    return undefined;
  }

  private checkTitan(model: string, raw: Buffer, body: Record<string, unknown>): string | undefined {
    if (!raw.length || typeof body !== 'object' || body === null || Array.isArray(body))
      return 'Malformed input request, please reformat your input and try again.';
    const allowed = model === 'amazon.titan-embed-text-v2:0' ? ['inputText', 'dimensions', 'normalize', 'embeddingTypes'] : ['inputText'];
    const extra = Object.keys(body).filter((k) => !allowed.includes(k));
    if (extra.length) return `Malformed input request: #: extraneous key [${extra[0]}] is not permitted, please reformat your input and try again.`;
    if (typeof body.inputText !== 'string' || body.inputText.length === 0 || body.inputText.length > 50_000)
      return 'Malformed input request: #/inputText: expected a string of 1 to 50000 characters, please reformat your input and try again.';
    if (body.dimensions !== undefined && !TITAN_V2_DIMENSIONS.includes(body.dimensions as number))
      return `Malformed input request: #/dimensions: ${String(body.dimensions)} is not a valid enum value, please reformat your input and try again.`;
    if (body.normalize !== undefined && typeof body.normalize !== 'boolean')
      return 'Malformed input request: #/normalize: expected type: Boolean, please reformat your input and try again.';
    return undefined;
  }

  private checkCohere(raw: Buffer, body: Record<string, unknown>): string | undefined {
    if (!raw.length || typeof body !== 'object' || body === null || Array.isArray(body))
      return 'Malformed input request, please reformat your input and try again.';
    const extra = Object.keys(body).filter((k) => !['texts', 'input_type', 'truncate', 'embedding_types', 'images'].includes(k));
    if (extra.length) return `Malformed input request: #: extraneous key [${extra[0]}] is not permitted, please reformat your input and try again.`;
    const texts = body.texts;
    if (!Array.isArray(texts) || texts.length > 96 || texts.some((t) => typeof t !== 'string' || t.length > 2048))
      return 'Malformed input request: #/texts: expected at most 96 strings of at most 2048 characters, please reformat your input and try again.';
    if (!COHERE_INPUT_TYPES.includes(body.input_type as string))
      return 'Malformed input request: #: required key [input_type] not found, please reformat your input and try again.';
    if (body.truncate !== undefined && !['NONE', 'START', 'END'].includes(body.truncate as string))
      return `Malformed input request: #/truncate: ${String(body.truncate)} is not a valid enum value, please reformat your input and try again.`;
    const types = body.embedding_types;
    if (types !== undefined && (!Array.isArray(types) || types.some((t) => !COHERE_EMBEDDING_TYPES.includes(t as string))))
      return 'Malformed input request: #/embedding_types: not a valid list of embedding types, please reformat your input and try again.';
    return undefined;
  }

  private titanAnswer(body: Record<string, unknown>) {
    const text = body.inputText as string;
    const embedding = fakeVector(text, (body.dimensions as number | undefined) ?? this.defaultDimensions);
    const types = body.embeddingTypes as string[] | undefined;
    return {
      embedding,
      inputTextTokenCount: titanTokens(text),
      ...(types ? { embeddingsByType: Object.fromEntries(types.map((t) => [t, t === 'float' ? embedding : embedding.map((x) => (x > 0.5 ? 1 : 0))])) } : {}),
    };
  }

  private cohereAnswer(body: Record<string, unknown>) {
    const texts = body.texts as string[];
    const vectors = texts.map((t) => fakeVector(t, this.defaultDimensions));
    const types = body.embedding_types as string[] | undefined;
    const id = `fake-${this.calls.length}`;
    if (!types) return { id, response_type: 'embeddings_floats', embeddings: vectors, texts };
    const byType = Object.fromEntries(types.map((t) => [t, t === 'float' ? vectors : vectors.map((v) => v.map((x) => Math.round(x * 127)))]));
    return { id, response_type: 'embeddings_by_type', embeddings: byType, texts };
  }
}
