// Issue 27: codes in languages the keyword tables do not name. The world and fresh held-out sets
// (test/fixtures/code-heldout-world.ts, code-heldout-fresh.ts, each committed before the rules it measures and never
// tuned on) must not fall below the figures measured when the rules landed; the development sets
// (test/fixtures/code-dev-world.ts, code-dev-wide.ts, tuned on) must stay whole; and the focused behaviours each have a test.
import { describe, expect, it } from 'vitest';
import { codeSets, formatScore, scoreCodes } from '../../bench/eval-codes.js';
import { unitNames } from '../../src/mail/code-lexicon.js';
import { UNIT_NAMES } from '../../src/mail/code-units.js';
import { extractCode } from '../../src/mail/codes.js';
import { devThird } from '../fixtures/code-dev-third.js';
import { devWide } from '../fixtures/code-dev-wide.js';
import { devWorld } from '../fixtures/code-dev-world.js';
import { heldoutFresh } from '../fixtures/code-heldout-fresh.js';
import { heldoutWorld } from '../fixtures/code-heldout-world.js';

// Measured on 2026-11-26 after the second round of issue-27 rules (before any: precision 0.714 (10/14), recall 0.213
// (10/47); after the first: 0.743 / 0.553). A REGRESSION BAR, not the goal (precision >= 0.98, recall >= 0.95).
const WORLD_BAR = { precision: 0.86, recall: 0.914 };
// The fresh held-out set (test/fixtures/code-heldout-fresh.ts, committed in 526e5c8 before the second round, never
// tuned on): before it 0.941 (32/34) / 0.542 (32/59), after it 0.959 (47/49) / 0.797 (47/59); the figures measured
// after the third round, as a regression bar.
const FRESH_BAR = { precision: 0.98, recall: 0.864 };
// The third held-out set (test/fixtures/code-heldout-third.ts, committed in ae7f1c7 before the third round, never
// tuned on, taken from bench/eval-codes.ts so that this file does not open it): before the round 0.883 (53/60) / 0.841
// (53/63); the figures measured after it, as a regression bar short of the goal.
const THIRD_BAR = { precision: 0.901, recall: 0.873 };

describe('extractCode on the world held-out set', () => {
  it('stays at or above the regression bar measured when the issue-27 rules landed', () => {
    const score = scoreCodes(heldoutWorld);
    console.log(`world held-out code extractor: ${formatScore(score)}, ${heldoutWorld.length} messages`);
    expect(score.precision).toBeGreaterThanOrEqual(WORLD_BAR.precision);
    expect(score.recall).toBeGreaterThanOrEqual(WORLD_BAR.recall);
  });
});

describe('extractCode on the fresh held-out set', () => {
  it('stays at or above the regression bar measured after the second round of issue-27 rules', () => {
    const score = scoreCodes(heldoutFresh);
    console.log(`fresh held-out code extractor: ${formatScore(score)}, ${heldoutFresh.length} messages`);
    expect(score.precision).toBeGreaterThanOrEqual(FRESH_BAR.precision);
    expect(score.recall).toBeGreaterThanOrEqual(FRESH_BAR.recall);
  });
});

describe('extractCode on the third held-out set', () => {
  it('stays at or above the regression bar measured after the third round of issue-27 rules', () => {
    const score = scoreCodes(codeSets.heldoutThird);
    console.log(`third held-out code extractor: ${formatScore(score)}, ${codeSets.heldoutThird.length} messages`);
    expect(score.precision).toBeGreaterThanOrEqual(THIRD_BAR.precision);
    expect(score.recall).toBeGreaterThanOrEqual(THIRD_BAR.recall);
  });
});

