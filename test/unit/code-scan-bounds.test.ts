// How much of a message the code extractor reads: a bounded prefix of each part, so one huge mail costs milliseconds.
import { describe, expect, it } from 'vitest';
import { extractCode, extractCodeAsync, MAX_SCANNED_TEXT } from '../../src/mail/codes.js';

const filler = (n: number) => 'Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n'.repeat(Math.ceil(n / 57)).slice(0, n);

describe('the scanned prefix', () => {
  it('finds a code inside the first MAX_SCANNED_TEXT characters of the text', () => {
    const text = `${filler(MAX_SCANNED_TEXT - 200)}\nYour verification code is 482913.`;
    expect(extractCode({ subject: 'Hello', text, html: null })?.code).toBe('482913');
  });

  it('does not read the text past MAX_SCANNED_TEXT characters', () => {
    const text = `${filler(MAX_SCANNED_TEXT + 100)}\nYour verification code is 482913.`;
    expect(extractCode({ subject: 'Hello', text, html: null })).toBeNull();
  });

  it('does not read HTML past its first 256 KB', () => {
    const html = `<div>${'<p>&nbsp;</p>'.repeat(25_000)}</div><p>Your verification code is <b>482913</b>.</p>`;
    expect(html.length).toBeGreaterThan(262_144);
    expect(extractCode({ subject: 'Hello', text: null, html })).toBeNull();
  });
});

// The scan reads long parts in windows of a few thousand characters (so that it can yield between them);
// a keyword and its code must still be paired when a window's edge falls between them, or inside either.
describe('scanning in windows', () => {
  // Filler after the message too, so that the text is long enough to be cut into windows.
  const wrap = (n: number, tail: string) => `${filler(n)}\n${tail}\n${filler(6_000)}`;

  it('pairs a keyword and its code wherever a window edge falls between or inside them', () => {
    const tails = ['Your verification code is 482913.', 'Your verification code is:\n482913', '482913 is your verification code', 'Код подтверждения: 4829'];
    const missed: string[] = [];
    for (const tail of tails) {
      // Moves the message across the first window edges (4,096 and 8,192 characters, give or take a line).
      for (let n = 3_900; n <= 4_300; n += 9) {
        const want = tail.match(/\d{4,6}/)![0];
        if (extractCode({ subject: 'Hello', text: wrap(n, tail), html: null })?.code !== want) missed.push(`text ${n}: ${tail}`);
        const html = `<div>${filler(n).replace(/\n/g, '<br>')}</div><p>${tail.replace('\n', '<br>')}</p><div>${filler(6_000).replace(/\n/g, '<br>')}</div>`;
        if (extractCode({ subject: 'Hello', text: null, html })?.code !== want) missed.push(`html ${n}: ${tail}`);
      }
      for (let n = 8_000; n <= 8_400; n += 13) {
        const want = tail.match(/\d{4,6}/)![0];
        if (extractCode({ subject: 'Hello', text: wrap(n, tail), html: null })?.code !== want) missed.push(`text ${n}: ${tail}`);
      }
    }
    expect(missed).toEqual([]);
  });

  it('counts an occurrence near a window edge once, though two windows see it', () => {
    // Near an edge the same occurrence is visible from two windows; counting it twice would add the
    // "repeated code" bonus to its score (and could lift a weak candidate above the threshold).
    const tail = 'Your verification code is 482913.';
    const far = extractCode({ subject: 'Hello', text: wrap(100, tail), html: null });
    expect(far?.code).toBe('482913');
    for (let n = 3_900; n <= 4_300; n += 7) expect(extractCode({ subject: 'Hello', text: wrap(n, tail), html: null }), `filler ${n}`).toEqual(far);
  });

  it('answers the same asynchronously as synchronously, on long and short mail', async () => {
    const messages = [
      { subject: 'Hello', text: wrap(70_000, 'Your verification code is 482913.'), html: null },
      { subject: 'Hello', text: wrap(20_000, 'Your verification code is 482913.'), html: `<p>${filler(9_000)}</p><p>验证码：<b>7351</b>，5分钟内有效。</p>` },
      { subject: 'Your code', text: 'Your login code is 739104', html: '<p>Code <b>1234</b></p>' },
      { subject: 'Newsletter', text: filler(30_000), html: null },
    ];
    for (const m of messages) expect(await extractCodeAsync(m)).toEqual(extractCode(m));
  });
});
