// Sending through the account's SMTP server with nodemailer (password or XOAUTH2), errors as 502/504.
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Platform } from '../platform.js';
import { AppError } from '../errors.js';
import type { Vetted } from '../outbound.js';
import { accessToken } from './oauth.js';
import { mailServerError, mailTarget } from './imap.js';
import { inSpan } from '../telemetry.js';
import type { SendResult } from './schema.js';
import type { MailAccount } from './store.js';

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

/**
 * nodemailer's connection options for a vetted target: connect to the checked address, keep the
 * host name for TLS. Credentials never travel in clear text: without implicit TLS, STARTTLS is
 * required unless the operator allow-listed the server (its name or the address it resolved to).
 */
export function smtpConnectOptions(account: Pick<MailAccount, 'smtp'>, target: Vetted, timeout: number): SMTPTransport.Options {
  return {
    host: target.address,
    servername: target.servername,
    port: account.smtp.port,
    secure: account.smtp.secure,
    requireTLS: !account.smtp.secure && !target.allowListed,
    connectionTimeout: timeout,
    greetingTimeout: Math.min(timeout, 16_000),
    socketTimeout: timeout,
  };
}

/** A peer that did not speak SMTP is named as such; what it sent is neither shown nor stored. */
function smtpError(account: MailAccount, err: unknown): AppError {
  const e = err as { code?: string; command?: string };
  if (e?.code === 'EPROTOCOL' && ['CONN', 'EHLO', 'HELO', 'LHLO'].includes(e.command ?? '')) {
    return new AppError(502, `smtp.host ${account.smtp.host}:${account.smtp.port} is not an SMTP server (it did not greet as one)`, {
      code: 'mail_not_smtp',
      retriable: false,
    });
  }
  return mailServerError(err, 'SMTP server');
}

export function sendMail(p: Platform, account: MailAccount, m: Outgoing): Promise<SendResult> {
  // Traces on: one span (server, account id and the number of recipients; never an address, the subject or the text).
  const attributes = {
    'server.address': account.smtp.host,
    'server.port': account.smtp.port,
    'switchyard.mail.account_id': account.id,
    'switchyard.mail.recipients': m.to.length + m.cc.length + m.bcc.length,
  };
  return inSpan('smtp.send', attributes, () => send(p, account, m));
}

async function send(p: Platform, account: MailAccount, m: Outgoing): Promise<SendResult> {
  const target = await mailTarget(p, 'smtp.host', account.smtp.host);
  const auth =
    account.auth.type === 'password'
      ? { user: account.email, pass: account.auth.password }
      : {
          type: 'OAuth2' as const,
          user: account.email,
          accessToken: await accessToken(p, { id: account.id, clientId: account.auth.client_id, refreshToken: account.auth.refresh_token }),
        };
  const transport = nodemailer.createTransport({ ...smtpConnectOptions(account, target, p.config.MAIL_TIMEOUT_MS), auth });
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
    throw smtpError(account, err);
  } finally {
    transport.close();
  }
}
