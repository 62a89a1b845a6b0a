// A private Postgres cluster on a free port, for tests that stop and restart the database.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './redis-server.js';

const BIN = fs.existsSync('/usr/lib/postgresql') ? path.join('/usr/lib/postgresql', fs.readdirSync('/usr/lib/postgresql').sort().at(-1)!, 'bin') : '';

/** Postgres refuses to run as root: the cluster belongs to the postgres user when we are root. */
function asPostgres(cmd: string, args: string[]) {
  const run = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path.join(BIN, cmd), ...args]] : [path.join(BIN, cmd), args];
  execFileSync(run[0] as string, run[1] as string[], { stdio: 'ignore' });
}

export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PrivatePostgres> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-pg-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
    asPostgres('initdb', ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
    const pg = new PrivatePostgres(dir, await freePort());
    await pg.start();
    return pg;
  }

  async start(): Promise<void> {
    asPostgres('pg_ctl', [
      '-D',
      path.join(this.dir, 'data'),
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      path.join(this.dir, 'log'),
      '-w',
      'start',
    ]);
  }

  /** Stops at once, as a crash would (no checkpoint, connections cut). */
  async stop(): Promise<void> {
    asPostgres('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.stop().catch(() => {});
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
