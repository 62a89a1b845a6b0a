// extract-code on mail as it really arrives, through a real Dovecot: a Chinese code that comes while the request
// waits, bodies in legacy charsets (GB2312, GBK, Big5, Shift_JIS, ISO-2022-JP, EUC-KR, Windows-1251) with base64,
// quoted-printable and 7bit transfer encodings, multipart/alternative, multipart/related, nested multiparts,
// text-only mail and a code in an encoded subject; and where the answer says it found the code.
import { randomBytes, randomUUID } from 'node:crypto';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractCode, htmlToText } from '../../src/mail/codes.js';
import { buildMessage, startDovecot, type DovecotServer } from '../helpers/dovecot.js';
import { addPasswordAccount } from '../helpers/mail-accounts.js';
import { HttpClient } from '../helpers/http.js';
import { baseline } from '../helpers/pace.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let dovecot: DovecotServer;
let t: TestApp;
let me: HttpClient;

let n = 0;
const address = (label: string) => `${label}-${Date.now()}-${++n}@example.test`;

async function passwordAccount(label: string) {
  return (await addPasswordAccount(me, dovecot, address(label))).email;
}

beforeAll(async () => {
  dovecot = await startDovecot();
  t = await startTestApp({ env: { MAIL_TIMEOUT_MS: '5000' } });
  await t.root.post('/api/user/', { username: 'codes', password: 'codes-password' });
  me = new HttpClient(t.url);
  await me.login('codes', 'codes-password');
});

afterAll(async () => {
  await t?.close();
  await dovecot?.stop();
});

// ---- raw MIME, byte for byte -------------------------------------------------------------------

/** ISO-2022-JP, which iconv-lite cannot encode: JIS X 0208 runs are EUC-JP with the high bit cleared, between ESC $ B and ESC ( B. */
function iso2022jp(s: string): Buffer {
  const out: Buffer[] = [];
  // Runs of ASCII and of everything else (ASCII is U+0000..U+007F: written as the range below U+0080).
  for (const run of s.match(/[^\u0080-\uffff]+|[\u0080-\uffff]+/g) ?? []) {
    if (run.charCodeAt(0) < 0x80) out.push(Buffer.from(run, 'ascii'));
    else {
      const euc = iconv.encode(run, 'euc-jp');
      if (euc.some((b) => b < 0xa1)) throw new Error(`not JIS X 0208: ${run}`);
      out.push(Buffer.from([0x1b, 0x24, 0x42]), Buffer.from(euc.map((b) => b & 0x7f)), Buffer.from([0x1b, 0x28, 0x42]));
    }
  }
  return Buffer.concat(out);
}

function encode(body: string, charset: string): Buffer {
  return charset.toLowerCase() === 'iso-2022-jp' ? iso2022jp(body) : iconv.encode(body, charset);
}

/** Quoted-printable of raw bytes, soft line breaks at 76. */
function qp(bytes: Buffer): string {
  const lines: string[] = [];
  let line = '';
  for (const b of bytes) {
    if (b === 0x0a) {
      lines.push(line);
      line = '';
      continue;
    }
    if (b === 0x0d) continue;
    const piece = (b >= 0x21 && b <= 0x7e && b !== 0x3d) || b === 0x20 ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
    if (line.length + piece.length > 75) {
      lines.push(`${line}=`);
      line = '';
    }
    line += piece;
  }
  lines.push(line);
  return lines.join('\r\n');
}

type Cte = 'base64' | 'quoted-printable' | '7bit';
type Part = { headers: string[]; body: Buffer };

