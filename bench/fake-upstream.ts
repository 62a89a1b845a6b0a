// The bench's OpenAI-compatible upstream (a remote party that cannot run here): answers every embeddings call
// with a 1536-float unit vector per input, made from the text and sent as OpenAI sends them: shortest float32
// decimals, or base64 little-endian float32 when asked for encoding_format "base64". About the least work a
// real provider's HTTP front does per call. LATENCY_MS holds each answer that long, as a provider far away would.
import http from 'node:http';
import { float32ArrayToJson } from '../src/embeddings/float32.js';

const DIMS = 1536;
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 0);

/** A unit vector that depends on the text, made and encoded per input as a real provider would. */
function vectorOf(text: string, base64: boolean): string {
  let seed = 2166136261;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 16777619) >>> 0;
  const v = new Float32Array(DIMS);
  let norm = 0;
  for (let i = 0; i < DIMS; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    v[i] = seed / 2 ** 32 - 0.5;
    norm += v[i]! * v[i]!;
  }
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < DIMS; i++) v[i]! *= scale;
  return base64 ? `"${Buffer.from(v.buffer).toString('base64')}"` : float32ArrayToJson(v);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let inputs: string[];
    let base64 = false;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input: string | string[]; encoding_format?: string };
      inputs = Array.isArray(body.input) ? body.input : [body.input];
      base64 = body.encoding_format === 'base64';
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"bad json","type":"invalid_request_error"}}');
      return;
    }
    const data = inputs.map((text, index) => `{"object":"embedding","index":${index},"embedding":${vectorOf(text, base64)}}`);
    const tokens = inputs.reduce((n, text) => n + Math.ceil(text.length / 4), 0);
    const answer = `{"object":"list","data":[${data.join(',')}],"model":"text-embedding-3-small","usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`;
    const send = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer);
    };
    if (LATENCY_MS > 0) setTimeout(send, LATENCY_MS);
    else send();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${JSON.stringify({ listening: typeof a === 'object' && a ? a.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
