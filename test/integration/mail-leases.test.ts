// The mail leases renewed while held (docs/mail.md): a mail job's mailbox lock and its per-user slot outlive their
// lease (JOB_LOCK_MS) for as long as the job runs. Mail jobs here hang on an IMAP server that never answers, held
// past 2.5 leases; a job that needs the same mailbox, or a slot the user has not got, must still wait.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { slowImap } from '../helpers/slow-imap.js';
import { until } from '../helpers/until.js';

const LEASE_MS = 3_000;
let t: TestApp;
let erin: HttpClient;
const servers: Awaited<ReturnType<typeof slowImap>>[] = [];

beforeAll(async () => {
  // Two mail jobs of one user at once; leases of 3 s (renewed every second).
  t = await startTestApp({ env: { JOB_LOCK_MS: String(LEASE_MS), MAIL_USER_CONCURRENCY: '2', MAIL_TIMEOUT_MS: '120000', SYNC_WAIT_MS: '300' } });
  await t.root.post('/api/user/', { username: 'erin', password: 'erin-password' });
  erin = new HttpClient(t.url);
  await erin.login('erin', 'erin-password');
}, 60_000);
afterAll(async () => {
  await t?.close();
  for (const s of servers) s.close();
});

async function account(email: string) {
  const imap = await slowImap();
  servers.push(imap);
  const add = await erin.post('/api/mail/accounts', {
    email,
    auth: { type: 'password', password: 'x' },
    imap: { host: '127.0.0.1', port: imap.port, secure: false },
  });
  expect(add.status, add.text).toBe(201);
  return imap;
}
const fetchNew = async (email: string) => (await erin.post('/api/mail-new', { email }, { prefer: 'respond-async' })).body.jobId as string;
const stateOf = async (id: string) => (await erin.get(`/api/jobs/${id}`)).body.state as string;
const open = (imap: { sockets: { closed: boolean }[] }) => imap.sockets.filter((s) => !s.closed).length;

describe(`mail leases (JOB_LOCK_MS ${LEASE_MS})`, () => {
  it('a running mail job keeps its mailbox lock and its user slot past 2.5 leases: a second job on the mailbox opens no session, a third gets no slot', async () => {
    const first = await account('first@example.test');
    const second = await account('second@example.test');
    const holder = await fetchNew('first@example.test');
    await until(
      'the first fetch to hold its mailbox',
      async () => ((await stateOf(holder)) === 'active' ? open(first) : 0),
      (n) => n === 1,
    );

    await new Promise((r) => setTimeout(r, 2.5 * LEASE_MS));

    // The same mailbox: it takes erin's second slot, then waits for the lock the holder still renews.
    const sameMailbox = await fetchNew('first@example.test');
    await until(
      'the second fetch to run',
      () => stateOf(sameMailbox),
      (s) => s === 'active',
    );
    // Another mailbox: erin's two slots are taken (the holder's, renewed past its lease, and the waiter's).
    const noSlot = await fetchNew('second@example.test');
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 250));
      expect(open(first), 'sessions on the held mailbox').toBe(1);
      expect(second.sockets, 'sessions on the mailbox with no slot free').toHaveLength(0);
    }
    // (The third job looks in now and then, and goes back to wait: it may read 'active' for a moment; its sessions tell.)
    // The slots as Redis holds them: the holder's and the waiter's, each leased into the future.
    const erinId = (await erin.get('/api/user/self')).body.data.id as number;
    const slots = await t.platform.redis.zrange(t.platform.keys.of('owner-slots', `mail:${erinId}`), '0', '-1', 'WITHSCORES');
    const now = Date.now();
    expect(slots.filter((_, i) => i % 2 === 0).sort()).toEqual([holder, sameMailbox].sort());
    for (let i = 1; i < slots.length; i += 2) expect(Number(slots[i])).toBeGreaterThan(now);
    expect(await stateOf(holder)).toBe('active');
    for (const id of [noSlot, sameMailbox, holder]) await erin.delete(`/api/jobs/${id}`);
  }, 60_000);
});
