// A Dovecot user and the stored password account for it: what most mail tests start from.
import { expect } from 'vitest';
import type { DovecotServer } from './dovecot.js';
import type { HttpClient } from './http.js';

export async function addPasswordAccount(
  client: HttpClient,
  dovecot: DovecotServer,
  email: string,
  smtp?: { host: string; port: number },
): Promise<{ email: string; id: number }> {
  await dovecot.addUser(email, 'imap-password');
  const res = await client.post('/api/mail/accounts', {
    email,
    auth: { type: 'password', password: 'imap-password' },
    imap: { host: dovecot.host, port: dovecot.port, secure: false },
    ...(smtp ? { smtp: { host: smtp.host, port: smtp.port, secure: false } } : {}),
  });
  expect(res.status, res.text).toBe(201);
  return { email, id: res.body.id as number };
}
