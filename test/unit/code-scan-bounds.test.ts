// How much of a message the code extractor reads: a bounded prefix of each part, so one huge mail costs milliseconds.
import { describe, expect, it } from 'vitest';
import { extractCode, MAX_SCANNED_TEXT } from '../../src/mail/codes.js';

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
