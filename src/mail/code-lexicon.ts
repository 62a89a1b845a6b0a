// A multilingual lexicon of the words that name a verification / one-time code, a password or a PIN, for the
// languages the keyword tables in codes.ts do not cover (issue 27).
//
// Source: Keycloak's login-theme translations (github.com/keycloak/keycloak,
// themes/src/main/resources-community/theme/base/login/messages/messages_<lang>.properties, Apache License 2.0),
// the values of the keys authenticatorCode / loginOtpOneTime ("one-time code"), password, emailVerifyInstruction2
// ("verification code") and missingTotpMessage ("authenticator code") in az, ca, eu, fa, hr, hy, ka, kk, lt, lv, sl.
// Only the words are taken (as facts of the languages), reduced to stems so that their inflected forms match;
// no sentence is copied.
//
// False friends: South Slavic "kod" (hr, bs, sr) also means "at / near" ("paket je kod kurira": the parcel is with the
// courier). The bare word is therefore not in this list; codes.ts only counts it where it labels a value (see
// KOD_PREPOSITION there).

import { UNIT_NAMES } from './code-units.js';

/** Stems matched at a word start, followed by any letters (word boundaries by \p{L}). */
export const LEXICON_STEMS: readonly string[] = [
  // az: kod (kodu, kodunu), şifrə, birdəfəlik, təsdiqləmə, doğrulayıcı
  'kodu\\p{L}*',
  'şifrə\\p{L}*',
  'bir\\s?dəf(?:ə|əyə)lik',
  // ca: codi, d'un sol ús, contrasenya, verificació
  'codi',
  "d['’]un\\s+sol\\s+ús",
  'contrasenya',
  // eu: kodea, aldi bateko, pasahitza, egiaztapen
  'kode(?:a|ak|arekin)',
  'aldi\\s+bateko',
  'pasahitz\\p{L}*',
  // hr, bs: jednokratni kod, lozinka, verifikacijski kod, kod autentifikatora (the noun only with a qualifier)
  'jednokratn\\p{L}*',
  'lozink\\p{L}*',
  // sl: enkratna koda, geslo, potrditvene kode
  'kod[aoe]',
  'enkratn\\p{L}*',
  'gesl[oa]',
  // lt: vienkartinis kodas, slaptažodis, patvirtinimo kodo
  'kod(?:as|ą|o)',
  'vienkartin\\p{L}*',
  'slaptažod\\p{L}*',
  // lv: vienreizējā parole, apstiprinājuma kods, kods
  'kods',
  'vienreizēj\\p{L}*',
  'parol[eiē]\\p{L}*',
  // kk (Cyrillic): бір реттік код, құпия сөз, растау коды
  'бір\\s+реттік',
  'құпия\\s+сөз\\p{L}*',
  'коды',
  // ka: ერთჯერადი კოდი, პაროლი, გადამოწმების კოდი
  'კოდ\\p{L}*',
  'ერთჯერად\\p{L}*',
  'პაროლ\\p{L}*',
  // hy: միանգամյա կոդ, գաղտնաբառ, հաստատման կոդ
  'կոդ\\p{L}*',
  'միանգամյա',
  'գաղտնաբառ\\p{L}*',
];

/**
 * "Verification" / "confirmation" words from the same keys: they make a number a code only near it, as the weak
 * keywords of codes.ts do ("order confirmation" is no code).
 */
export const LEXICON_CONFIRM: readonly string[] = [
  'təsdiq\\p{L}*', // az
  'verificació', // ca
  'egiaztapen\\p{L}*', // eu
  'verifikacijsk\\p{L}*', // hr
  'potrditven\\p{L}*', // sl
  'patvirtinimo', // lt
  'apstiprinājum\\p{L}*', // lv
  'растау', // kk
  'გადამოწმებ\\p{L}*', // ka
  'հաստատման', // hy
];

/** Words in scripts matched without word boundaries (Persian, written with the Arabic script and ZWNJ joins). */
export const LEXICON_UNBOUNDED: readonly string[] = [
  // fa: کد یکبار مصرف, کد تأیید, رمز عبور, کد احراز هویت
  'کد یک ?بار مصرف',
  'کد تأیید',
  'کد تایید',
  'کد احراز هویت',
  'رمز یک ?بار مصرف',
  'رمز عبور',
];

// ---------------------------------------------------------------------------------------------------------------
// Beyond the tables: words that a reader who does not know the language still recognises, and words from vendor
// mail translated into many languages. Used by the layout rule of codes.ts, near the number it judges.
//
// Sources, besides Keycloak above:
// - Mozilla Accounts' e-mail translations (github.com/mozilla/fxa-content-server-l10n, locale/<lang>/auth.ftl,
//   MPL 2.0): the keys verifyLoginCode-*, verifyShortCode-*, verifySecondaryCode-* and unblockCode-* — the subject,
//   prompt and expiry line of a real vendor's code mail — in be, cy, dsb, et, fy, hi, hsb, ia, is, kab, pa, scn, sq,
//   su, tt. Most of their words for "code" are cognates (cod, kod, kodi, kood, koade, kóði, còdici, код, कोड, ਕੋਡ),
//   which is why the cognate rule below exists; the rest are listed.
// - ResourceSpace's TOTP plugin translations (github.com/montala-ltd/ResourceSpace_Trunk,
//   plugins/totp/languages/sw.php): Swahili "msimbo" (code), "uthibitishaji" (verification).
// - The Unicode CLDR, as the ICU data that ships with Node: the names of the units "minute" and "hour" in every
//   language Intl knows (validity phrases, below).
// Only words are taken, as facts of the languages; no sentence is copied.

