// response_type=html: a readable page of messages; the mails' own HTML is shown sandboxed, never run.
import type { MailMessage } from './schema.js';

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESC[c]!);

/** Blocks scripts, remote loads and forms in the page and in the sandboxed frames it contains. */
export const MAIL_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-src 'self'; base-uri 'none'; form-action 'none'";

function messageBlock(m: MailMessage): string {
  const from = m.from ? `${m.from.name ? `${m.from.name} ` : ''}<${m.from.address}>` : '';
  const body =
    m.html !== null ? `<iframe sandbox srcdoc="${escapeHtml(m.html)}" title="message body"></iframe>` : `<pre>${escapeHtml(m.text ?? m.snippet ?? '')}</pre>`;
  return `<article>
<h2>${escapeHtml(m.subject || '(no subject)')}</h2>
<dl><dt>From</dt><dd>${escapeHtml(from)}</dd><dt>To</dt><dd>${escapeHtml(m.to.map((a) => a.address).join(', '))}</dd><dt>Date</dt><dd>${escapeHtml(m.date ?? '')}</dd><dt>Folder</dt><dd>${escapeHtml(m.mailbox)}</dd></dl>
${body}
</article>`;
}

export function renderMessagesPage(email: string, mailbox: string, messages: MailMessage[]): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`${email} — ${mailbox}`)}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
article{border:1px solid #ddd;border-radius:8px;padding:1rem 1.25rem;margin:1rem 0}
h1{font-size:1.3rem}h2{font-size:1.1rem;margin:0 0 .5rem}
dl{display:grid;grid-template-columns:5rem 1fr;margin:0 0 .75rem;font-size:.9rem;color:#555}dt{font-weight:600}dd{margin:0}
iframe{width:100%;min-height:24rem;border:1px solid #eee;border-radius:4px}pre{white-space:pre-wrap;margin:0}
</style></head><body>
<h1>${escapeHtml(email)} — ${escapeHtml(mailbox)} (${messages.length} message${messages.length === 1 ? '' : 's'})</h1>
${messages.length ? messages.map(messageBlock).join('\n') : '<p>No messages.</p>'}
</body></html>`;
}