describe('extractCode on the world development sets', () => {
  it('gets every hand-written development example right', () => {
    const score = scoreCodes(devWorld);
    expect([...score.misses, ...score.falsePositives]).toEqual([]);
  });

  // The wide set (test/fixtures/code-dev-wide.ts, 46 languages no table names, built from phrases): no decoy taken, and
  // every code found since the third round (239 of 243 before it).
  it('takes no decoy of the wide development set and finds all its 243 codes', () => {
    const score = scoreCodes(devWide);
    expect(score.falsePositives).toEqual([]);
    expect(score.correct, score.misses.join('; ')).toBe(243);
  });
});

// The third round's development set (test/fixtures/code-dev-third.ts, tuned on): payment one-time codes, codes only in
// the subject, eight-digit codes, validity words CLDR lacks, decoys typeset like codes. Floors as measured when the
// round's rules landed (45 of 49 codes; two decoys taken, named below).
describe('extractCode on the third development set', () => {
  it('finds at least 45 of its 49 codes and takes no decoy but the two known ones', () => {
    const score = scoreCodes(devThird);
    expect(score.correct, score.misses.join('; ')).toBeGreaterThanOrEqual(45);
    expect(score.falsePositives.map((f) => f.replace(/:.*/, ''))).toEqual([
      // A reference number letter-spaced in a cell of its own under a sentence ending in a colon: laid out as a code.
      'decoy om',
      // "kode" (a code word of the Indonesian table) before an eight-digit parcel number in a sentence.
      'decoy ee',
    ]);
  });
});

const styledCell = (code: string) =>
  `<html><body><table><tr><td>Sláðu inn þessa tölu til að halda áfram:</td></tr><tr><td style="font-size:30px;letter-spacing:8px;font-weight:bold">${code}</td></tr><tr><td>Takk.</td></tr></table></body></html>`;

