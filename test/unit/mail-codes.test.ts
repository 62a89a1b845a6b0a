// Verification-code extractor: precision/recall over the hand-written corpus, plus focused rules from the spec.
import { describe, expect, it } from 'vitest';
import { extractCode, htmlToText } from '../../src/mail/codes.js';
import { corpus } from '../fixtures/code-corpus.js';

describe('extractCode over the corpus', () => {
  it('is a corpus worth measuring', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(40);
    expect(corpus.filter((m) => m.expected === null).length).toBeGreaterThanOrEqual(12);
    expect(new Set(corpus.map((m) => m.name)).size).toBe(corpus.length);
  });

  it('reaches precision >= 0.95 and recall >= 0.9', () => {
    let returned = 0;
    let returnedRight = 0;
    let withCode = 0;
    let found = 0;
    const failures: string[] = [];
    for (const m of corpus) {
      const got = extractCode({ subject: m.subject, text: m.text, html: m.html })?.code ?? null;
      if (got !== null) returned++;
      if (got !== null && got === m.expected) returnedRight++;
      if (m.expected !== null) {
        withCode++;
        if (got === m.expected) found++;
      }
      if (got !== m.expected) failures.push(`${m.name}: expected ${m.expected ?? 'null'}, got ${got ?? 'null'}`);
    }
    const precision = returned ? returnedRight / returned : 1;
    const recall = withCode ? found / withCode : 1;
    console.log(
      `code extractor: precision ${precision.toFixed(3)} (${returnedRight}/${returned}), recall ${recall.toFixed(3)} (${found}/${withCode}), ${corpus.length} messages`,
    );
    const report = failures.length ? `\n  ${failures.join('\n  ')}` : '';
    expect(precision, `precision ${precision.toFixed(3)}${report}`).toBeGreaterThanOrEqual(0.95);
    expect(recall, `recall ${recall.toFixed(3)}${report}`).toBeGreaterThanOrEqual(0.9);
  });

  it('gives a score between 0 and 1', () => {
    for (const m of corpus) {
      const got = extractCode({ subject: m.subject, text: m.text, html: m.html });
      if (got) {
        expect(got.score).toBeGreaterThan(0);
        expect(got.score).toBeLessThanOrEqual(1);
      }
    }
  });

  // Speed belongs to the benchmark, not a timed test: this checks a big mail full of decoys still works.
  it('finds the code at the end of a 100 KB HTML email full of decoys', () => {
    const filler =
      '<tr><td style="color:#333333;font-size:14px">Lorem ipsum dolor sit amet, order 2026-11-22 at 10:41, call (415) 555-0199 &middot; &copy; 2026</td></tr>\n';
    const html = `<html><head><style>.x{color:#202123}</style></head><body><table>${filler.repeat(Math.ceil(100_000 / filler.length))}<tr><td>Your verification code is <b>902614</b></td></tr></table></body></html>`;
    expect(html.length).toBeGreaterThan(100_000);
    const got = extractCode({ subject: 'Your code', html });
    expect(got?.code).toBe('902614');
  });
});

describe('htmlToText', () => {
  it('drops <style>, <head>, comments and inline colours', () => {
    const text = htmlToText(`<html><head><title>x</title><style>.code{color:#202123;font-size:32px}</style></head>
<body style="background:#f4f4f4"><!-- tracking 4455667788 --><div style="color:#202123;background:#f4f4f4">Your code</div><p>482913</p></body></html>`);
    expect(text).toBe('Your code\n482913');
    expect(text).not.toMatch(/#|202123|f4f4f4|color|font-size/);
  });

  it('decodes named and numeric entities and keeps image alt text', () => {
    const text = htmlToText(
      '<p>C&oacute;digo&nbsp;&#58; &#x34;&#56;2913 &copy; &amp;</p><img src="h.png" alt="Verification code"><br><span>7</span><span>7</span>',
    );
    expect(text).toBe('Código : 482913 © &\nVerification code\n77');
  });

  it('removes zero-width preheader padding and collapses whitespace', () => {
    expect(htmlToText('<div>Hello&zwnj;&nbsp;&#847;   world\n\n</div><div>\n</div><p>bye</p>')).toBe('Hello world\nbye');
  });
});

describe('extractCode rules', () => {
  it('never returns a hex colour sitting next to "code"', () => {
    expect(extractCode({ text: 'code { color: #202123 }' })).toBeNull();
    expect(extractCode({ text: '.code{color:#202123;background:#f4f4f4}' })).toBeNull();
    expect(extractCode({ text: 'Your code: #202123' })).toBeNull();
    expect(extractCode({ html: '<div style="color:#202123">Your verification code is</div><div style="color:#202123">551093</div>' })?.code).toBe('551093');
  });

  it('does not return dates, times or phone numbers near a keyword', () => {
    for (const text of [
      'Your verification code was requested on 2026-11-22.',
      'Your verification code was requested on 22/11/2026.',
      'Your verification code was requested on 11.22.2026.',
      'Your verification code was requested on 20261122.',
      '验证码已于2026年11月22日发送',
      'Your code expires at 12:34.',
      'Your code expires at 09:41:07 UTC.',
      'Your code expires at 1234 pm.',
      'Questions about your code? Call +1 415 555 0199.',
      'Questions about your code? Call (415) 555-0199.',
      '验证码问题请致电 400-820-1234',
      '验证码问题请致电 138 0013 8000',
      'Your code was sent to 4155550199',
      'Verification code policy © 2024 Acme',
      'Verify your order: $49.99 total, 1,299 points, 25% off, app v2.4.1',
      'Confirm the sign-in from 203.0.113.42',
      'Verify: https://example.com/verify?code=482913 or write to code482913@example.com',
      'Order #12345678 confirmation',
    ]) {
      expect(extractCode({ text }), text).toBeNull();
    }
  });

  it('joins a code written as 123 456 or 123-456', () => {
    expect(extractCode({ text: 'Your verification code is 123 456' })?.code).toBe('123456');
    expect(extractCode({ text: 'Your verification code is 123-456' })?.code).toBe('123456');
  });

  it('returns null when no keyword is present', () => {
    expect(extractCode({ subject: 'Lunch?', text: 'Meet at table 482913 tomorrow.' })).toBeNull();
    expect(extractCode({ text: '482913' })).toBeNull();
    expect(extractCode({})).toBeNull();
  });

  it('accepts a 4-digit code but not a year', () => {
    expect(extractCode({ text: 'Your PIN is 4821. © 2026 Acme' })?.code).toBe('4821');
    expect(extractCode({ text: 'Verification code service since 2019' })).toBeNull();
  });

  it('prefers the labelled code and finds codes in the subject', () => {
    expect(extractCode({ subject: '739104 is your login code' })?.code).toBe('739104');
    expect(extractCode({ text: 'Verification code: 418207\nReference number: 993104' })?.code).toBe('418207');
    expect(extractCode({ text: 'Your security code is: A7K9Q2' })?.code).toBe('A7K9Q2');
  });
});
