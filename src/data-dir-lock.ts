// One process at a time on an embedded database: PGlite lives inside its process and takes no lock of its own, so two
// processes opening DATA_DIR/pgdata together (a second npm start, the CLI beside a running server) would corrupt it.
// The lock is a Unix socket the holder listens on: on Linux in the abstract namespace (named after DATA_DIR, gone with
// its process, however it ends), elsewhere a socket file in DATA_DIR (one nobody answers on is a dead holder's).
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export class DataDirLocked extends Error {}

export interface DataDirLock {
  release(): Promise<void>;
}

const listen = (address: string) =>
  new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer((socket) => socket.end());
    server.once('error', reject);
    server.listen(address, () => {
      server.removeListener('error', reject);
      // The lock must not keep the process alive by itself.
      server.unref();
      resolve(server);
    });
  });

const answers = (address: string) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(address);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Takes DATA_DIR's lock, or throws DataDirLocked (its message the one line to show) when another live process holds it. */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  fs.mkdirSync(dataDir, { recursive: true });
  const real = fs.realpathSync(dataDir);
  const linux = process.platform === 'linux';
  const address = linux ? `\0switchyard-data-${crypto.createHash('sha256').update(real).digest('hex').slice(0, 40)}` : path.join(real, 'switchyard.lock');
  const locked = () =>
    new DataDirLocked(
      `another Switchyard process (npm start, or the CLI) is using the embedded database in ${real}: stop it first, or set DATABASE_URL to a Postgres server that both can share`,
    );
  let server: net.Server;
  try {
    server = await listen(address);
  } catch (err) {
    // No socket here (a path too long for one, a file system without them): no lock, as before there was one.
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') return { release: async () => {} };
    if (linux || (await answers(address))) throw locked();
    // A socket file nobody listens on: its process died without removing it.
    fs.rmSync(address, { force: true });
    server = await listen(address).catch(() => {
      throw locked();
    });
  }
  return {
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
