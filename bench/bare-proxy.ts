// The least a relay can do, for comparison (npm run bench, relay section): a bare Node HTTP proxy with keep-alive
// that passes each request body to the upstream and its answer back — no auth, no quota, no cache, no parsing.
import http from 'node:http';

const upstream = new URL(process.env.UPSTREAM ?? 'http://127.0.0.1:1');
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: '/v1/embeddings',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (c: Buffer) => parts.push(c));
        answer.on('end', () => {
          const data = Buffer.concat(parts);
          res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json', 'content-length': data.length });
          res.end(data);
        });
      },
    );
    out.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    out.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