describe('extractCode beyond the keyword tables', () => {
  it('reads any decimal digits Unicode knows and answers ASCII', () => {
    const digits: Record<string, string> = {
      'Arabic-Indic': '٤٨٢١٩٣',
      Persian: '۴۸۲۱۹۳',
      Devanagari: '४८२१९३',
      Bengali: '৪৮২১৯৩',
      Myanmar: '၄၈၂၁၉၃',
      Khmer: '៤៨២១៩៣',
      Lao: '໔໘໒໑໙໓',
      'full-width': '４８２１９３',
      'mathematical bold': '𝟒𝟖𝟐𝟏𝟗𝟑',
    };
    for (const [script, code] of Object.entries(digits)) {
      expect(extractCode({ subject: 'Sign in', text: `Your verification code is ${code}` })?.code, script).toBe('482193');
    }
  });

  it('finds a code given only in the subject', () => {
    const found = extractCode({ subject: '820531 ni kodi yako ya kuingia', text: 'Tumia kodi iliyo kwenye kichwa cha barua hii.' });
    expect(found).toMatchObject({ code: '820531', source: 'subject' });
  });

  it('finds a code alone in a styled cell with no keyword any table knows', () => {
    expect(extractCode({ subject: 'Innskráning', html: styledCell('318406') })?.code).toBe('318406');
    // The same cell unstyled, with no word, no subject and no repetition, is not enough.
    const plain = styledCell('318406').replace(/ style="[^"]*"/, '');
    expect(extractCode({ subject: 'Innskráning', html: plain })).toBeNull();
  });

  it('finds a code after a lexicon word in a language the old tables did not name', () => {
    expect(extractCode({ subject: 'Prisijungimas', text: 'Jūsų vienkartinis kodas: 583920' })?.code).toBe('583920');
    expect(extractCode({ subject: 'ერთჯერადი კოდი', text: 'თქვენი ერთჯერადი კოდი: 639015' })?.code).toBe('639015');
  });

  it('finds a code set apart and named only by a validity phrase, its unit word taken from CLDR (Tibetan digits)', () => {
    const text = 'ཨང་གྲངས་འདི་བཀོལ་སྤྱོད་གནང་།\n\n༤༨༢༡༩༣\n\nསྐར་མ་ ༡༠ ནང་ནུས་མེད་འགྱུར།';
    expect(extractCode({ subject: 'ནང་འཛུལ།', text })?.code).toBe('482193');
    // The same number with "days" instead of "minutes" is not named as a code.
    expect(extractCode({ subject: 'ནང་འཛུལ།', text: text.replace('སྐར་མ་', 'ཉིན་མ་') })).toBeNull();
  });

  it('keeps the validity words it was given as CLDR (through Intl) gives them on this Node', () => {
    expect([...UNIT_NAMES]).toEqual(unitNames());
    expect(UNIT_NAMES.length).toBeGreaterThan(300);
  });

  it('reads a cognate of "code" in any Brahmic script, built from the block layout (Telugu, Malayalam, Gujarati)', () => {
    for (const [label, code] of [
      ['మీ ధృవీకరణ కోడ్:', '604213'],
      ['നിങ്ങളുടെ സ്ഥിരീകരണ കോഡ്:', '604213'],
      ['તમારો ચકાસણી કોડ:', '604213'],
    ]) {
      expect(extractCode({ subject: '—', text: `${label} ${code}` })?.code, label).toBe(code);
    }
  });

  it('finds a code alone in a letter-spaced cell under one sentence, and one in the value cell of a label/value table', () => {
    const oneSentence = '<p>Fakahū ʻa e fika ko ʻeni ke hoko atu.</p><p style="font-size:30px;letter-spacing:6px">529031</p>';
    expect(extractCode({ subject: 'Hū ki loto', html: oneSentence })?.code).toBe('529031');
    // Bold and large only, it could be a seat, an amount or an order number.
    expect(extractCode({ subject: 'Hū ki loto', html: oneSentence.replace('letter-spacing:6px', 'font-weight:bold') })).toBeNull();
    const table = (otp: string) =>
      `<table><tr><td>লেনদেন</td><td>অনলাইন পেমেন্ট</td></tr><tr><td>কাৰ্ড</td><td>XXXX 4821</td></tr><tr><td>${otp}</td><td><b>305918</b></td></tr></table><p>এই কোড ১০ মিনিটৰ বাবে বৈধ।</p>`;
    expect(extractCode({ subject: 'লেনদেন', html: table('ওটিপি') })?.code).toBe('305918');
  });

  it('leaves decoys that look like codes alone', () => {
    const decoys = [
      // "kod" as the South Slavic preposition next to a parcel number
      { subject: 'Obavijest', text: 'Vaša pošiljka 40391827 čeka kod kurira.' },
      { subject: 'Obavijest', text: 'Preuzmite paket kod nas: 40391827' },
      // an order number alone in a styled cell, under a sentence naming the order
      { subject: 'Užsakymas', html: styledCell('558210').replace('Sláðu inn þessa tölu til að halda áfram:', 'Ačiū, jūsų užsakymas priimtas:') },
      // a styled number that is one of several numbers in a short mail
      { subject: 'Fréttabréf', html: styledCell('4821').replace('Takk.', 'Við eigum 3500 nýja hluti og 1200 tilboð.') },
      { subject: 'Fréttabréf', text: 'Opnunartímar breytast.\n\n4200\n\nVið eigum 3500 nýja hluti og 1200 tilboð.' },
      // a number inside a sentence, no code word anywhere
      { subject: 'Habari', text: 'Tuna wateja 482913 katika nchi zote. Asante kwa kuwa nasi.' },
      // a Persian-digit order number on its own line
      { subject: 'سفارش شما', text: 'سفارش شما ثبت شد.\nشماره سفارش:\n۵۵۸۲۱۰' },
      // Serbian Cyrillic "код" as the preposition "at", next to a parcel number
      { subject: 'Ваша пошиљка', text: 'Пошиљка 40391827 је код курира и стиже данас.' },
      // a list of backup codes under a code word
      { subject: 'Ba kode', text: 'Ba kode na yo ya libateli:\n\n482913\n730211\n118406\n993072' },
      // a promotion code with a percentage, in a language whose word for "discount" no list has (a table word, "kode")
      { subject: 'Igabanywa', text: 'Koresha kode 482913 ubone igabanywa rya 20%.' },
      // a meeting's passcode under its id (three groups of digits), its label a table word ("пароль")
      { subject: 'Запрашэнне', text: 'ID сустрэчы: 812 3456 7890\nПароль: 482913' },
    ];
    for (const d of decoys) expect(extractCode(d), JSON.stringify(d)).toBeNull();
  });
});

