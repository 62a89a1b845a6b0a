// LOG_FORMAT: JSON lines to a pipe by default, pretty lines (request and job ids in front) with LOG_FORMAT=pretty or on
// a terminal, JSON on a terminal with LOG_FORMAT=json. The real server, as a child process.
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { createTestEnv, ROOT_PASSWORD, type TestEnv } from '../helpers/services.js';
import { ROOT_DIR, spawnEntry } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

let t: TestEnv;
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await t?.cleanup();
});

const LISTENING = /Switchyard listening on (http:\/\/127\.0\.0\.1:\d+)/;

describe('log lines', () => {
  it('with LOG_FORMAT=pretty: one line per event, time and level first, then the request id and the job id ahead of the message', async () => {
    t = await createTestEnv();
    const s = spawnEntry('server', [], { ...t.env, LOG_FORMAT: 'pretty', LOG_LEVEL: 'debug' });
    cleanups.push(() => s.stop('SIGKILL'));
    const url = LISTENING.exec(await s.waitFor(LISTENING))![1]!;
    const root = new HttpClient(url);
    await root.login('root', ROOT_PASSWORD);
    const ping = await root.post('/api/jobs/ping?queue=content', undefined, { 'x-request-id': 'pretty-req-1' });
    expect(ping.status, ping.text).toBe(200);
    // The API's access line, and the worker's line about the job the request made, both name the request.
    const access = await s.waitFor(/req pretty-req-1 request/);
    expect(access).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(switchyard\): req pretty-req-1 request$/);
    const job = await s.waitFor(/job content-\S+ job completed/);
    expect(job).toMatch(/^\[[\d:.]+\] DEBUG \(switchyard\): req pretty-req-1 job content-[0-9a-f-]+ job completed$/);
    // The other fields follow, indented, one a line; nothing is a JSON line.
    expect(s.output()).toMatch(/req pretty-req-1 request\n(\s{4}\w+: .+\n)*\s{4}path: "\/api\/jobs\/ping"/);
    expect(s.output()).not.toMatch(/^\{"level"/m);
    expect((await s.stop()).code).toBe(0);
  }, 60_000);

  it('by default, to a pipe: every line is a JSON object, with the request id as reqId', async () => {
    const s = spawnEntry('server', [], { ...t.env, LOG_FORMAT: undefined, LOG_LEVEL: 'info' });
    cleanups.push(() => s.stop('SIGKILL'));
    const url = JSON.parse(await s.waitFor(/Switchyard listening/)).msg.match(LISTENING)[1];
    await fetch(`${url}/healthz`, { headers: { 'x-request-id': 'json-req-1' } });
    const line = await s.waitFor(/json-req-1/);
    expect(JSON.parse(line)).toMatchObject({ reqId: 'json-req-1', msg: 'request', path: '/healthz', level: 30 });
    expect((await s.stop()).code).toBe(0);
    const lines = s.output().split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(2);
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
  }, 60_000);

  it('on a terminal: pretty unless LOG_FORMAT=json says JSON', async () => {
    // script(1) runs the server on a pseudo-terminal: its stdout is a TTY, as under `npm start` in a shell.
    const onTerminal = async (format: string | undefined) => {
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries({ ...process.env, ...t.env, LOG_LEVEL: 'info' })) if (v !== undefined) env[k] = v;
      delete env.LOG_FORMAT;
      if (format) env.LOG_FORMAT = format;
      const child = spawn('script', ['-qfec', `exec ${process.execPath} --import tsx src/server.ts`, '/dev/null'], {
        cwd: ROOT_DIR,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      });
      const exited = new Promise((r) => child.once('exit', r));
      const stop = () => {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          /* gone */
        }
        return exited;
      };
      cleanups.push(stop);
      await until(
        'the listening line',
        async () => out,
        (o) => /Switchyard listening/.test(o),
      );
      await stop();
      return out.split(/\r?\n/).find((l) => l.includes('Switchyard listening'))!;
    };
    expect(await onTerminal(undefined)).toMatch(/INFO.*\(switchyard\).*: .*Switchyard listening on http/);
    expect(JSON.parse(await onTerminal('json'))).toMatchObject({ level: 30, name: 'switchyard' });
  }, 90_000);
});
