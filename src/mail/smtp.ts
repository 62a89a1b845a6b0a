// Sending through the account's SMTP server with nodemailer (password or XOAUTH2), errors as 502/504.
import nodemailer from 'nodemailer';
import type { Platform } from '../platform.js';
import { accessToken } from './oauth.js';
import { mailServerError } from './imap.js';
import type { SendResult } from './schema.js';
import type { MailAccount } from './store.js';

const LOOPBACK = /^(127\.|localhost$|::1$|\[::1\]$)/;

export interface Outgoing {
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  text?: string;
  html?: string;
  /** Fixed per job, so a re-sent message after a crash is recognisably the same one. */
  messageId: string;
}

export async function sendMail(p: Platform, account: MailAccount, m: Outgoing): Promise<SendResult> {
  const auth =
    account.auth.type === 'password'
      ? { user: account.email, pass: account.auth.password }
      : {
          type: 'OAuth2' as const,
          user: account.email,
          accessToken: await accessToken(p, { id: account.id, clientId: account.auth.client_id, refreshToken: account.auth.refresh_token }),
        };
  const timeout = p.config.MAIL_TIMEOUT_MS;
  const transport = nodemailer.createTransport({
    host: account.smtp.host,
    port: account.smtp.port,
    secure: account.smtp.secure,
    // Credentials never travel in clear text to a remote server: without implicit TLS, STARTTLS is required.
    requireTLS: !account.smtp.secure && !LOOPBACK.test(account.smtp.host),
    auth,
    connectionTimeout: timeout,
    greetingTimeout: Math.min(timeout, 16_000),
    socketTimeout: timeout,
  });
  try {
    const info = await transport.sendMail({
      from: account.email,
      to: m.to,
      cc: m.cc,
      bcc: m.bcc,
      subject: m.subject,
      text: m.text,
      html: m.html,
      messageId: m.messageId,
    });
    const asText = (list: unknown[]) => list.map((a) => (typeof a === 'string' ? a : (a as { address: string }).address));
    return { messageId: info.messageId, accepted: asText(info.accepted), rejected: asText(info.rejected) };
  } catch (err) {
    throw mailServerError(err, 'SMTP server');
  } finally {
    transport.close();
  }
}
