// Verification-code extractor: no failure on the hand-written regression corpus (the figures docs/mail.md states), plus focused rules.
// (The corpus's own size and shape are checked in harness-code-corpus.test.ts.)
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { extractCode, htmlToText } from '../../src/mail/codes.js';
import { corpus } from '../fixtures/code-corpus.js';
import { ROOT_DIR } from '../helpers/spawn.js';

describe('extractCode over the corpus', () => {
  // docs/mail.md states the figures on test/fixtures/code-corpus.ts; the corpus is a regression bar, so every message must pass.
  it('gets every message of the regression corpus right: precision and recall 1.000, the figures docs/mail.md states', () => {
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
    const measured = `precision ${precision.toFixed(3)} (${returnedRight}/${returned}), recall ${recall.toFixed(3)} (${found}/${withCode})`;
    console.log(`code extractor: ${measured}, ${corpus.length} messages`);
    expect(failures).toEqual([]);
    const manual = fs.readFileSync(path.join(ROOT_DIR, 'docs/mail.md'), 'utf8').replace(/\s+/g, ' ');
    const claim =
      /Measured on the (\d+)-message corpus in `test\/fixtures\/code-corpus\.ts`.*?\*\*(precision [\d.]+ \(\d+\/\d+\), recall [\d.]+ \(\d+\/\d+\))\*\*/.exec(
        manual,
      );
    expect(claim, 'docs/mail.md states the corpus figures').not.toBeNull();
    expect([Number(claim![1]), claim![2]]).toEqual([corpus.length, measured]);
  });

  it('scores a labelled 6-digit code above a bare 4-digit one, and that above a 4-digit one far from its keyword; every score is in (0, 1]', () => {
    const labelled = extractCode({ text: 'Verification code: 482913' });
    const bare = extractCode({ text: 'Your code 4821' });
    const far = extractCode({ text: 'code\n\n\n\n some words here and there and more words then 4821' });
    expect([labelled?.code, bare?.code, far?.code]).toEqual(['482913', '4821', '4821']);
    expect(labelled!.score).toBeGreaterThan(bare!.score);
    expect(bare!.score).toBeGreaterThan(far!.score);
    const scores = corpus.filter((m) => m.expected !== null).map((m) => extractCode({ subject: m.subject, text: m.text, html: m.html })!.score);
    for (const score of [labelled!.score, bare!.score, far!.score, ...scores]) {
      expect(score).toBeGreaterThan(0);
      expect(score).toBeLessThanOrEqual(1);
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
