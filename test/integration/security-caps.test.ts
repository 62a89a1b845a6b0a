// Per-user caps (issue 22): how many mail accounts one user keeps, and how many job event streams one user holds open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { item } from '../shared/content-suite.js';

const MAIL_ACCOUNTS_PER_USER = 5;
const JOB_EVENT_STREAMS_PER_USER = 3;
let t: TestApp;

async function user(username: string): Promise<HttpClient> {
  const res = await t.root.post('/api/user/', { username, password: `${username}-password` });
  expect(res.status, res.text).toBe(201);
  const c = new HttpClient(t.url);
  await c.login(username, `${username}-password`);
  return c;
}

beforeAll(async () => {
  // No workers: jobs stay waiting, so their event streams stay open.
  t = await startTestApp({
    workers: false,
    env: { MAIL_ACCOUNTS_PER_USER: String(MAIL_ACCOUNTS_PER_USER), JOB_EVENT_STREAMS_PER_USER: String(JOB_EVENT_STREAMS_PER_USER) },
  });
});
afterAll(async () => {
  await t?.close();
});

describe(`mail accounts per user (MAIL_ACCOUNTS_PER_USER=${MAIL_ACCOUNTS_PER_USER} here)`, () => {
  const line = (email: string) => `${email}----mail-password`;
  const body = (email: string) => ({
    email,
    auth: { type: 'password', password: 'p' },
    imap: { host: 'imap.example.com' },
    smtp: { host: 'smtp.example.com' },
  });
  const importLines = (c: HttpClient, emails: string[]) =>
    c.post('/api/mail/accounts/import', { lines: emails.map(line), imap: { host: 'imap.example.com' }, smtp: { host: 'smtp.example.com' } });
  const countOf = async (username: string) => {
    const owner = t.platform.db('users').where({ username }).select('id');
    return Number((await t.platform.db('mail_accounts').whereIn('owner_id', owner).count({ n: '*' }))[0]!.n);
  };

  it('an import past the cap is refused whole with a 429 that says why; one that fits is taken; other users are unaffected', async () => {
    const hoarder = await user('hoarder');
    const emails = Array.from({ length: MAIL_ACCOUNTS_PER_USER + 3 }, (_, i) => `box${i}@example.com`);
    const refused = await importLines(hoarder, emails);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.error).toMatch(/Mail account limit reached: you have 0 and this would add 8, past the 5 one user may keep.*nothing was saved/);
    expect(await countOf('hoarder')).toBe(0);

    expect((await importLines(hoarder, emails.slice(0, MAIL_ACCOUNTS_PER_USER))).body.imported).toBe(MAIL_ACCOUNTS_PER_USER);
    // At the cap: one more is refused, by any way of adding one.
    const one = await hoarder.post('/api/mail/accounts', body('one-more@example.com'));
    expect(one.status).toBe(429);
    expect(one.body.error).toMatch(/you have 5 and this would add 1/);
    const inline = await hoarder.post('/api/mail-new', {
      email: 'inline@example.com',
      client_id: '9e5f94bc-e8a4-4e73-b8be-63364c29d753',
      refresh_token: 'r'.repeat(40),
    });
    expect(inline.status, inline.text).toBe(429);
    expect(await countOf('hoarder')).toBe(MAIL_ACCOUNTS_PER_USER);
    // Replacing an account it has adds nothing, and is still allowed.
    expect((await hoarder.post('/api/mail/accounts', body('box0@example.com'))).status).toBe(200);
    expect((await importLines(hoarder, ['box1@example.com', 'box2@example.com'])).status).toBe(200);

    const neighbour = await user('neighbour');
    expect((await neighbour.post('/api/mail/accounts', body('neighbour@example.com'))).status).toBe(201);
    expect((await importLines(neighbour, ['n1@example.com', 'n2@example.com'])).body.imported).toBe(2);
  });

  it('concurrent imports do not overshoot the cap together: of eight imports that each fill it, one is taken', async () => {
    const racer = await user('racer');
    const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: MAIL_ACCOUNTS_PER_USER }, (_, i) => `race-${b}-${i}@example.com`));
    const answers = await Promise.all(batches.map((emails) => importLines(racer, emails)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(7);
    expect(await countOf('racer')).toBe(MAIL_ACCOUNTS_PER_USER);
  });
});

describe(`job event streams per user (JOB_EVENT_STREAMS_PER_USER=${JOB_EVENT_STREAMS_PER_USER} here)`, () => {
  const cookie = (c: HttpClient) => [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  /** A job of the client's that stays waiting (no workers here). */
  const waitingJob = async (c: HttpClient) => {
    const res = await c.post('/api/content/batch', [item()], { prefer: 'respond-async' });
    expect(res.status, res.text).toBe(202);
    return res.body.jobId as string;
  };
  /** Opens a job's event stream and reads its first event; the stream stays open until `close`. */
  const open = async (c: HttpClient, jobId: string) => {
    const abort = new AbortController();
    const res = await fetch(`${t.url}/api/jobs/${jobId}/events`, { headers: { cookie: cookie(c) }, signal: abort.signal });
    if (res.status === 200) await res.body!.getReader().read();
    const close = () => abort.abort();
    return { status: res.status, body: (res.status === 200 ? undefined : await res.json()) as { error: string } | undefined, close };
  };

  it('one user past the cap gets 429 with the reason; another user still opens streams; closing one makes room', async () => {
    const follower = await user('follower');
    const job = await waitingJob(follower);
    const held = [];
    for (let i = 0; i < JOB_EVENT_STREAMS_PER_USER; i++) {
      const s = await open(follower, job);
      expect(s.status, `stream ${i}`).toBe(200);
      held.push(s);
    }
    const refused = await open(follower, job);
    expect(refused.status).toBe(429);
    expect(refused.body?.error).toMatch(/already have 3 job event streams open.*JOB_EVENT_STREAMS_PER_USER/);

    const other = await user('other-follower');
    const theirs = await open(other, await waitingJob(other));
    expect(theirs.status).toBe(200);
    theirs.close();

    held.pop()!.close();
    let again = await open(follower, job);
    for (let i = 0; again.status === 429 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20));
      again = await open(follower, job);
    }
    expect(again.status).toBe(200);
    again.close();
    for (const s of held) s.close();
  });
});