describe('extractCode, third round of issue 27', () => {
  it('reads a validity phrase whose minute word is a loan CLDR does not give ("10 minutupi", "emizuzwini engu-10")', () => {
    const quechua = { subject: 'Yaykuy', text: 'Kay yupayta qillqay yaykunaykipaq:\n\n826304\n\n10 minutupi tukukunqa.' };
    expect(extractCode(quechua)?.code).toBe('826304');
    const zulu = { subject: 'Ngena', text: 'Faka le nombolo ukuze ungene:\n\n471920\n\nIphelelwa yisikhathi emizuzwini engu-10.' };
    expect(extractCode(zulu)?.code).toBe('471920');
    // Days are no validity: the same layout is not enough.
    expect(extractCode({ ...quechua, text: quechua.text.replace('10 minutupi', '10 punchawpi') })).toBeNull();
    // Kinyarwanda "iminota" (no vowel letter before t in Hausa "mintuna").
    const rw = { subject: 'Injira', text: 'Andika iyi mibare kugira ngo winjire:\n\n295716\n\nIzarangira mu minota 10.' };
    expect(extractCode(rw)?.code).toBe('295716');
    // The loan in other scripts: Yiddish מינוט, Dhivehi މިނިޓު.
    const yiddish = { subject: 'אַרײַנלאָגירן', text: 'ניצט די דאָזיקע נומער צו אַרײַנלאָגירן:\n\n615 204\n\nזי איז גילטיק 10 מינוט.' };
    expect(extractCode(yiddish)?.code).toBe('615204');
    const dhivehi = { subject: 'ލޮގިން', text: 'ތިރީގައިވާ ނަންބަރު ޖައްސަވާ:\n\n508319\n\n10 މިނިޓުން ބާޠިލުވާނެ.' };
    expect(extractCode(dhivehi)?.code).toBe('508319');
  });

  it('reads an amount in thousands beside a currency word no list holds as money ("1 250 сом"), not a split code', () => {
    const order = (outro: string) => ({ subject: 'Буйрутмаңыз', html: styledCell('604913').replace('Takk.', outro) });
    expect(extractCode(order('Жалпы: 1 250 сом'))).toBeNull();
    expect(extractCode(order('Жалпы: KSh 1,250'))).toBeNull();
    // A code split in two groups of three is no amount.
    expect(extractCode({ subject: 'Seensa', text: 'Akkam!\nKoodiin seensa keetii 604 913 dha.\nNama kamiifuu hin kenniin.' })?.code).toBe('604913');
  });

  it('leaves a number set apart in a mail that gives a date and no validity (points, a booking, an invoice)', () => {
    expect(extractCode({ subject: 'Innskráning', html: styledCell('318406') })?.code).toBe('318406');
    const points = styledCell('318406').replace('Takk.', 'Gildir til 31.12.2027.');
    expect(extractCode({ subject: 'Innskráning', html: points })).toBeNull();
    expect(extractCode({ subject: 'Innskráning', html: styledCell('318406').replace('Takk.', 'Gildir til 2027-12-31.') })).toBeNull();
  });

  it('takes a payment one-time code beside the amount when a code word labels it and a validity is named', () => {
    // "Summa" (amount) is a payment word; the code word after it on the line labels the number.
    const text = 'Summa 45,00 €, kinnituskood: 730418\nKood kehtib 5 minutit.';
    expect(extractCode({ subject: 'Makse', text })?.code).toBe('730418');
    // With the payment word right before it, the number is the amount's.
    expect(extractCode({ subject: 'Makse', text: 'Kinnituskood on all. Summa: 730418\nKood kehtib 5 minutit.' })).toBeNull();
  });

  it('leaves a code-like number in a mail that names an amount and no validity (a gift card, an order)', () => {
    const gift = '<p>Wagamuchira chipo che USD 25.00. Kodhi yako:</p><p style="font-size:30px;letter-spacing:6px">831904</p><p>Ishandise pachitoro chedu.</p>';
    expect(extractCode({ subject: 'Chipo chako', html: gift })).toBeNull();
    // The same mail with a validity phrase is a payment's code.
    expect(extractCode({ subject: 'Chipo chako', html: gift.replace('Ishandise pachitoro chedu.', 'Inopera pakapera maminitsi 10.') })?.code).toBe('831904');
  });

  it('takes no PIN beside an amount of money with no validity (a gift card), in a language no shopping list knows', () => {
    const rows = (pin: string, tail: string) =>
      `<table><tr><td>Khadi</td><td>6035 7710 2284 9913</td></tr><tr><td>Mtengo</td><td>MWK 20,000.00</td></tr><tr><td>PIN</td><td><b>${pin}</b></td></tr></table>${tail}`;
    expect(extractCode({ subject: 'Mphatso yanu', html: rows('582913', '') })).toBeNull();
    expect(extractCode({ subject: 'Kulipira', html: rows('582913', '<p>PIN iyi itha pakatha mphindi 5 (5 minutes).</p>') })?.code).toBe('582913');
  });

  it('finds a code that opens the subject when the body has no number at all, not one the body repeats', () => {
    const found = extractCode({
      subject: '407315 yɛ wo nkyerɛkyerɛmu',
      text: "Fa nɔma a ɛwɔ asɛmti no mu no hyɛ mu na woakɔ so.\nSɛ ɛnyɛ wo na wobisae a, bu w'ani gu krataa yi so.",
    });
    expect(found).toMatchObject({ code: '407315', source: 'subject' });
    expect(extractCode({ subject: '12000 tapicha oipytyvõ', text: 'Ko ary 12000 tapicha oipytyvõ ñande rembiapópe. Aguyje!' })).toBeNull();
    // A round number opening a promotion's subject is no code.
    expect(extractCode({ subject: '5000 za bwereere zikulindiridde', text: 'Nyweza wano ozifune leero!\nTewerabira.' })).toBeNull();
    // Closing the subject after a dash, colon or bar counts as opening it.
    const cy = {
      subject: 'Mewngofnodi i Siop Fach – 582013',
      text: 'Defnyddiwch y rhif yn y pennawd i fewngofnodi.\nOs na wnaethoch ofyn am hyn, anwybyddwch yr e-bost hwn.',
    };
    expect(extractCode(cy)?.code).toBe('582013');
  });

  it('takes an eight-digit code a colon introduces in a mail that names its validity, not one without', () => {
    const text = 'Inserìs chest numar par jentrâ:\n\n52903118\n\nAl vâl par 15 minûts.';
    expect(extractCode({ subject: 'Jentrade', text })?.code).toBe('52903118');
    expect(extractCode({ subject: 'Jentrade', text: text.replace('Al vâl par 15 minûts.', 'Graciis.') })).toBeNull();
  });

  it('takes the only number of a mail when a code word no table has stands right before it', () => {
    expect(extractCode({ subject: 'Seensa', text: 'Akkam!\nKoodiin seensa keetii 508126 dha.\nNama kamiifuu hin kenniin.' })?.code).toBe('508126');
  });

  it('reads a word on the line below a code as that line, not as a unit of the number ("Em", "Min")', () => {
    const text = 'Raitim dispela namba long go insait:\n\n305182\n\nEm i gutpela inap 10 minit tasol.';
    expect(extractCode({ subject: '305182 em namba bilong yu', text })?.code).toBe('305182');
  });
});
