// An IMAP server that greets and then never answers: a mail job against it holds its mailbox (and its per-user slot)
// until cancelled or timed out. Counts the connections it was given.
import net from 'node:net';

export async function slowImap() {
  const sockets: { closed: boolean }[] = [];
  const server = net.createServer((s) => {
    const entry = { closed: false };
    sockets.push(entry);
    s.write('* OK IMAP4rev1 slow server ready\r\n');
    s.on('error', () => {});
    s.on('close', () => {
      entry.closed = true;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, sockets, close: () => server.close() };
}