/** Words for "code" that are not cognates of it (fxa: kab, su; ResourceSpace: sw). */
const CODE_WORDS = ['t[ae]ngalt\\p{L}*', 'tingalin', 'sandi', 'msimbo'];
/** "Verification" / "confirmation" / "authorisation" words (fxa: cy, sq, kab, su, tt, be, pa, hi, dsb; ResourceSpace: sw). */
const CONFIRM_WORDS = [
  'dilysu',
  'gwirio',
  'verifikim\\p{L}*',
  'usenqed',
  'usentem',
  'tsiregt',
  'péripikasi',
  'раслау',
  'пацвердж\\p{L}*',
  'awtorizěrowań\\p{L}*',
  'uthibitish\\p{L}*',
  'uthibitisho',
];

// Cognates of "code" across scripts: the sign the issue names — a reader who does not know the language still
// recognises the word. Latin: cod, code, codi, codice, còdici, código, kod, kodi, kodu, kode, koda, kodo, kód, kòd,
// koodi, kood, koodu, koade, kóði, koodh, ikhodi, ikhowudi, kóòdù; with a compound's head before it
// (staðfestingarkóði, ferifikaasjekoade, autoriseerimiskood). Other scripts: код, κωδικ, კოდ, կոդ, קוד, كود, کد, کوڈ,
// کوډ, کۆد, ኮድ, โค้ด, ໂຄດ, កូដ, ကုဒ်, コード, 코드, and in the nine Brahmic scripts that share the ISCII layout
// (Devanagari to Malayalam) KA + sign O + DDA / DA / TTA, built from the block offsets below, not typed per script.
// False friends: Lithuanian "kodėl" (why); Persian "کدام" (which); South Slavic "kod" before a lower-case word is
// the preposition "at" (codes.ts checks that where it matters).
const BRAHMIC_BLOCKS = [0x0900, 0x0980, 0x0a00, 0x0a80, 0x0b00, 0x0b80, 0x0c00, 0x0c80, 0x0d00];
const at = (block: number, offset: number) => String.fromCodePoint(block + offset);
const BRAHMIC_CODE = BRAHMIC_BLOCKS.map(
  // KA (+15), vowel sign O (+4B), then DDA (+21), DA (+26) or TTA (+1F, Tamil writes "code" with it), virama (+4D) or not
  (b) => `${at(b, 0x15)}${at(b, 0x4b)}[${at(b, 0x21)}${at(b, 0x26)}${at(b, 0x1f)}]${at(b, 0x4d)}?`,
).join('|');
const LATIN_COGNATE = '(?:[ie]?[ck]h?[oóòôöõ][oóòôöõwua]{0,2}[dðḍ]h?(?!ėl)\\p{L}{0,7})';
const COGNATE_RE = new RegExp(
  `(?<![\\p{L}\\p{M}])(?:${LATIN_COGNATE}|\\p{L}{3,24}(?:kod|kód|kood|koodi|koade|kóð|code|codi)\\p{L}{0,4}|код\\p{L}{0,5}|κωδικ\\p{L}*|კოდ\\p{L}*|կոդ\\p{L}*|рамз\\p{L}{0,3}|${CODE_WORDS.join('|')})(?![\\p{L}\\p{M}])` +
    `|(?<![\\p{L}\\p{M}])(?:[كک][وۆ]?[دڈډ](?:ی|ها|تان|ت)?|رمز)(?![\\p{L}\\p{M}])|קוד|ኮድ|โค้ด|รหัส|ໂຄດ|ລະຫັດ|កូដ|ကုဒ်|コード|코드|කේත|කෝඩ්|${BRAHMIC_CODE}`,
  'iu',
);
const ACRONYM_RE = /(?<![\p{L}])(?:PIN|OTP|TAN|TOTP|2FA|MFA)(?![\p{L}])/u;
const CONFIRM_RE = new RegExp(`(?<![\\p{L}])(?:${CONFIRM_WORDS.join('|')})(?![\\p{L}])`, 'iu');

const STEMS_RE = new RegExp(`(?<![\\p{L}\\p{N}])(?:${LEXICON_STEMS.join('|')})(?![\\p{L}\\p{N}])|${LEXICON_UNBOUNDED.join('|')}`, 'iu');

/** Whether a text names a code: a lexicon word of one of its languages, a cognate of "code" in any, or PIN / OTP. */
export function mentionsCodeWord(s: string): boolean {
  return STEMS_RE.test(s) || COGNATE_RE.test(s) || ACRONYM_RE.test(s);
}