/** A leaf part: the body encoded in `charset`, declared in its Content-Type, then transfer-encoded. */
function leaf(type: 'plain' | 'html', body: string, charset = 'utf-8', cte: Cte = 'base64'): Part {
  const bytes = encode(body, charset);
  let encoded: string;
  if (cte === 'base64') encoded = (bytes.toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');
  else if (cte === 'quoted-printable') encoded = qp(bytes);
  else {
    if (bytes.some((b) => b > 0x7f)) throw new Error('7bit body with 8-bit bytes');
    encoded = bytes.toString('latin1').replace(/\r?\n/g, '\r\n');
  }
  return { headers: [`Content-Type: text/${type}; charset="${charset}"`, `Content-Transfer-Encoding: ${cte}`], body: Buffer.from(encoded, 'latin1') };
}

function multipart(subtype: 'alternative' | 'related' | 'mixed', parts: Part[], extra = ''): Part {
  const boundary = `==switchyard_${randomBytes(6).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) chunks.push(Buffer.from(`--${boundary}\r\n${p.headers.join('\r\n')}\r\n\r\n`, 'latin1'), p.body, Buffer.from('\r\n', 'latin1'));
  chunks.push(Buffer.from(`--${boundary}--\r\n`, 'latin1'));
  return { headers: [`Content-Type: multipart/${subtype}; boundary="${boundary}"${extra}`], body: Buffer.concat(chunks) };
}

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const inlineImage: Part = {
  headers: [
    'Content-Type: image/png; name="logo.png"',
    'Content-Transfer-Encoding: base64',
    'Content-ID: <logo@vendor.example>',
    'Content-Disposition: inline; filename="logo.png"',
  ],
  body: Buffer.from(PNG_1PX, 'latin1'),
};

function message(to: string, subjectHeader: string, root: Part): Buffer {
  const headers = [
    'From: Vendor <no-reply@vendor.example>',
    `To: ${to}`,
    `Subject: ${subjectHeader}`,
    `Date: ${new Date().toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <${randomUUID()}@vendor.example>`,
    'MIME-Version: 1.0',
    ...root.headers,
  ];
  return Buffer.concat([Buffer.from(`${headers.join('\r\n')}\r\n\r\n`, 'latin1'), root.body]);
}

/** An RFC 2047 encoded word in the given charset. */
const encodedWord = (s: string, charset: string) => `=?${charset}?B?${encode(s, charset).toString('base64')}?=`;

// ---- the cases -----------------------------------------------------------------------------------

interface Case {
  name: string;
  /** ASCII, unique: the request's subject filter picks this message out of the mailbox. */
  tag: string;
  subject?: string;
  root: Part;
  code: string;
  source: 'subject' | 'text' | 'html';
  keyword: string;
}

const CASES: Case[] = [
  {
    name: 'GB2312 HTML, base64, a validity phrase with its own number after the code',
    tag: 'cs-gb2312',
    root: leaf('html', '<p>您的验证码是 <b>7351</b>，5分钟内有效。请勿泄露给他人。</p>', 'gb2312', 'base64'),
    code: '7351',
    source: 'html',
    keyword: '验证码',
  },
  {
    name: 'GBK text, quoted-printable',
    tag: 'cs-gbk',
    root: leaf('plain', '【鍠店】校验码 482617，用于身份验证，10分钟内有效。', 'gbk', 'quoted-printable'),
    code: '482617',
    source: 'text',
    keyword: '校验码',
  },
  {
    name: 'Big5 HTML, base64',
    tag: 'cs-big5',
    root: leaf('html', '<div>您的驗證碼為：<strong>305918</strong></div><div>請於10分鐘內輸入。</div>', 'big5', 'base64'),
    code: '305918',
    source: 'html',
    keyword: '驗證碼',
  },
  {
    name: 'Shift_JIS text, base64',
    tag: 'cs-sjis',
    root: leaf('plain', 'ご本人確認のため、以下の認証コードを入力してください。\n認証コード：639204\n有効期限は30分です。', 'shift_jis', 'base64'),
    code: '639204',
    source: 'text',
    keyword: '認証コード',
  },
  {
    name: 'ISO-2022-JP text, 7bit',
    tag: 'cs-iso2022jp',
    root: leaf('plain', 'ワンタイムパスワードをお送りします。\nワンタイムパスワード：817263\n有効期限は10分です。', 'iso-2022-jp', '7bit'),
    code: '817263',
    source: 'text',
    keyword: 'ワンタイムパスワード',
  },
  {
    name: 'EUC-KR HTML, quoted-printable',
    tag: 'cs-euckr',
    root: leaf('html', '<p>인증번호 [<b>572940</b>]를 입력해 주세요. 유효시간은 3분입니다.</p>', 'euc-kr', 'quoted-printable'),
    code: '572940',
    source: 'html',
    keyword: '인증번호',
  },
  {
    name: 'Windows-1251 text, quoted-printable',
    tag: 'cs-cp1251',
    root: leaf('plain', 'Здравствуйте!\nВаш код подтверждения: 264815\nНикому не сообщайте его.', 'windows-1251', 'quoted-printable'),
    code: '264815',
    source: 'text',
    keyword: 'код подтверждения',
  },
  {
    name: 'multipart/alternative, GBK text and HTML',
    tag: 'mp-alternative',
    root: multipart('alternative', [
      leaf('plain', '您的动态码：914306，请在5分钟内完成验证。', 'gbk', 'quoted-printable'),
      leaf('html', '<table><tr><td>您的动态码：</td><td style="color:#1a73e8">914306</td></tr></table><p>请在5分钟内完成验证。</p>', 'gbk', 'base64'),
    ]),
    code: '914306',
    source: 'text',
    keyword: '动态码',
  },
  {
    name: 'multipart/related, HTML with an inline image, one digit per cell',
    tag: 'mp-related',
    root: multipart(
      'related',
      [
        leaf(
          'html',
          '<img src="cid:logo@vendor.example" alt=""><p>Your verification code</p><table><tr><td>9</td><td>0</td><td>8</td><td>1</td><td>7</td><td>2</td></tr></table>',
        ),
        inlineImage,
      ],
      '; type="text/html"',
    ),
    code: '908172',
    source: 'html',
    keyword: 'verification code',
  },
  {
    name: 'multipart/mixed > related > alternative (Outlook-style), Shift_JIS HTML, and an attachment',
    tag: 'mp-nested',
    root: multipart('mixed', [
      multipart(
        'related',
        [
          multipart('alternative', [
            leaf('plain', 'ご利用ありがとうございます。', 'shift_jis', 'base64'),
            leaf('html', '<p>確認コード</p><p style="font-size:24px;letter-spacing:4px"><b>4 0 7 7 1 3</b></p>', 'shift_jis', 'quoted-printable'),
          ]),
          inlineImage,
        ],
        '; type="multipart/alternative"',
      ),
      {
        headers: ['Content-Type: text/csv; name="terms.csv"', 'Content-Transfer-Encoding: base64', 'Content-Disposition: attachment; filename="terms.csv"'],
        body: Buffer.from(Buffer.from('id,order\n1,555123\n').toString('base64'), 'latin1'),
      },
    ]),
    code: '407713',
    source: 'html',
    keyword: '確認コード',
  },
  {
    name: 'text-only, us-ascii, 7bit',
    tag: 'text-only',
    root: leaf('plain', 'Hi,\nYour one-time passcode is 550193.\nIt expires in 10 minutes.', 'us-ascii', '7bit'),
    code: '550193',
    source: 'text',
    keyword: 'one-time passcode',
  },
  {
    name: 'the code in a GB2312 encoded-word subject, nothing in the body',
    tag: 'subject-only',
    subject: '您的验证码 660271',
    root: leaf('plain', '感谢您的使用。', 'gb2312', 'base64'),
    code: '660271',
    source: 'subject',
    keyword: '验证码',
  },
];

describe('extract-code through Dovecot: charsets and structures', () => {
  let email: string;
  beforeAll(async () => {
    email = await passwordAccount('charsets');
    for (const c of CASES) {
      const subject = c.subject ? `${encodedWord(c.subject, 'gb2312')} [${c.tag}]` : `Notice [${c.tag}]`;
      await dovecot.deliver(email, 'INBOX', message(email, subject, c.root));
    }
  });

  it.each(CASES)('$name → $code from $source', async (c) => {
    const res = await me.post('/api/vendor-email/extract-code', { email, subject: `[${c.tag}]` });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ email, code: c.code, source: c.source, keyword: c.keyword, message: { mailbox: 'INBOX' } });
    expect(res.body.message.subject).toContain(`[${c.tag}]`);
  });
});

describe('extract-code with wait', () => {
  it('returns a Chinese code (HTML) that arrives 3 s after the call, soon after its arrival (500 ms of Dovecot plus 500 ms or 4 × a whole call)', async () => {
    const email = await passwordAccount('zh-wait');
    // A whole call (no code there yet) in this run: what the answer after the arrival may take grows with load.
    const whole = await baseline(() => me.post('/api/vendor-email/extract-code', { email }), 3);
    const called = Date.now();
    const pending = me.post('/api/vendor-email/extract-code', { email, wait: 20 });
    await new Promise((r) => setTimeout(r, 3_000));
    await dovecot.deliver(
      email,
      'INBOX',
      buildMessage({ from: 'Vendor <no-reply@vendor.example>', to: email, subject: '验证码通知', html: '您的验证码是 <b>7351</b>，5分钟内有效。' }),
    );
    const delivered = Date.now();
    const res = await pending;
    const answered = Date.now();
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ email, code: '7351', source: 'html', keyword: '验证码', message: { mailbox: 'INBOX', subject: '验证码通知' } });
    expect(delivered - called).toBeGreaterThanOrEqual(3_000);
    // Dovecot holds IDLE notifications back 500 ms; a 2 s rescan instead of IDLE would answer up to 2 s after.
    const bound = 500 + Math.max(500, 4 * whole);
    expect(answered - delivered, `answered ${answered - delivered} ms after delivery; bound ${bound.toFixed(0)} ms`).toBeLessThanOrEqual(bound);
  });
});

describe('where the code was found', () => {
  it('extractCode says subject, text or html, and the keyword as printed', () => {
    expect(extractCode({ subject: 'Your Login Code: 482913' })).toMatchObject({ code: '482913', source: 'subject', keyword: 'Login Code' });
    expect(extractCode({ subject: 'Hello', text: 'Ihr Bestätigungscode lautet 739104.' })).toMatchObject({
      code: '739104',
      source: 'text',
      keyword: 'Bestätigungscode',
    });
    expect(extractCode({ subject: 'Hello', html: '<p>您的验证码是 <b>7351</b>，5分钟内有效。</p>' })).toMatchObject({
      code: '7351',
      source: 'html',
      keyword: '验证码',
    });
    // Full-width digits are normalised, but the keyword is still the one printed.
    expect(extractCode({ text: '認証番号：１２３４５６' })).toMatchObject({ code: '123456', source: 'text', keyword: '認証番号' });
  });

  it('decodes HTML5 entities outside the fast table (through he), so a colon written &colon; still labels the code', () => {
    expect(htmlToText('<p>Code&colon;&nbsp;482913 &check; &Ocirc;&hearts;&NotEqual;</p>')).toBe('Code: 482913 ✓ Ô♥≠');
    expect(extractCode({ html: '<p>Security code&colon; <b>7302</b> &mdash; 2 Z&auml;hler</p>' })).toMatchObject({ code: '7302', keyword: 'Security code' });
  });

  it('keeps msOauth2api’s answer as it was, with source and keyword beside it', async () => {
    const email = await passwordAccount('fields');
    await dovecot.deliver(
      email,
      'INBOX',
      buildMessage({ from: 'Vendor <no-reply@vendor.example>', to: email, subject: 'Sign in', text: 'Your OTP is 204816.' }),
    );
    const res = await me.post('/api/vendor-email/extract-code', { email });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['code', 'email', 'keyword', 'message', 'source']);
    expect(Object.keys(res.body.message).sort()).toEqual(['date', 'from', 'id', 'mailbox', 'subject']);
    expect(res.body).toMatchObject({ email, code: '204816', source: 'text', keyword: 'OTP' });
  });

  it('/openapi.json documents source and keyword in the extract-code answer', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    const ok = doc.paths['/api/vendor-email/extract-code'].post.responses['200'].content['application/json'].schema;
    expect(ok.properties.source).toMatchObject({ enum: ['subject', 'text', 'html'] });
    expect(ok.properties.keyword).toMatchObject({ type: 'string' });
    expect(ok.required).toEqual(expect.arrayContaining(['email', 'code', 'message', 'source', 'keyword']));
  });
});
