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

// Cognates of "code" across scripts (code, codi, código, kod, kód, kodi, kodu, koodi, kóði, код, κωδικός, კოდი, կոդ,
// کد, كود, קוד, कोड, โค้ด, コード, 코드) and the PIN / OTP acronyms: the sign the issue names — a reader who does not
// know the language still recognises the word. Used only by the layout rule, near the number it judges.
const COGNATE_RE =
  /(?<![\p{L}])(?:[ck][oóòôöõ]d\p{L}{0,6}|k[oó]{1,2}[dð]\p{L}{0,6}|код\p{L}{0,4}|κωδικ\p{L}*|კოდ\p{L}*|կոդ\p{L}*)(?![\p{L}])|کد|كود|קוד|कोड|โค้ด|コード|코드/iu;
const ACRONYM_RE = /(?<![\p{L}])(?:PIN|OTP|TAN)(?![\p{L}])/u;

const STEMS_RE = new RegExp(`(?<![\\p{L}\\p{N}])(?:${LEXICON_STEMS.join('|')})(?![\\p{L}\\p{N}])|${LEXICON_UNBOUNDED.join('|')}`, 'iu');

/** Whether a text names a code: a lexicon word of one of its languages, or a cognate of "code" in any. */
export function mentionsCodeWord(s: string): boolean {
  return STEMS_RE.test(s) || COGNATE_RE.test(s) || ACRONYM_RE.test(s);
}

/** The lexicon as alternations for a larger keyword pattern: strong (code words), weak (confirm words), unbounded. */
export const LEXICON_SOURCES = {
  bounded: LEXICON_STEMS.join('|'),
  confirm: LEXICON_CONFIRM.join('|'),
  unbounded: LEXICON_UNBOUNDED.join('|'),
};
