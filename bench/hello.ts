// The baseline: a Koa hello-world JSON route, alone in its own process.
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  ctx.body = { hello: 'world' };
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${JSON.stringify({ listening: typeof a === 'object' && a ? a.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