/** Whether a text has a "verification / confirmation" word the tables of codes.ts do not know (a weaker sign). */
export function mentionsConfirmWord(s: string): boolean {
  return CONFIRM_RE.test(s);
}

// Validity phrases ("expires in 10 minutes", "dakika 10", "{n} நிமிடங்களில்"): a small number next to the name of the
// unit minute or hour, in any language Intl knows. The names come from CLDR through Intl.NumberFormat — every
// two-letter language code Intl supports, each unit's long name for the numbers that pick its plural forms — and are
// kept in code-units.ts, since asking Intl takes about 80 ms; a test checks that list against unitNames().
/** The names of the units minute and hour in every language Intl knows (see code-units.ts). */
export function unitNames(): string[] {
  const names = new Set<string>();
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const tags: string[] = [];
  for (const a of letters) for (const b of letters) tags.push(a + b);
  for (const lang of Intl.NumberFormat.supportedLocalesOf(tags)) {
    if (lang.length !== 2) continue;
    for (const unit of ['minute', 'hour']) {
      const format = new Intl.NumberFormat(lang, { style: 'unit', unit, unitDisplay: 'long' });
      for (const n of [1, 2, 5, 10, 21]) {
        for (const part of format.formatToParts(n)) {
          const name = part.type === 'unit' ? part.value.trim() : '';
          // One-letter abbreviations ("h", "u") would match anything.
          if ([...name].length < 2) continue;
          names.add(name.toLowerCase());
          // Long names also as a stem, for the case endings CLDR does not list (Pashto دقیقې → دقیقو).
          if ([...name].length >= 5) names.add([...name.toLowerCase()].slice(0, -1).join(''));
          // A name that ends in a virama ("நிமிடங்கள்") loses it before a case ending ("நிமிடங்களில்").
          if (/\p{M}$/u.test(name)) names.add(name.toLowerCase().replace(/\p{M}+$/u, ''));
        }
      }
    }
  }
  return [...names].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
}

/** Whether a text has a validity phrase: a number from 1 to 60 beside a minute or hour word, in either order. */
export function mentionsValidity(s: string): boolean {
  // Numbers first (a mail has few), then the unit names beside each: one pattern of ~400 names was ~3 ms a call.
  for (const m of s.matchAll(SMALL_NUMBER)) {
    const end = m.index + m[0].length;
    // "10 minutes", "10-minute", "5 nóim", "{n} நிமிடங்களில்" (a case ending may follow the name)
    const after = s
      .slice(end, end + 40)
      .toLowerCase()
      .replace(/^\s?(?:-\s?)?/, '');
    if (UNIT_NAMES.some((u) => after.startsWith(u))) return true;
    // "dakika 10", "saa 2": the name before the number, itself not the end of a longer word
    const before = s
      .slice(Math.max(0, m.index - 40), m.index)
      .toLowerCase()
      .replace(/\s$/, '');
    if (UNIT_NAMES.some((u) => before.endsWith(u) && !/[\p{L}\p{M}]/u.test(before[before.length - u.length - 1] ?? ''))) return true;
    if (MINUTE_COGNATE_AFTER.test(after) || MINUTE_COGNATE_BEFORE.test(before)) return true;
  }
  return false;
}
const SMALL_NUMBER = /(?<![\d\p{L}])(?:[1-9]|[1-5]\d|60)(?!\d)/gu;

// Where CLDR gives no minute word for a language (Quechua, Ilocano, Kurmanji, Friulian...) or gives a form the mail
// does not use (Zulu "imizuzu", locative "emizuzwini"), the word is most often a loan of "minute" (Latin minutum:
// minutu, minuto, minût, minuut; Yiddish מינוט, Dhivehi މިނިޓު) or of Arabic دقيقة (dakika, daqiqa, deqe, дақиқа), or
// the Nguni stem -mizuzu; such
// a stem, at most one short word away from a small number ("10 a minuto", "engu-10"), reads as a validity phrase.
const MINUTE_STEM = '\\p{L}{0,3}(?:(?:min[uúūùûüio]?t|d[ae]q[iīîe]|dak[iīe]k|mizuz|дақиқ|дакик|дәқиқ|מינוט|މިނިޓ)[\\p{L}\\p{M}]*)';
const MINUTE_COGNATE_AFTER = new RegExp(`^(?:\\p{L}{1,3}\\s)?${MINUTE_STEM}`, 'u');
const MINUTE_COGNATE_BEFORE = new RegExp(`(?<![\\p{L}\\p{M}])${MINUTE_STEM}(?:\\s\\p{L}{1,5})?[\\s-]*$`, 'u');

/** The lexicon as alternations for a larger keyword pattern: strong (code words), weak (confirm words), unbounded. */
export const LEXICON_SOURCES = {
  bounded: LEXICON_STEMS.join('|'),
  confirm: LEXICON_CONFIRM.join('|'),
  unbounded: LEXICON_UNBOUNDED.join('|'),
};
