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
  'təsdiq\\p{L}*',
  // ca: codi, d'un sol ús, contrasenya, verificació
  'codi',
  "d['’]un\\s+sol\\s+ús",
  'contrasenya',
  'verificació',
  // eu: kodea, aldi bateko, pasahitza, egiaztapen
  'kode(?:a|ak|arekin)',
  'aldi\\s+bateko',
  'pasahitz\\p{L}*',
  'egiaztapen\\p{L}*',
  // hr, bs: jednokratni kod, lozinka, verifikacijski kod, kod autentifikatora (the noun only with a qualifier)
  'jednokratn\\p{L}*',
  'lozink\\p{L}*',
  'verifikacijsk\\p{L}*',
  // sl: enkratna koda, geslo, potrditvene kode
  'kod[aoe]',
  'enkratn\\p{L}*',
  'gesl[oa]',
  'potrditven\\p{L}*',
  // lt: vienkartinis kodas, slaptažodis, patvirtinimo kodo
  'kod(?:as|ą|o)',
  'vienkartin\\p{L}*',
  'slaptažod\\p{L}*',
  'patvirtinimo',
  // lv: vienreizējā parole, apstiprinājuma kods, kods
  'kods',
  'vienreizēj\\p{L}*',
  'parol[eiē]\\p{L}*',
  'apstiprinājum\\p{L}*',
  // kk (Cyrillic): бір реттік код, құпия сөз, растау коды
  'бір\\s+реттік',
  'құпия\\s+сөз\\p{L}*',
  'растау',
  'коды',
  // ka: ერთჯერადი კოდი, პაროლი, გადამოწმების კოდი
  'კოდ\\p{L}*',
  'ერთჯერად\\p{L}*',
  'პაროლ\\p{L}*',
  'გადამოწმებ\\p{L}*',
  // hy: միանգամյա կոդ, գաղտնաբառ, հաստատման կոդ
  'կոդ\\p{L}*',
  'միանգամյա',
  'գաղտնաբառ\\p{L}*',
  'հաստատման',
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

const STEMS_RE = new RegExp(`(?<![\\p{L}\\p{N}])(?:${LEXICON_STEMS.join('|')})(?![\\p{L}\\p{N}])|${LEXICON_UNBOUNDED.join('|')}`, 'iu');

/** Whether a text names a code in one of the lexicon's languages. */
export function mentionsCodeWord(s: string): boolean {
  return STEMS_RE.test(s);
}

/** The lexicon as alternations for a larger keyword pattern: [bounded stems, unbounded words]. */
export const LEXICON_SOURCES = { bounded: LEXICON_STEMS.join('|'), unbounded: LEXICON_UNBOUNDED.join('|') };
