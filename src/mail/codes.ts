// Finds the verification / one-time code in an email (subject, text, HTML) with rules only: no network, no model.
import { createRequire } from 'node:module';
import { LEXICON_SOURCES, mentionsCodeWord, mentionsValidity } from './code-lexicon.js';

// `he` (HTML5's full entity table, maintained; already in the tree through mailparser) ships no types: the one call used.
const he = createRequire(import.meta.url)('he') as { decode(html: string): string };

export interface CodeSource {
  subject?: string | null;
  text?: string | null;
  html?: string | null;
}
/** Where a code was found: the subject, the text part, or the HTML part (rendered to text). */
export type CodeFoundIn = 'subject' | 'text' | 'html';
export interface FoundCode {
  code: string;
  score: number;
  /** The part the code was read from (of its best-scoring occurrence). */
  source: CodeFoundIn;
  /** The keyword that tied it to a verification ("验证码", "verification code", "OTP"…), as printed there. */
  keyword: string;
}

// ---------------------------------------------------------------------------------------------------------------
// HTML to text
//
// Why hand-written and not html-to-text (issue 13, item 5), measured 2026-11-23 with the same matcher behind
// each (npm run eval:codes figures; median of 30 runs on a 256 KB vendor-style HTML mail of tables, inline
// styles, links and entities):
//   this scanner:               regression 49/49 (P 1.000, R 1.000), held-out P 1.000 (99/99), R 0.990 (99/100); 4.5 ms
//   html-to-text 9.0.5 (tuned:  regression R 0.980 (48/49): it loses the code whose <img alt> heading and
//     no wrap, cells inline)    one-<span>-per-digit layout this scanner keeps; held-out unchanged;        23–25 ms
// so html-to-text is five times slower and reads worse. Entities: this table holds the ones vendor mail uses
// and stays the fast path; anything else goes to he.decode, so all 2,231 HTML5 names decode. he.decode over
// the whole text gave the same figures and speed on ordinary HTML but was twice as slow on entity-dense HTML
// (256 KB of &nbsp;&amp;&mdash;…: 16–31 ms against 8–16 ms). Table first, he for the rest (what is here): the
// same figures, and the same time as the table alone within the noise of repeated runs (4–8 ms ordinary, 9–15 ms dense).

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  ensp: ' ',
  emsp: ' ',
  thinsp: ' ',
  zwnj: '',
  zwj: '',
  shy: '',
  lrm: '',
  rlm: '',
  copy: '©',
  reg: '®',
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  minus: '−',
  middot: '·',
  bull: '•',
  lsquo: '‘',
  rsquo: '’',
  sbquo: '‚',
  ldquo: '“',
  rdquo: '”',
  bdquo: '„',
  laquo: '«',
  raquo: '»',
  lsaquo: '‹',
  rsaquo: '›',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  curren: '¤',
  deg: '°',
  times: '×',
  divide: '÷',
  plusmn: '±',
  micro: 'µ',
  para: '¶',
  sect: '§',
  dagger: '†',
  Dagger: '‡',
  iexcl: '¡',
  iquest: '¿',
  ordf: 'ª',
  ordm: 'º',
  prime: '′',
  rarr: '→',
  larr: '←',
  aacute: 'á',
  eacute: 'é',
  iacute: 'í',
  oacute: 'ó',
  uacute: 'ú',
  yacute: 'ý',
  Aacute: 'Á',
  Eacute: 'É',
  Iacute: 'Í',
  Oacute: 'Ó',
  Uacute: 'Ú',
  agrave: 'à',
  egrave: 'è',
  igrave: 'ì',
  ograve: 'ò',
  ugrave: 'ù',
  Agrave: 'À',
  Egrave: 'È',
  acirc: 'â',
  ecirc: 'ê',
  icirc: 'î',
  ocirc: 'ô',
  ucirc: 'û',
  Acirc: 'Â',
  Ecirc: 'Ê',
  auml: 'ä',
  euml: 'ë',
  iuml: 'ï',
  ouml: 'ö',
  uuml: 'ü',
  yuml: 'ÿ',
  Auml: 'Ä',
  Ouml: 'Ö',
  Uuml: 'Ü',
  atilde: 'ã',
  otilde: 'õ',
  ntilde: 'ñ',
  Atilde: 'Ã',
  Otilde: 'Õ',
  Ntilde: 'Ñ',
  ccedil: 'ç',
  Ccedil: 'Ç',
  szlig: 'ß',
  aring: 'å',
  Aring: 'Å',
  aelig: 'æ',
  AElig: 'Æ',
  oslash: 'ø',
  Oslash: 'Ø',
  oelig: 'œ',
  OElig: 'Œ',
};

// Zero-width joiners, soft hyphens and the combining grapheme joiner (&#847;) pad preheaders; they would split codes.
// biome-ignore lint/suspicious/noMisleadingCharacterClass: U+034F stands alone here (it is removed), not combined with a neighbour
const INVISIBLE = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2060-\u2064\ufeff]/g;

function decodeEntities(s: string): string {
  return s.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});?/g, (m, body: string) => {
    if (body[0] === '#') {
      const cp = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      if (!(cp > 0 && cp <= 0x10ffff) || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
      return String.fromCodePoint(cp);
    }
    const known = NAMED_ENTITIES[body];
    if (known !== undefined) return known;
    // he knows every HTML5 name, case included (&Ocirc; is Ô); only a name it does not know is tried in lower case (&NBSP;).
    const decoded = he.decode(m);
    return decoded !== m ? decoded : (NAMED_ENTITIES[body.toLowerCase()] ?? m);
  });
}

const BLOCK_TAGS = new Set(
  (
    'p div br hr h1 h2 h3 h4 h5 h6 li ul ol dl dt dd tr table thead tbody tfoot caption section article header footer nav aside main ' +
    'blockquote pre center address form fieldset figure figcaption option'
  ).split(' '),
);
// Elements whose content is never message text (CSS, scripts, metadata).
const DROPPED_ELEMENTS = new Set(['head', 'style', 'script', 'noscript', 'template', 'svg', 'title', 'xml']);
const CLOSE_TAG: Record<string, RegExp> = {};

/** HTML to plain text for code search: drops <style>/<script>/<head>, comments, tags and attributes (so CSS colours and inline styles never reach the matcher), decodes entities, keeps <img alt> text, turns block elements into line breaks, collapses whitespace. */
export function htmlToText(html: string): string {
  return drain(htmlToTextSteps(html, Number.POSITIVE_INFINITY));
}

/** htmlToText in steps (see Steps); stops once `limit` characters of text are made, since the scan reads no further. */
function* htmlToTextSteps(html: string, limit: number): Steps<string> {
  // A single forward scan with indexOf, not regexes over the whole document: unclosed tags and comments in
  // malformed mail would otherwise make this quadratic.
  const out: string[] = [];
  const n = html.length;
  let i = 0;
  let tags = 0;
  while (i < n) {
    if ((++tags & 511) === 0) yield;
    const lt = html.indexOf('<', i);
    if (lt === -1) {
      out.push(html.slice(i).replace(/\s+/g, ' '));
      break;
    }
    if (lt > i) out.push(html.slice(i, lt).replace(/\s+/g, ' '));
    if (html.startsWith('<!--', lt)) {
      const e = html.indexOf('-->', lt + 4);
      i = e === -1 ? n : e + 3;
      out.push(' ');
      continue;
    }
    const head = /^<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)/.exec(html.slice(lt, lt + 64));
    const next = html[lt + 1];
    if (!head && next !== '!' && next !== '?') {
      out.push('<'); // "a < b" is text
      i = lt + 1;
      continue;
    }
    const gt = html.indexOf('>', lt + 1);
    // An unterminated tag swallows the rest, as browsers do; it also keeps an unclosed <style> from leaking CSS.
    if (gt === -1) break;
    i = gt + 1;
    if (!head) continue; // <!DOCTYPE>, <![endif]>, <?xml?>
    const name = head[2]!.toLowerCase();
    const closing = head[1] === '/';
    if (!closing && DROPPED_ELEMENTS.has(name)) {
      const re = (CLOSE_TAG[name] ??= new RegExp(`</${name}\\s*>`, 'gi'));
      re.lastIndex = i;
      const m = re.exec(html);
      i = m ? m.index + m[0].length : n;
      out.push(' ');
    } else if (name === 'img') {
      const alt = /\salt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(html.slice(lt, gt + 1));
      const text = alt ? (alt[1] ?? alt[2] ?? alt[3] ?? '') : '';
      out.push(text ? ` ${text.replace(/\s+/g, ' ')} ` : ' ');
    } else if (BLOCK_TAGS.has(name)) out.push('\n');
    // Table cells of one row stay on one line: "Verification code | 305918".
    else if (name === 'td' || name === 'th') out.push(' ');
    // Inline tags vanish without a space so that <span>4</span><span>8</span> stays "48".
  }
  // Entities and tidying in pieces cut at line breaks: no entity spans one, and tidy works line by line, so
  // the pieces give the same text as the whole would.
  const raw = out.join('');
  const pieces: string[] = [];
  let made = 0;
  for (let at = 0; at < raw.length && made < limit; ) {
    let end = raw.indexOf('\n', at + 8_192);
    if (end === -1) end = raw.length;
    const piece = tidy(decodeEntities(raw.slice(at, end)).replace(INVISIBLE, ''));
    if (piece) {
      pieces.push(piece);
      made += piece.length + 1;
    }
    at = end + 1;
    yield;
  }
  return pieces.join('\n');
}

/** Collapses horizontal whitespace, trims lines and drops empty ones, so that "adjacent line" means adjacent text. */
function tidy(s: string): string {
  const out: string[] = [];
  for (const raw of s.replace(/\r\n?/g, '\n').split('\n')) {
    const line = raw.replace(/[\s\u00a0\u2000-\u200a\u202f\u205f\u3000]+/g, ' ').trim();
    if (line) out.push(line);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Normalising and masking

/** Full-width digits, letters and punctuation (common in CJK mail) to ASCII, and hyphen look-alikes to '-'. */
function normalise(s: string): string {
  return (
    s
      .replace(INVISIBLE, '')
      // Full-width and ideographic commas end a clause: "验证码是 7351，5分钟内有效" must not read
      // as the decimal "7351,5" (which the money mask would hide).
      .replace(/[\uff0c\u3001]/g, ', ')
      .replace(/[\uff01-\uff5e]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0xfee0))
      // Any decimal digit Unicode knows (Arabic-Indic, Persian, Devanagari, Bengali, Myanmar, Khmer...), as ASCII.
      .replace(NATIVE_DIGIT, nativeDigit)
      .replace(/[\u2010\u2011\u2012\u2212]/g, '-')
  );
}

// Every decimal digit but ASCII's. Unicode encodes each script's digits 0 to 9 in one ascending run (a stability
// policy for General_Category Nd), and runs that touch (the five mathematical digit sets) are each ten long, so a
// digit's value is its distance from the start of its run, modulo 10: no table typed per script.
const NATIVE_DIGIT = /(?![0-9])\p{Nd}/gu;
const IS_DIGIT = /^\p{Nd}$/u;
const digitValues = new Map<number, string>();

export function nativeDigit(c: string): string {
  const cp = c.codePointAt(0)!;
  let value = digitValues.get(cp);
  if (value === undefined) {
    let start = cp;
    while (start > 0 && IS_DIGIT.test(String.fromCodePoint(start - 1))) start--;
    value = String((cp - start) % 10);
    digitValues.set(cp, value);
  }
  return value;
}

// Masked characters become U+001A (SUBSTITUTE), a control character no mail text carries. It lies in Latin-1 on
// purpose: V8 keeps a string of Latin-1 characters one byte wide, and runs the \p{L} patterns below 30 to 100 times
// faster on such a string than on a two-byte one (measured: the keyword pattern over 64K of English, 0.4 ms against
// 14 ms). A mask character outside Latin-1 (it was U+2591) made every masked English text two bytes wide.
const MASK_CHAR = '\u001a';
const maskOf = (m: string) => (m.includes('\n') ? m.replace(/[^\n]/g, MASK_CHAR) : MASK_CHAR.repeat(m.length));
const maskKeepingPercent = (m: string) => m.replace(/[^\n%]/g, MASK_CHAR);
const PERCENT_MASK = /(?<![\d.,])\d{1,12}(?:[.,]\d{1,6})?\s?%/g;

const MONTHS =
  'jan(?:uary|\\.)?|feb(?:ruary|\\.)?|mar(?:ch|\\.)?|apr(?:il|\\.)?|may|june?|july?|aug(?:ust|\\.)?|sep(?:t(?:ember)?|\\.)?|oct(?:ober|\\.)?|nov(?:ember|\\.)?|dec(?:ember|\\.)?' +
  '|januar|februar|märz|mai|juni|juli|oktober|dezember' +
  '|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre' +
  '|janeiro|fevereiro|março|maio|junho|julho|setembro|outubro|novembro|dezembro' +
  '|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre' +
  '|января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря';
const MONTH_RE = new RegExp(`(?<![\\p{L}])(?:${MONTHS})(?![\\p{L}])`, 'iu');

// Labels whose value is an identifier, never a code: order, tracking, invoice, account, meeting numbers...
// Latin labels need word boundaries; CJK ones cannot have them.
const ID_LABELS_LATIN = [
  'order(?:\\s+(?:number|no\\.?|id))?',
  'invoice',
  'receipt',
  'tracking(?:\\s+(?:number|no\\.?|id|code))?',
  'transaction\\s+(?:id|number|no\\.?)',
  'reference(?:\\s+(?:number|no\\.?|id|code))?',
  'ref\\.?',
  'case',
  'ticket',
  'booking(?:\\s+(?:number|reference|ref\\.?))?',
  'reservation(?:\\s+number)?',
  'confirmation\\s+(?:number|no\\.?|#)',
  'membership(?:\\s+number)?',
  'member\\s+(?:id|number|no\\.?)',
  'customer\\s+(?:id|number|no\\.?)',
  'account\\s+(?:number|no\\.?|#)',
  '(?:account|card)\\s+ending(?:\\s+in)?',
  'ending\\s+in',
  'ends\\s+in',
  'policy(?:\\s+number)?',
  'claim(?:\\s+number)?',
  'serial(?:\\s+number)?',
  'sku',
  'item(?:\\s+(?:number|no\\.?|#))',
  'model(?:\\s+number)?',
  'meeting\\s+id',
  'webinar\\s+id',
  'user\\s+id',
  'id',
  'auth(?:ori[sz]ation)?\\s+code',
  'approval\\s+code',
  'bestellung',
  'bestellnummer',
  'sendungsnummer',
  'rechnungsnummer',
  'rechnung',
  'kundennummer',
  'auftragsnummer',
  'vorgangsnummer',
  'hrb',
  'hra',
  'ust-idnr\\.?',
  'steuernummer',
  'iban',
  'pedido',
  'factura(?:\\s+n\\.?\\s*º)?',
  'nif',
  'cif',
  'n[úu]mero\\s+de\\s+(?:pedido|seguimiento|factura)',
  'referencia',
  'commande',
  'facture',
  'num[ée]ro\\s+de\\s+(?:commande|suivi|facture)',
  'siret',
  'siren',
  'заказ',
  'трек-номер',
  'номер\\s+заказа',
  'сч[её]т',
  'инн',
  'огрн',
];
const ID_LABELS_CJK = [
  '订单号',
  '订单编号',
  '订单',
  '快递单号',
  '运单号',
  '物流单号',
  '交易单号',
  '流水号',
  '訂單編號',
  '訂單',
  '備案號',
  'ICP备',
  'ICP備',
  '注文番号',
  'お問い合わせ番号',
  '伝票番号',
  '会員番号',
  '주문번호',
  '송장번호',
  '운송장번호',
  '회원번호',
  '사업자등록번호',
];
// (A "verification number" in any of these languages is a code, not an identifier: the lookahead keeps it.)
const NOT_VERIFY = '(?!verifi|confirm|segur|secur|sicher|acces|autent|authent|weryfik|potwierdz|ověř|doğrula|onay|xác)';
const ID_NUMBER_LABEL = [
  '\\p{L}*(?:nummer|numret|numero|numer|nomor|nombor|número|numéro|номер)\\p{L}{0,3}',
  'numara\\p{L}*',
  `(?:numer|número|numéro|numero|nomor|nombor|číslo|szám|αριθμός|số|номер)\\s+(?:de\\s+)?${NOT_VERIFY}\\p{L}+`,
  '\\p{L}*(?:číslo|számú|szám|azonosító|tunnus|αριθμός)',
  'mã\\s+(?:đơn\\s+hàng|vận\\s+đơn|khách\\s+hàng|giao\\s+dịch)',
  'nomor\\s+resi',
  'resi',
  'referen(?:ce|cia|ência|za|tie|s)\\p{L}*',
  'rif\\.?',
].join('|');
const ID_VALUE =
  '\\s*(?:#|№|n[º°o]\\.?|nr\\.?|no\\.?)?\\s*[:：#№]?\\s*(?=[A-Z0-9-]{0,40}\\d)[A-Z0-9][A-Z0-9-]{0,40}(?:[ ](?=[A-Z0-9-]{0,40}\\d)[A-Z0-9-]{1,40}){0,6}';

const PHONE_LABELS =
  'tel(?:ephone|efon|[ée]fono|[ée]phone)?|phone|call(?:\\s+us)?(?:\\s+(?:at|on))?|fax|mobile|hotline|whatsapp|telefone' +
  '|тел(?:ефон)?|звоните' +
  // Customer-service lines as vendors label them: it, pl, nl, sv, da/no, fi, cs, hu, el, tr, id/ms, vi, pt, es, ro, uk
  '|numero\\s+verde|infolinia|klantenservice|kundservice|kundeservice|tlf\\.?|puh\\.?|asiakaspalvelu|zákaznick\\p{L}*\\s+link\\p{L}*' +
  '|ügyfélszolgálat|τηλ\\.?|müşteri\\s+hizmetleri|layanan\\s+pelanggan|khidmat\\s+pelanggan|tổng\\s+đài(?:\\s+hỗ\\s+trợ)?|linha\\s+de\\s+apoio' +
  '|sac|ouvidoria|atención\\s+al\\s+cliente|customer\\s+(?:service|care|support)|helpline|call\\s+cent(?:er|re)|servicio\\s+al\\s+cliente';
const PHONE_LABELS_CJK =
  '電話|电话|客服专线|客服專線|客服热线|客服熱線|服务热线|服務專線|客服|热线|熱線|手机|手機|カスタマーセンター|お問い合わせ|고객센터|전화' +
  // Scripts without word boundaries in the matcher: Thai, Arabic, Hebrew, Devanagari customer-service labels
  '|ศูนย์บริการลูกค้า|คอลเซ็นเตอร์|خدمة العملاء|اتصل على|שירות לקוחות|ग्राहक सेवा|हेल्पलाइन';
const PHONE_VALUE = '\\s*[:：.]?\\s*\\(?\\+?\\d[\\d ().-]{3,24}\\d';

const ADDRESS_WORD =
  /(?:(?<![\p{L}])\p{L}*(?:stra(?:ß|ss)e|gasse|weg|platz|allee)(?![\p{L}])|(?<![\p{L}])(?:street|st\.?|str\.|avenue|ave\.?|road|rd\.?|blvd|boulevard|suite|ste\.|floor|lane|calle|avenida|av\.|rua|rue|plaza|piso|cedex|po box|p\.o\. box|ул\.|улица|проспект|г\.|д\.)(?![\p{L}])|[路街]\d|(?<!\d)\d{1,6}[号號]|丁目|番地)/iu;

// Applied in order: later patterns see earlier masks, so a URL's digits can never be re-read as a date.
const MASKS: RegExp[] = [
  // URLs, bare domains with paths, e-mail addresses
  /\b(?:https?:\/\/|www\.)[^\s<>"'）)]+/gi,
  /(?<![\w.-])(?:[a-z0-9-]{1,63}\.){1,8}[a-z]{2,24}\/[^\s<>"']*/gi,
  /(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}/g,
  // CSS: rule bodies, colours, functional colours
  /\{[^{}\n:]*:[^{}\n]*\}/g,
  /#(?:[0-9a-f]{8}|[0-9a-f]{6}|[0-9a-f]{3,4})(?![0-9a-z])/gi,
  /\b(?:rgba?|hsla?)\s*\([^)]{0,60}\)/gi,
  /\b(?:colou?r|background(?:-colou?r)?|bgcolor|border(?:-[a-z]+)?|fill|stroke)\s*[:=]\s*["']?\s*#?[0-9a-f]{3,8}\b/gi,
  // IP addresses
  /(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?!\.?\d)/g,
  // Dates
  /(?<![\d.])(?:19|20)\d{2}\s?[-/.年]\s?(?:0?[1-9]|1[0-2])\s?[-/.月]\s?(?:0?[1-9]|[12]\d|3[01])日?(?![\d])/g,
  /(?<![\d.])\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2})(?![\d])/g,
  /(?<![\d.])\d{1,2}\.\s\d{1,2}\.\s(?:19|20)\d{2}(?!\d)/g,
  /(?<![\d.])(?:19|20)\d{2}\.\s\d{1,2}\.\s\d{1,2}\.?(?!\d)/g,
  /(?<!\d)(?:19|20)\d{2}\s?年(?:\s?\d{1,2}\s?月(?:\s?\d{1,2}\s?日)?)?/g,
  /(?<!\d)\d{1,2}\s?月\s?\d{1,2}\s?日/g,
  /(?<!\d)(?:19|20)\d{2}\s?년(?:\s?\d{1,2}\s?월(?:\s?\d{1,2}\s?일)?)?/g,
  /(?<!\d)\d{1,2}\s?월\s?\d{1,2}\s?일/g,
  /(?<!\d)(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?!\d)/g,
  new RegExp(`(?<![\\p{L}\\d])\\d{1,2}(?:st|nd|rd|th)?\\.?\\s(?:de\\s)?(?:${MONTHS})\\.?(?:,?\\s(?:de\\s)?\\d{4}(?:\\s?г(?:ода|\\.)?)?)?(?![\\p{L}])`, 'giu'),
  new RegExp(`(?<![\\p{L}])(?:${MONTHS})\\.?\\s\\d{1,2}(?:st|nd|rd|th)?(?:,?\\s\\d{4})?(?!\\d)`, 'giu'),
  new RegExp(`(?<![\\p{L}])(?:${MONTHS})\\.?\\s\\d{4}(?!\\d)`, 'giu'),
  // Times
  /(?<![\d])(?:[01]?\d|2[0-3])[:h][0-5]\d(?:[:.][0-5]\d)?(?:\s?(?:[ap]\.?m\.?|uhr|hrs?|utc|gmt))?(?![\d])/gi,
  /(?<![\d])(?:[01]?\d|2[0-3])\.[0-5]\d\s?(?:[ap]\.?m\.?|uhr|h)(?![\p{L}])/giu,
  /(?<![\d])\d{1,4}\s?[ap]\.?m\.?(?![a-z])/gi,
  /(?<![\d])\d{1,2}\s?(?:時|点|點|시)\s?\d{1,2}\s?(?:分|분)/g,
  /(?<![\d])\d{1,2}\s?(?:時|点|點|시)(?![\d])/g,
  // Phone numbers
  /\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,6}/g,
  /\(\d{1,4}\)\s?\d{2,4}(?:[ .-]\d{2,4}){1,3}/g,
  /(?<![\d-])\d{2,4}[ .-]\d{3,4}[ .-]\d{4}(?![\d-])/g,
  /(?<![\d-])1[ .-]?8\d\d[ .-]\d{3}[ .-]\d{4}(?!\d)/g,
  new RegExp(`(?<![\\p{L}])(?:${PHONE_LABELS})(?![\\p{L}])${PHONE_VALUE}`, 'giu'),
  new RegExp(`(?:${PHONE_LABELS_CJK})${PHONE_VALUE}`, 'gu'),
  /\btext\s+\w{1,20}\s+to\s+\d{3,6}\b/gi,
  // Postal codes with an explicit label
  /(?:〒|postal code|post code|postcode|zip(?:\s?code)?|plz|cep|c[óo]digo postal|code postal|почтовый индекс|индекс|邮编|郵遞區號|우편번호)\s*[:：]?\s*[A-Z0-9]{2,6}(?:[ -][A-Z0-9]{3,4})?/giu,
  /\b(?!PIN|OTP|TAN)[A-Z]{2}\s\d{5}(?:-\d{4})?\b/g,
  // Money
  /(?:[$€£¥₩₽￥]|US\$|R\$|A\$|C\$|HK\$|NT\$|S\$|\b(?:RMB|CNY|USD|EUR|GBP|JPY|KRW|RUB|CHF|INR|BRL|MXN)\b)\s?\d{1,12}(?:[,. ]\d{3}(?!\d)){0,4}(?:[.,]\d{1,2})?/g,
  /(?<![\d.,])\d{1,12}(?:[,. ]\d{3}(?!\d)){0,4}(?:[.,]\d{1,2})?\s?(?:€|₽|元|円|원|руб\.?|р\.|zł|kr|(?:USD|EUR|RMB|CNY|JPY|KRW|RUB|dollars?|euros?)\b)/giu,
  /(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d{1,4})?(?![\d,])/g,
  /(?<![\d.,])\d{1,3}(?:\.\d{3})+,\d{1,2}(?![\d])/g,
  /(?<![\d.,])\d{1,12}[.,]\d{1,2}(?![\d.,])/g,
  // Percentages (the sign is kept: a percentage near a code word makes it a promotion), versions
  PERCENT_MASK,
  /(?<![\w.])v?\d{1,12}(?:\.\d{1,12}){1,3}(?![\w])/gi,
  /(?<![\w])v\d+(?![\w.])/gi,
  // Copyright years
  /(?:©|\(c\)|copyright)\s*(?:\d{4}\s*[-–]\s*)?\d{4}/gi,
  // Labelled identifiers
  new RegExp(`(?<![\\p{L}])(?:${ID_LABELS_LATIN.join('|')})(?![\\p{L}])${ID_VALUE}`, 'giu'),
  new RegExp(`(?:${ID_LABELS_CJK.join('|')})${ID_VALUE}`, 'giu'),
  // Whatever the language, a value labelled "<something> number" is an identifier (order, invoice, parcel,
  // appointment, customer...): Kundennummer, afspraaknummer, numer przesyłki, número de cliente, номер заказа.
  new RegExp(`(?<![\\p{L}])(?:${ID_NUMBER_LABEL})(?![\\p{L}])${ID_VALUE}`, 'giu'),
];

function maskLine(line: string, hasKeyword: boolean): string {
  // Postcodes in address lines: only when the line does not also announce a code.
  if (!hasKeyword && ADDRESS_WORD.test(line)) line = line.replace(/(?<![\d-])\d{4,6}(?![\d-])/g, maskOf);
  return line;
}

function mask(s: string): string {
  return maskWithKeywords(s).masked;
}

/**
 * The text masked, and the keyword pattern's matches in it: one pass of that pattern serves both the address-line
 * mask (a line with a keyword keeps its digits) and the keyword list (findKeywords). The address-line mask changes
 * only digits of lines without a keyword, so the matches found before it are the matches after it.
 */
function maskWithKeywords(s: string): { masked: string; matches: RegExpExecArray[] } {
  for (const re of MASKS) s = s.replace(re, re === PERCENT_MASK ? maskKeepingPercent : maskOf);
  const matches = [...s.matchAll(KEYWORD_RE)];
  const lines = s.split('\n');
  let at = 0;
  let k = 0;
  for (let i = 0; i < lines.length; i++) {
    const end = at + lines[i]!.length;
    while (k < matches.length && matches[k]!.index + matches[k]![0].length <= at) k++;
    // A match that reaches into the line counts for it, as the pattern run on the line alone would find it.
    const hasKeyword = k < matches.length && matches[k]!.index <= end;
    lines[i] = maskLine(lines[i]!, hasKeyword);
    at = end + 1;
  }
  return { masked: lines.join('\n'), matches };
}

// ---------------------------------------------------------------------------------------------------------------
// Keywords

const STRONG_LATIN = [
  'one[- ]?time(?:\\s+(?:pass(?:code|word)|code|pin))?',
  'otp',
  'passcode',
  'pass\\s+code',
  '2fa',
  'mfa',
  'pin(?:-code)?',
  'tan',
  'security\\s+code',
  'login\\s+code',
  'sign[- ]in\\s+code',
  'verification\\s+code',
  'confirmation\\s+code',
  'access\\s+code',
  'auth(?:entication)?\\s+code',
  'código',
  'codigo',
  'clave',
  'c[oó]digo\\s+de\\s+verificaci[oó]n',
  'código\\s+de\\s+verificação',
  'code\\s+de\\s+v[ée]rification',
  'code\\s+de\\s+confirmation',
  'code\\s+de\\s+s[ée]curit[ée]',
  'код(?:а|ом)?(?:\\s+подтверждения)?',
  'пароль',
  'одноразов\\p{L}*',
  'einmal(?:passwort|code|kennwort)',
  // it
  'codice',
  'monouso',
  // pt, es (beyond the above)
  'c[óo]digo\\s+de\\s+(?:acesso|acceso|seguran[çc]a|seguridad|confirma[çc][ãa]o|confirmaci[óo]n)',
  'clave\\s+de\\s+un\\s+solo\\s+uso',
  'contraseña\\s+(?:de\\s+un\\s+solo\\s+uso|temporal)',
  'senha\\s+(?:única|temporária|de\\s+uso\\s+único)',
  // ro
  'cod(?:ul|ului)?',
  // vi
  'mã\\s+(?:xác\\s+minh|xác\\s+nhận|xác\\s+thực|otp|bảo\\s+mật|kích\\s+hoạt|đăng\\s+nhập|truy\\s+cập)',
  // tr
  'tek\\s+kullanımlık(?:\\s+\\p{L}+)?',
  '(?:doğrulama|onay|güvenlik|giriş|aktivasyon)\\s+kod\\p{L}*',
  // pl, cs, sk, hu, ms, sv, da, no: the bare word "code" (compounds are COMPOUND below)
  'kod(?:u|em|zie)?',
  'kód(?:u|em|ot|ja|od|om)?',
  'jednorazow\\p{L}*',
  'jednorázov\\p{L}*',
  'weryfikacyjn\\p{L}*',
  'ověřovací',
  'egyszer\\s+használatos',
  'kertakäyttöi\\p{L}*',
  'engangs\\p{L}*',
  'engångs\\p{L}*',
  // el
  'κωδικ\\p{L}*',
  // uk, ru
  'одноразов\\p{L}*',
  'перевірочн\\p{L}*',
  'проверочн\\p{L}*',
  // id, ms, tl
  'kode',
  'TAC',
];
const WEAK_LATIN = [
  'verification',
  'verify',
  'verifying',
  'verified',
  'confirm',
  'confirmation',
  'authentication',
  'authenticate',
  'authenticator',
  'two-factor',
  '2-step',
  'verificación',
  'verificacion',
  'verificação',
  'verificar',
  'confirmar',
  'confirme',
  'vérification',
  'vérifier',
  'confirmer',
  'bestätigung',
  'bestätigen',
  'verifizierung',
  'verifizieren',
  'anmeldung',
  'подтверждени\\p{L}*',
  'подтвердить',
  'вход\\p{L}*',
  'verifica',
  'conferma',
  'accesso',
  'xác\\s+minh',
  'xác\\s+nhận',
  'doğrulama',
  'doğrula\\p{L}*',
  'şifre\\p{L}*',
  'weryfikacj\\p{L}*',
  'potwierdz\\p{L}*',
  'logowani\\p{L}*',
  'verificatie',
  'bevestig\\p{L}*',
  'inloggen',
  'verifiering',
  'bekräfta',
  'logga\\s+in',
  'verifikasi',
  'konfirmasi',
  'pengesahan',
  'verificare',
  'confirmare',
  'autentificare',
  'ověření',
  'potvrzen\\p{L}*',
  'přihlášení',
  'ellenőrz\\p{L}*',
  'megerősít\\p{L}*',
  'belépés\\p{L}*',
  'vahvist\\p{L}*',
  'kirjautu\\p{L}*',
  'bekræft\\p{L}*',
  'bekreft\\p{L}*',
  'verifiser\\p{L}*',
  'επαλήθευσ\\p{L}*',
  'επιβεβαίωσ\\p{L}*',
  'підтвердж\\p{L}*',
  'вхід\\p{L}*',
  'входу',
];
const STRONG_CJK = [
  '验证码',
  '校验码',
  '动态码',
  '驗證碼',
  '確認碼',
  '确认码',
  '认证码',
  '認證碼',
  '安全码',
  '安全碼',
  '动态密码',
  '動態密碼',
  '一次性密码',
  '校驗碼',
  '認証コード',
  '確認コード',
  '認証番号',
  '確認番号',
  'ワンタイム',
  'セキュリティコード',
  '検証コード',
  'ワンタイムパスワード',
  '인증번호',
  '인증 ?코드',
  '보안 ?코드',
  '확인 ?코드',
  '승인번호',
  '인증 ?번호',
  'OTP',
  '激活码',
  '激活碼',
  '短信码',
  '短信验证码',
  '登录码',
  '登入碼',
  '动态口令',
  '動態口令',
  '一次性密碼',
  '驗證代碼',
  '验证代码',
  '認證碼',
  'ワンタイムコード',
  'パスコード',
  'ログインコード',
  '認証キー',
  '承認コード',
  '인증코드',
  '로그인 ?코드',
  '일회용 ?비밀번호',
  // Thai, Arabic, Hebrew, Devanagari: matched without word boundaries like CJK
  'รหัสยืนยัน',
  'รหัส ?OTP',
  'รหัสผ่านแบบใช้ครั้งเดียว',
  'รหัสผ่านครั้งเดียว',
  'รหัสความปลอดภัย',
  'รหัสเข้าสู่ระบบ',
  'رمز التحقق',
  'رمز التأكيد',
  'رمز الأمان',
  'رمز التفعيل',
  'رمز الدخول',
  'كود التحقق',
  'كود التفعيل',
  'كود التأكيد',
  'كلمة المرور لمرة واحدة',
  'كلمة مرور لمرة واحدة',
  'קוד (?:ה)?אימות',
  'קוד (?:ה)?אישור',
  'קוד (?:ה)?כניסה',
  'קוד חד[- ]פעמי',
  'סיסמה חד[- ]פעמית',
  'הסיסמה החד[- ]פעמית',
  'סיסמא חד[- ]פעמית',
  'सत्यापन कोड',
  'पुष्टि कोड',
  'पुष्टिकरण कोड',
  'ओटीपी',
  'वन टाइम पासवर्ड',
  'लॉगिन कोड',
];
const WEAK_CJK = ['验证', '驗證', '認証', '인증', '確認', 'ยืนยัน', 'التحقق', 'אימות', 'सत्यापन'];

// Compound words ending in code/код ("Bestätigungscode", "passcode", "Anmeldecode"); the prefix decides whether it is a decoy.
const COMPOUND_TAIL = '(?:codes?|kode[nr]?|kod(?:en|u|un|unu|unuz|em|zie)?|koodi(?:a|si|n|t)?|kód(?:u|ot|ja|od|om|em)?|код(?:а|ом|у)?)';
const COMPOUND = `[\\p{L}]*${COMPOUND_TAIL}`;
const COMPOUND_TAIL_RE = new RegExp(`${COMPOUND_TAIL}$`, 'iu');

// CJK keywords longest first: the alternation takes the first that matches, so ワンタイムパスワード must come before
// ワンタイム for the keyword reported (FoundCode.keyword) to be the whole word.
const CJK_KEYWORDS = [...STRONG_CJK, ...WEAK_CJK].sort((a, b) => b.length - a.length);
const KEYWORD_RE = new RegExp(
  `(?<![\\p{L}\\p{N}])(?:${[...STRONG_LATIN, ...WEAK_LATIN].join('|')}|${COMPOUND}|${LEXICON_SOURCES.bounded}|${LEXICON_SOURCES.confirm})(?![\\p{L}\\p{N}])|${CJK_KEYWORDS.join('|')}|${LEXICON_SOURCES.unbounded}`,
  'giu',
);
const KEYWORD_TEST = new RegExp(KEYWORD_RE.source, 'iu');
const WEAK_RE = new RegExp(`^(?:${[...WEAK_LATIN, ...WEAK_CJK].join('|')}|${LEXICON_SOURCES.confirm})$`, 'iu');

// "code" that names something else: promo/postal/source/error codes and friends.
const NOT_A_CODE_PREFIX =
  /^(?:promo|rabat|gutschein|aktions|discount|coupon|kupon|voucher|gift|gave|present|lahja|alennus|korting|actie|cadeau|kado|kampanj|bonus|werbe|empfehl|einlad|sconto|regalo|referral|invite|post|zip|bar|qr|source|error|status|fehler|промо|штрих|индекс|скидоч|подароч|знижк)/iu;
const NOT_A_CODE_BEFORE =
  /(?<![\p{L}])(?:promo(?:tional)?|discount|coupon|voucher|gift|postal|post|zip|area|country|source|qr|bar|error|status|reference|referral|invite|invitation|tracking|dress|offer|sale|colou?r|html|auth(?:ori[sz]ation)?|approval|redeem|redemption|referencia|recovery|backup|vs|indirim|kupon|promosyon|hediye|referans|kampanya|slevov\p{L}*|dárkov\p{L}*|kupón\p{L}*|rabat\p{L}*|booking|customer|product|airport)[\s-]*$/iu;
const NOT_A_CODE_AFTER = new RegExp(
  '^\\s*(?:review|reviews|postal|promo\\p{L}*|of\\s+conduct|base|snippet|block|signing|has\\s+been\\s+used|was\\s+(?:just\\s+)?used|is\\s+no\\s+longer|expired' +
    // es/pt/fr/it/ro "code of <discount, gift, booking, customer...>"
    '|d[eio]\\s+(?:descuento|réduction|promo\\p{L}*|desconto|reducere|reduceri|cup[óo]n|cupom|regalo|presente|cadeau|parrainage|reserva|réservation|prenotazione|rastreio|rastreamento|client\\p{L}*|produ\\p{L}*|poștal|invitaci[óo]n|convite|referid\\p{L}*|indicação)' +
    '|sconto|promozional\\p{L}*|fiscale|postale|prenotazione|cliente|prodotto|articolo|regalo|coupon|voucher|rabatow\\p{L}*|promocyjn\\p{L}*|pocztow\\p{L}*|odbioru|kuponu|zniżkow\\p{L}*|polecając\\p{L}*' +
    '|diskon|diskaun|kupon|referal|rujukan|baucar|κουπονιού|έκπτωσης|προσφοράς|δώρου|קופון|הנחה|הטבה|שובר|הקופון|الخصم|الكوبون|القسيمة|الإحالة|الترويج|الهدية|البريدي|ส่วนลด|คูปอง|โปรโมชั่น|कूपन|छूट|प्रोमो|रेफ़रल|скидк\\p{L}*|купон\\p{L}*|знижк\\p{L}*|подар\\p{L}*)',
  'iu',
);
// Shopping vocabulary around a keyword makes it a coupon, gift-card or referral code, in any language ("Use code
// SAVE20 at checkout", "Gift card number … PIN", "优惠券代码", "クーポンコード", "kod rabatowy", "كود الخصم").
const PROMO_NEAR = new RegExp(
  [
    '(?<![\\p{L}])(?:checkout|discount|coupon|voucher|promo\\p{L}*|e?gift(?:\\s*card)?|referral|refer\\s+a\\s+friend|redeem\\p{L}*|rabatt?\\p{L}*|gutschein\\p{L}*',
    'réduction|remise|parrainage|descuento|cup[óo]n|cupom|desconto|sconto|korting\\p{L}*|presentkort|gavekort|lahjakort\\p{L}*|alennus\\p{L}*',
    'slev\\p{L}*|kupon\\p{L}*|kupong|kedvezmény\\p{L}*|reducere|reduceri|indirim\\p{L}*|kampanya|diskon|diskaun|potongan|baucar|giảm\\s+giá|khuyến\\s+mãi|ưu\\s+đãi',
    'κουπόν\\p{L}*|έκπτωσ\\p{L}*|скидк\\p{L}*|промо\\p{L}*|купон\\p{L}*|подарочн\\p{L}*|знижк\\p{L}*|подарунков\\p{L}*)(?![\\p{L}])',
    '优惠|優惠|折扣|礼品卡|禮品卡|礼券|禮券|兑换码|兌換碼|邀请码|邀請碼|推荐码|推薦碼|クーポン|割引|ギフト|招待コード|紹介コード|쿠폰|할인|기프트|상품권|추천인|초대 ?코드',
    'ส่วนลด|คูปอง|โปรโมชั่น|خصم|كوبون|قسيمة|הנחה|קופון|שובר|छूट|कूपन',
    // "20% off" (the percentage is masked by then)
    // A percentage in any language ("20% off", "punguzo la 20%"; the percentage is masked by then, its sign kept)
    `${MASK_CHAR}%`,
  ].join('|'),
  'iu',
);
// A meeting's passcode or PIN sits next to the meeting's own identifier: an invitation, not a verification.
const MEETING_NEAR = new RegExp(
  '(?<![\\p{L}])(?:meeting[- ](?:id|number|link)|webinar[- ]id|conference[- ]id|dial[- ]in|join\\s+(?:the\\s+)?meeting|besprechungs-?id|konferenz-?id|meeting-id' +
    '|id\\s+(?:de\\s+)?(?:la\\s+)?(?:réunion|reunión|riunione|reunião|conferencia|conférence)|vergader-?id|id\\s+(?:spotkania|конференции|встречи|зустрічі)|toplantı\\s+kimliği)(?![\\p{L}])' +
    '|ミーティングID|ミーティング ID|会议号|会议 ID|會議 ID|會議號|회의 ID',
  'iu',
);
const PROMO_BEFORE = 60;
const PROMO_AFTER = 40;
// Code-like keywords (as opposed to "verify", "sign in"): the ones a NOT_A_CODE_BEFORE/AFTER label can turn into a decoy.
const CODE_WORD = /cod|kod|kód|koodi|код|κωδικ|קוד|رمز|كود|کد|รหัส|कोड|mã|clave|şifre|şifrə|コード|码|碼|번호|코드|კოდ|կոդ/iu;

const KOD_PREPOSITION =
  /^\s+(?!(?:to|do|jest|je|za|sms|pin|otp|weryfik|jednoraz|potwierdz|dostęp|bezpiecz|logowan|autoryz|aktyw|został|ważn|wygas|wygaś|zabezpiecz|pengesahan|keselamatan|pengaktifan|log\s+masuk|sekali|anda|ini|ověř|potvrd|prijav|verifik)(?![\p{L}]))\p{Ll}/u;

// The same in Serbian Cyrillic ("пошиљка је код курира"); Russian, Ukrainian, Bulgarian "код" takes its qualifiers.
const KOD_PREPOSITION_CYRILLIC =
  /^\s+(?!(?:(?:за|је|е|для|из|в|на|от|по|с|з|смс|sms)(?![\p{L}])|(?:подтвержд|потврд|потвърж|підтвердж|верифик|верифік|провер|перевір|доступ|безопас|безпек|вход|вхід|авториз|актив|пријав|ниже|выше|нижче|одноразов|сигурн)))\p{Ll}/u;

interface Keyword {
  start: number;
  end: number;
  strong: boolean;
}

const PROMO_NEAR_ALL = new RegExp(PROMO_NEAR.source, 'giu');
const MEETING_NEAR_ALL = new RegExp(MEETING_NEAR.source, 'giu');

/** Where `re` matches in `s`, as sorted [start, end) pairs. */
function spans(s: string, re: RegExp): [number, number][] {
  return [...s.matchAll(re)].map((m) => [m.index, m.index + m[0].length]);
}

/** Whether one of the sorted spans lies wholly inside [from, to). */
function spanWithin(all: [number, number][], from: number, to: number): boolean {
  let lo = 0;
  let hi = all.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (all[mid]![0] < from) lo = mid + 1;
    else hi = mid;
  }
  return lo < all.length && all[lo]![1] <= to;
}

function findKeywords(s: string, matches: Iterable<RegExpExecArray> = s.matchAll(KEYWORD_RE)): Keyword[] {
  const out: Keyword[] = [];
  // Shopping and meeting words near a keyword are looked for once in the whole text, not around each keyword.
  let near: [number, number][][] | null = null;
  for (const m of matches) {
    const word = m[0];
    const start = m.index;
    const end = start + word.length;
    const lower = word.toLowerCase();
    // The bare word "Pin"/"pin" is a verb or a map pin; PIN as a code is written in capitals.
    if (lower === 'pin' && word !== 'PIN') continue;
    if (lower === 'tan' && word !== 'TAN') continue;
    if (lower === 'tac' && word !== 'TAC') continue;
    // South Slavic "kod" is also a preposition ("kod kurira": with the courier). Bare "kod" followed by a lower-case
    // word counts only when that word goes with the noun (Polish, Malay, Croatian qualifiers and verbs).
    if (lower === 'kod' && KOD_PREPOSITION.test(s.slice(end, end + 24))) continue;
    if (lower === 'код' && KOD_PREPOSITION_CYRILLIC.test(s.slice(end, end + 24))) continue;
    if (COMPOUND_TAIL_RE.test(word) && !/^(?:pass|pin|einmal|one)/iu.test(word)) {
      const prefix = word.replace(COMPOUND_TAIL_RE, '');
      if (prefix && NOT_A_CODE_PREFIX.test(prefix)) continue;
    }
    if (CODE_WORD.test(word)) {
      if (NOT_A_CODE_BEFORE.test(s.slice(Math.max(0, start - 24), start))) continue;
      if (NOT_A_CODE_AFTER.test(s.slice(end, end + 30))) continue;
    }
    near ??= [spans(s, PROMO_NEAR_ALL), spans(s, MEETING_NEAR_ALL)];
    if (near.some((all) => spanWithin(all, Math.max(0, start - PROMO_BEFORE), start) || spanWithin(all, end, end + PROMO_AFTER))) continue;
    out.push({ start, end, strong: !WEAK_RE.test(word) });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Candidates

interface Candidate {
  code: string;
  start: number;
  end: number;
  digits: boolean;
}

const ALNUM_STOP = /^(?:UTF|ISO|SHA|MD|COVID|SARS|RFC|CVE|AES|RSA|TLS|SSL|USB|MP|IPV|HTTP|WPA|DDR|LTE|PCIE|HDMI|ECMA|ES|IOS|IE|WIN)-?\d/;
const UNIT_TOKEN = /^\d{1,4}(?:PX|PT|EM|GB|MB|KB|TB|MHZ|GHZ|HZ|MP|FPS|K|P|G|H|D|M|S|X|ST|ND|RD|TH|AM|PM|HRS?|MIN|MM|CM|KM|KG|ML)$/;
const UNIT_AFTER =
  /^[^\S\n]?(?:px|pt|em|rem|vh|vw|dpi|ms|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|months?|years?|yrs?|kb|mb|gb|tb|kg|km|mi|miles?|items?|points?|pts|users?|people|members|views|times|x|×|st|nd|rd|th|分钟|分鐘|分|秒|小时|小時|天|日|个|個|件|元|次|人|名|時間|分間|円|点|초|분|시간|일|원|개|мин\p{L}*|сек\p{L}*|час\p{L}*|дн\p{L}*|шт|руб\p{L}*|₽|minuten|min\.|stunden|tage|stück|minutos|horas|días|dias|heures?|jours?)(?![\p{L}])/iu;
const YEAR_BEFORE =
  /(?<![\p{L}])(?:©|\(c\)|copyright|since|seit|desde|depuis|established|est\.|founded|gegründet|fundad[ao]|fondée?|year|jahr|año|année|ano|год|in|im|en|de|em|en|fy|q[1-4])\W{0,3}$/iu;
const YEAR_AFTER = /^\s?(?:年|년|г\.|года?|[-–]\s?\d{2,4})/u;

const isAlnumChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9]/.test(c);

/** Whether the characters around [start, end) make the token part of something larger (a number, a path, a mask). */
function badNeighbours(s: string, start: number, end: number): boolean {
  const p = s[start - 1];
  const pp = s[start - 2];
  const n = s[end];
  const nn = s[end + 1];
  if (p === MASK_CHAR || n === MASK_CHAR) return true;
  if (p !== undefined && /[_/\\#@$€£¥₩₽+=&?%~]/.test(p)) return true;
  if ((p === '.' || p === ',' || p === '-') && isAlnumChar(pp)) return true;
  if (p === ':' && pp !== undefined && /\d/.test(pp)) return true;
  if (n !== undefined && /[_/\\@%=°]/.test(n)) return true;
  if ((n === '.' || n === ',' || n === ':' || n === '-') && isAlnumChar(nn)) return true;
  return false;
}

function candidates(s: string): Candidate[] {
  // Hyphen chunks: "581-209", "G-730145", "555-35-35"; spaces join digit chunks into runs: "739 104", "138 0013 8000".
  const chunks: { parts: string[]; start: number; end: number }[] = [];
  for (const m of s.matchAll(/[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*/g)) {
    chunks.push({ parts: m[0].split('-'), start: m.index, end: m.index + m[0].length });
  }
  const out: Candidate[] = spacedCandidates(s);
  const isDigitChunk = (c: (typeof chunks)[number]) => c.parts.every((p) => /^\d+$/.test(p));

  let i = 0;
  while (i < chunks.length) {
    const c = chunks[i]!;
    if (!isDigitChunk(c)) {
      const alnum = alnumCandidate(s, c.parts, c.start, c.end);
      if (alnum) out.push(alnum);
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < chunks.length && isDigitChunk(chunks[j + 1]!) && s.slice(chunks[j]!.end, chunks[j + 1]!.start) === ' ') j++;
    const run = chunks.slice(i, j + 1);
    i = j + 1;
    const groups = run.flatMap((r) => r.parts);
    const start = run[0]!.start;
    const end = run[run.length - 1]!.end;
    // Three or more groups is a phone, card, tracking or dial-in number, never a code.
    if (groups.length >= 3) continue;
    if (groups.length === 2) {
      const [a, b] = groups as [string, string];
      if (a.length >= 3 && a.length <= 4 && b.length >= 3 && b.length <= 4) {
        if (!badNeighbours(s, start, end)) out.push({ code: a + b, start, end, digits: true });
        continue;
      }
      if (run.length === 2) {
        // "10 482913": a stray number beside a code; consider each on its own.
        for (const r of run) {
          const g = r.parts[0]!;
          if (g.length >= 4 && g.length <= 8 && !badNeighbours(s, r.start, r.end)) out.push({ code: g, start: r.start, end: r.end, digits: true });
        }
      }
      continue;
    }
    const g = groups[0]!;
    if (g.length >= 4 && g.length <= 8 && !badNeighbours(s, start, end)) out.push({ code: g, start, end, digits: true });
  }
  return out;
}

/**
 * A code printed one character per table cell, or letter-spaced with real spaces ("6 0 4 9 1 7", "X 7 Q 2 M 9"):
 * htmlToText puts a space between cells, so 4 to 8 single characters separated by single spaces are one code,
 * returned joined. (One character per <span> needs nothing: inline tags vanish without a space.)
 */
function spacedCandidates(s: string): Candidate[] {
  const out: Candidate[] = [];
  for (const m of s.matchAll(/(?<![A-Za-z0-9])[A-Z0-9](?: [A-Z0-9]){3,7}(?![A-Za-z0-9])/g)) {
    const start = m.index;
    const end = start + m[0].length;
    // A run glued to more single characters ("1 2 3 4 5 6 7 8 9") is a list or a keypad, not a code.
    if (/(?:^|[^A-Za-z0-9])[A-Za-z0-9] $/.test(s.slice(Math.max(0, start - 3), start))) continue;
    if (/^ [A-Za-z0-9](?:[^A-Za-z0-9]|$)/.test(s.slice(end, end + 3))) continue;
    const code = m[0].replace(/ /g, '');
    if (badNeighbours(s, start, end)) continue;
    if (/^\d+$/.test(code)) out.push({ code, start, end, digits: true });
    else {
      const alnum = alnumCandidate(s, [code], start, end);
      if (alnum) out.push(alnum);
    }
  }
  return out;
}

function alnumCandidate(s: string, parts: string[], start: number, end: number): Candidate | null {
  if (parts.length > 2) return null;
  const flat = parts.join('');
  if (flat.length < 4 || flat.length > 10) return null;
  // Codes are printed in capitals; lower-case mixes are hashes, ids and words ("3f9a2c1", "iOS18").
  if (!/^[A-Z0-9]+$/.test(flat) || !/\d/.test(flat) || !/[A-Z]/.test(flat)) return null;
  const code = parts.join('-');
  if (ALNUM_STOP.test(code) || UNIT_TOKEN.test(flat)) return null;
  if (badNeighbours(s, start, end)) return null;
  return { code, start, end, digits: false };
}

// ---------------------------------------------------------------------------------------------------------------
// Scoring

const MAX_GAP = 80;
const LABEL_BEFORE =
  /(?:[:：]|(?<![\p{L}])(?:is|are|was|ist|lautet|est|es|é|è|são|será|sind|это|är|er|là|adalah|ialah|ay|este|είναι|jest|je|—|-)|[是为為は]|คือ|هو|הוא)\s*["'“‘«「『【[(（]?\s*$/iu;

function lengthPoints(c: Candidate): number {
  const n = c.code.replace('-', '').length;
  if (n === 6) return 30;
  if (n === 4 || n === 8) return 20;
  if (n === 5 || n === 7) return 14;
  return 8;
}

function isYearLike(code: string): boolean {
  if (!/^\d{4}$/.test(code)) return false;
  const y = Number(code);
  return y >= 1900 && y <= 2099;
}

function nearbyMonth(s: string, start: number, end: number): boolean {
  return MONTH_RE.test(s.slice(Math.max(0, start - 16), start)) || MONTH_RE.test(s.slice(end, end + 16));
}

/** The line holding [start, end) if it is short enough to be "the code on its own line"; null otherwise. */
function shortLineAround(s: string, start: number, end: number): string | null {
  // Looks only 40 characters each way, so that a one-line megabyte mail stays linear.
  const from = Math.max(0, start - 40);
  const left = s.slice(from, start);
  const nl = left.lastIndexOf('\n');
  if (nl === -1 && from > 0) return null;
  const right = s.slice(end, end + 40);
  const nr = right.indexOf('\n');
  if (nr === -1 && end + 40 < s.length) return null;
  return left.slice(nl + 1) + s.slice(start, end) + (nr === -1 ? right : right.slice(0, nr));
}

const LIST_ITEM = /^\s*(?:\d{1,3}[.)]\s*)?[A-Za-z0-9]{4,10}(?:[- ][A-Za-z0-9]{3,5})?\s*$/;

/** The line above the one holding `at` (at most 80 characters of it). */
function lineBefore(s: string, at: number): string {
  const start = s.lastIndexOf('\n', at - 1);
  if (start <= 0) return '';
  return s.slice(Math.max(s.lastIndexOf('\n', start - 1) + 1, start - 80), start);
}

/** The line below the one holding `at` (at most 80 characters of it). */
function lineAfter(s: string, at: number): string {
  const end = s.indexOf('\n', at);
  if (end === -1) return '';
  const next = s.indexOf('\n', end + 1);
  return s.slice(end + 1, Math.min(next === -1 ? s.length : next, end + 81));
}

/** Score of one candidate in one segment and the keyword it was tied to, or null when it may not be a code at all. */
function scoreCandidate(s: string, c: Candidate, keywords: Keyword[], inSubject: boolean): { score: number; keyword: Keyword } | null {
  // Keywords are sorted by position; only those within reach are looked at, so long mails stay linear.
  const reach = MAX_GAP * 2.5;
  let lo = 0;
  let hi = keywords.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keywords[mid]!.end < c.start - reach) lo = mid + 1;
    else hi = mid;
  }
  // No keyword within reach: not a code, and none of the checks below need to run (most numbers
  // of a long mail are like this; checking them all made a 64K text cost ~150 ms).
  if (lo >= keywords.length || keywords[lo]!.start > c.end + reach) return null;
  const after = s.slice(c.end, c.end + 16);
  if (c.digits && UNIT_AFTER.test(after)) return null;
  if (/^\s?[ap]\.?m\.?(?![a-z])/i.test(after)) return null;
  const before = s.slice(Math.max(0, c.start - 24), c.start);
  if (/(?:№|\bno\.|\bnr\.|#)\s*$/i.test(before)) return null;

  const yearLike = isYearLike(c.code);
  if (yearLike && (YEAR_BEFORE.test(before) || YEAR_AFTER.test(after) || nearbyMonth(s, c.start, c.end))) return null;

  const line = shortLineAround(s, c.start, c.end);
  const ownLine = line !== null && line.replace(/[\s"'“”‘’«»「」『』【】[\]()（）:：.。,，!！-]/g, '') === c.code.replace('-', '');

  // A line of its own between other lines that are numbers alone: a list (backup codes), not the code to type.
  if (ownLine && (LIST_ITEM.test(lineBefore(s, c.start)) || LIST_ITEM.test(lineAfter(s, c.end)))) return null;

  let best: { gap: number; sameLine: boolean; before: boolean; strong: boolean; keyword: Keyword } | null = null;
  for (let ki = lo; ki < keywords.length; ki++) {
    const k = keywords[ki]!;
    if (k.start > c.end + reach) break;
    if (k.end > c.start && k.start < c.end) continue;
    const kwBefore = k.end <= c.start;
    const between = kwBefore ? s.slice(k.end, c.start) : s.slice(c.end, k.start);
    const breaks = between.split('\n').length - 1;
    if (breaks > 1) continue;
    const gap = between.length;
    // A code alone on its line belongs to the sentence right above or below it, however long that sentence is.
    const ok = gap <= MAX_GAP || (ownLine && breaks === 1 && gap <= MAX_GAP * 2.5);
    if (!ok) continue;
    const effective = Math.min(gap, MAX_GAP);
    if (!best || effective - (k.strong ? 10 : 0) < best.gap - (best.strong ? 10 : 0)) {
      best = { gap: effective, sameLine: breaks === 0, before: kwBefore, strong: k.strong, keyword: k };
    }
  }
  if (!best) return null;

  let score = lengthPoints(c);
  score += 25 * (1 - best.gap / (MAX_GAP + 20));
  if (best.sameLine) score += 5;
  if (best.before) score += 3;
  if (best.strong) score += 6;
  const labelled = LABEL_BEFORE.test(s.slice(Math.max(0, c.start - 12), c.start));
  if (labelled) score += 12;
  if (ownLine) score += 12;
  if (c.digits) score += 8;
  else {
    // Letters-and-digits tokens are mostly product names and ids unless a keyword introduces them.
    if (!(best.before && best.gap <= 30 && (labelled || ownLine))) score -= 14;
    if (/^[A-Z]{4,}\d{1,4}$|^\d{1,4}[A-Z]{4,}$/.test(c.code)) score -= 20;
  }
  if (yearLike) score -= 8;
  if (inSubject) score += 4;
  return { score, keyword: best.keyword };
}

// Below this, a candidate is only weakly tied to a keyword (e.g. an unlabelled letters-and-digits token); null is safer.
const MIN_SCORE = 35;
// About the best a labelled 6-digit code can reach; maps raw points onto 0..1 for callers.
const MAX_SCORE = 110;

/**
 * How much of a message is scanned: codes sit near the top, so the text's first 64K characters and the HTML's
 * first 256 KB, rendered to text and cut the same way. 16K would be cheaper but misses a code at the end of a
 * 100 KB HTML mail (test/unit/mail-codes.test.ts).
 */
export const MAX_SCANNED_TEXT = 65_536;
const MAX_SCANNED_HTML = 262_144;

// ---------------------------------------------------------------------------------------------------------------
// Scanning in steps
//
// Keyword-dense text costs ~0.13 ms per 1K characters of Latin-1 text to scan (measured 2026-11-26, CPU time: a mail of
// 64K of text and 256K of HTML ~17 ms, ~57 ms before MASK_CHAR became Latin-1), and about three times that where a
// window holds characters beyond Latin-1 (curly quotes, other scripts): too long to hold a worker's event loop
// (IMAP IDLE, lock renewals, other jobs) either way.
// The scan is written as a generator that yields between small slices of work — a window of text, 512 HTML
// tags — and extractCodeAsync gives the event loop a turn whenever SLICE_MS of work has run.

/** Work that yields between slices and returns T at the end. */
type Steps<T> = Generator<void, T, void>;

function drain<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** How long the scan may run before it lets other callbacks in. */
const SLICE_MS = 3;

async function drainYielding<T>(steps: Steps<T>): Promise<T> {
  let since = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - since >= SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
  }
}

// A window is scanned with CONTEXT characters of its neighbours on each side (whole lines where they are short),
// and only the candidates that start inside it are counted: every rule looks at most MAX_GAP * 2.5 = 200
// characters away from a candidate, so a code and its keyword on either side of a window's edge are still paired.
const WINDOW = 4_096;
const CONTEXT = 384;

interface Window {
  /** The window with its context. */
  text: string;
  /** Where the window itself starts and ends in `text`. */
  from: number;
  to: number;
}

function lineStart(s: string, at: number): number {
  if (at <= 0) return 0;
  const nl = s.lastIndexOf('\n', at);
  return nl === -1 || nl < at - CONTEXT ? at : nl + 1;
}

function lineEnd(s: string, at: number): number {
  if (at >= s.length) return s.length;
  const nl = s.indexOf('\n', at);
  return nl === -1 || nl > at + CONTEXT ? at : nl;
}

function* windowsOf(s: string): Generator<Window> {
  if (s.length <= WINDOW + CONTEXT) {
    yield { text: s, from: 0, to: s.length };
    return;
  }
  for (let start = 0; start < s.length; ) {
    // Windows end at a line break where there is one near, so a line is rarely split.
    const end = Math.min(s.length, lineEnd(s, start + WINDOW));
    const ctxStart = start === 0 ? 0 : lineStart(s, start - CONTEXT);
    const ctxEnd = Math.min(s.length, lineEnd(s, end + CONTEXT));
    yield { text: s.slice(ctxStart, ctxEnd), from: start - ctxStart, to: end - ctxStart };
    start = end;
  }
}

type Found = Map<string, { score: number; seen: number; source: CodeFoundIn; keyword: string }>;

const DIAL_IN = /(?<![\d+])\d{3} \d{4} \d{4}(?!\d)/;

// A window cut from a two-byte text (one curly quote in a mail makes it so) that holds only Latin-1 characters itself,
// made one byte wide again: the patterns run many times faster on it (see MASK_CHAR).
const BEYOND_LATIN1 = /[\u0100-\uffff]/;
// Typographic quotes (’ “ ” „, the commonest characters beyond Latin-1 in Latin-script mail) are read as their ASCII
// forms first, one character for one so that offsets hold: a text whose only such characters they are becomes one byte
// wide too (a mail with a curly apostrophe in every window cost ~70 ms to scan, against ~18 ms without).
const TYPOGRAPHIC_QUOTES = /[\u2018-\u201f]/g;
const asciiQuote = (q: string) => (q <= '\u201b' ? "'" : '"');
function oneByte(s: string): string {
  if (BEYOND_LATIN1.test(s)) {
    s = s.replace(TYPOGRAPHIC_QUOTES, asciiQuote);
    if (BEYOND_LATIN1.test(s)) return s;
  }
  return Buffer.from(s, 'latin1').toString('latin1');
}

function scanWindow(w: Window, source: CodeFoundIn, found: Found): void {
  const { masked, matches } = maskWithKeywords(oneByte(w.text));
  if (matches.length === 0) return;
  const keywords = findKeywords(masked, matches);
  if (keywords.length === 0) return;
  let pinWithMoney: boolean | undefined;
  for (const c of candidates(masked)) {
    if (c.start < w.from || c.start >= w.to) continue;
    const scored = scoreCandidate(masked, c, keywords, source === 'subject');
    if (scored === null) continue;
    // A meeting's id (three groups: 712 3456 7890) on its line or the line above: the number is the meeting's passcode.
    if (DIAL_IN.test(w.text.slice(w.text.lastIndexOf('\n', w.text.lastIndexOf('\n', c.start - 1) - 1) + 1, c.start))) continue;
    // Masks keep every offset, so the keyword's span in the unmasked text is the keyword as printed.
    const keyword = w.text.slice(scored.keyword.start, scored.keyword.end);
    // A PIN beside an amount of money, with no validity phrase: a gift card's or a card's PIN, in any language.
    if (keyword === 'PIN' && (pinWithMoney ??= hasMoney(w.text) && !mentionsValidity(w.text))) continue;
    const at = { score: scored.score, source, keyword };
    const prev = found.get(c.code);
    if (prev) {
      // On a tie, html: a message without a text part still has a text (mailparser renders it from the HTML).
      if (at.score > prev.score || (at.score === prev.score && at.source === 'html')) Object.assign(prev, at);
      prev.seen++;
    } else found.set(c.code, { ...at, seen: 1 });
  }
}

function* extractSteps(msg: CodeSource): Steps<FoundCode | null> {
  const segments: { text: string; source: CodeFoundIn }[] = [];
  if (msg.subject) segments.push({ text: tidy(normalise(msg.subject.slice(0, MAX_SCANNED_TEXT))), source: 'subject' });
  if (msg.text) segments.push({ text: tidy(normalise(msg.text.slice(0, MAX_SCANNED_TEXT))), source: 'text' });
  yield;
  if (msg.html) {
    const text = yield* htmlToTextSteps(msg.html.slice(0, MAX_SCANNED_HTML), MAX_SCANNED_TEXT);
    segments.push({ text: normalise(text.slice(0, MAX_SCANNED_TEXT)), source: 'html' });
    yield;
  }

  const found: Found = new Map();
  for (const seg of segments) {
    for (const w of windowsOf(seg.text)) {
      scanWindow(w, seg.source, found);
      yield;
    }
  }

  let best: (FoundCode & { raw: number }) | null = null;
  for (const [code, f] of found) {
    // The same code repeated (preheader, subject, body, text part) is more likely the one.
    const score = f.score + Math.min(6, 3 * (f.seen - 1));
    if (score < MIN_SCORE) continue;
    if (!best || score > best.raw || (score === best.raw && code < best.code)) best = { code, score, raw: score, source: f.source, keyword: f.keyword };
  }
  if (best) return { code: best.code, score: Math.round(Math.min(1, best.raw / MAX_SCORE) * 1000) / 1000, source: best.source, keyword: best.keyword };
  return yield* layoutSteps(segments, msg.html ?? null);
}

// ---------------------------------------------------------------------------------------------------------------
// Layout (issue 27): a code no keyword the tables know is tied to, found by how the mail sets it apart.
//
// Structure first, words second. Only short mails are read this way. A number may be the code when it stands apart —
// alone on its line (its own table cell or paragraph), given in the subject — or when a code word sits right before it
// ("Koodhka xaqiijinta: 482913"). Each such number gathers signs, and the best one is taken when they add up and no
// other number comes close:
//   styled in the HTML (bold, large, letter-spaced, a heading)   2      a code word right before it (same line or above) 3
//   alone on its line                                             1      a code word within two lines                     1
//   in the subject and in the body                                1      a validity phrase in the mail ("10 minutes")     2
//   opening the subject ("820531 …")                              1      the mail's only number, named (validity, word)   1
//   only in the subject, opening it, the body without numbers     2
// and loses them for what order, shop and newsletter mail carry: an amount of money (-2, none for a number a code word
// labels), a percentage (-3), letters in the token (-1), several other numbers (-1), eight digits (-2, none when a
// colon or code word introduces them and the mail names a validity). A mail that names an amount of money and no
// validity is an order, a receipt or a gift card: nothing in it is taken. A number an order / parcel / invoice / phone /
// meeting word introduces (with no code word between them) is never taken, nor is any when such a number is the one set
// apart. Code words are the lexicons' (code-lexicon.ts:
// cognates of "code" in any script, PIN / OTP, words from vendor translations) and the keyword tables'.

// Mails up to this long are read for their layout; past LAYOUT_SHORT_BODY (a bank's legal footer, a long template) a
// number needs one sign more.
const LAYOUT_MAX_BODY = 12_000;
const LAYOUT_SHORT_BODY = 3_000;
const LAYOUT_MAX_NUMBERS = 12;
const LAYOUT_MIN_SIGNS = 4;
// Words that make a set-apart number an identifier, an amount or a date rather than a code (stems, many languages).
// Not "account" in any language (account, račun, sąskaita, сметка, шот, ანგარიში, հաշիվ): code mails say "sign in to
// your account" right above the code; nor "phone" (phone numbers are masked by their form and their labels, and
// code mails say "enter it on your phone").
const LAYOUT_DECOY_NEAR = new RegExp(
  [
    '(?<![\\p{L}])(?:order\\p{L}*|parcel\\p{L}*|package|shipment|shipping|tracking|track|delivery|invoice\\p{L}*|receipt|booking|reservation|ticket|flight|seat|room|table|total|amount|price|balance|due|paid|payment|iban|member|customer|case|claim|policy|meeting|webinar|room|gate|platform|zip|postal|serial|model|version|year|points?|miles?',
    'bestell\\p{L}*|paket\\p{L}*|sendung\\p{L}*|rechnung\\p{L}*|betrag|kunden\\p{L}*|pedido|paquete|envío|factura|importe|commande|colis|facture|montant|ordine|pacco|fattura|importo|encomenda|fatura|valor',
    'narudžb\\p{L}*|pošiljk\\p{L}*|iznos\\p{L}*|naročil\\p{L}*|užsakym\\p{L}*|siunt\\p{L}*|pasūtījum\\p{L}*|sūtījum\\p{L}*|rēķin\\p{L}*|summa|tellimus\\p{L}*|arve\\p{L}*|sifariş\\p{L}*|bağlama|qaimə|məbləğ|eskaera|faktura|zenbatekoa|comanda|paquet|import',
    'заказ\\p{L}*|посылк\\p{L}*|счет\\p{L}*|счёт\\p{L}*|сумма|тапсырыс\\p{L}*|сәлемдеме|пратк\\p{L}*|нарачк\\p{L}*|пошиљк\\p{L}*|поръчк\\p{L}*|замовлення',
    'შეკვეთ\\p{L}*|ამანათ\\p{L}*|თანხ\\p{L}*|պատվեր\\p{L}*|ծանրոց\\p{L}*|գումար\\p{L}*)(?![\\p{L}])',
    'سفارش|مرسوله|بسته|فاکتور|مبلغ',
  ].join('|'),
  'iu',
);
const LAYOUT_DECOY_ALL = new RegExp(LAYOUT_DECOY_NEAR.source, 'giu');
const STYLED_TAG =
  /<(?:b|strong|h[1-4]|big)[\s>]|font-size\s*:\s*(?:1[89]|[2-9]\d)(?:\.\d+)?px|font-size\s*:\s*(?:1\.[2-9]|[2-9])(?:\.\d+)?(?:em|rem)|font-size\s*:\s*(?:1[4-9]|[2-9]\d)pt|font-weight\s*:\s*(?:bold|bolder|[6-9]00)|letter-spacing\s*:\s*(?!0|normal)/i;
// Money and percentages, whatever the currency: a currency sign (\p{Sc}) or ISO 4217 code beside a number, or a
// price with cents.
const ISO_CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
const MONEY_NEAR = /\p{Sc}\s?\d|\d\s?\p{Sc}|(?<![\d.,])\d{1,9}[.,]\d{2}(?![\d.,%])/u;
const CURRENCY_CODE_NEAR = /(?<![A-Za-z])([A-Z]{3})\s?\d|\d\s?([A-Z]{3})(?![A-Za-z])/g;
const PERCENT_NEAR = /\d\s?%|%\s?\d/;
// A calendar date written in digits (14.03.2027, 2027-03-14, 12/04/27), whatever the language.
const DATE_NEAR =
  /(?<![\d.])(?:(?:19|20)\d{2}\s?[-/.]\s?(?:0?[1-9]|1[0-2])\s?[-/.]\s?(?:0?[1-9]|[12]\d|3[01])|\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2}))(?![\d])/;

// An amount in thousands beside a short currency word or abbreviation no list holds ("1 250 сом", "KSh 1,500", "12.500
// Ft"): grouped by a comma or a dot, or by a space after one or two digits (a code split "482 913" is not an amount).
const GROUPED = '(?:\\d{1,3}(?:[.,]\\d{3})+|\\d{1,2}(?:[ \\u00a0]\\d{3})+)';
const GROUPED_AMOUNT = new RegExp(
  `(?<![\\d.,])${GROUPED}(?![\\d.,])[ \\u00a0]?\\p{L}[\\p{L}'.]{0,3}(?![\\p{L}])|(?<![\\p{L}])\\p{L}[\\p{L}.]{0,3}[ \\u00a0]?${GROUPED}(?![\\d.,])`,
  'u',
);

function hasMoney(s: string): boolean {
  if (MONEY_NEAR.test(s) || GROUPED_AMOUNT.test(s)) return true;
  for (const m of s.matchAll(CURRENCY_CODE_NEAR)) if (ISO_CURRENCIES.has((m[1] ?? m[2])!)) return true;
  return false;
}

/**
 * Whether an order / parcel / payment / meeting word (LAYOUT_DECOY_NEAR) introduces the number at `at` in `context`
 * (its line, or the line above and its own when it stands alone): one before it with no code word between them ("Order
 * number: 558210", not "Amount: 45.00 … OTP: 730418"), or one after it on its line when no code word labels it.
 */
function decoyWordLabels(context: string, at: number, labelled: boolean): boolean {
  let last = -1;
  let afterIt = false;
  for (const m of context.matchAll(LAYOUT_DECOY_ALL)) {
    if (m.index < at) last = m.index + m[0].length;
    else afterIt = true;
  }
  if (last !== -1 && !codeWordIn(context.slice(last, at))) return true;
  return afterIt && !labelled;
}

/** Whether a code word is in `s`: the lexicons' or the keyword tables', not South Slavic "kod" used as a preposition. */
function codeWordIn(s: string): boolean {
  const t = s.replace(/(?<![\p{L}])(?:kod|код)(?=\s+\p{Ll})/giu, (m, at: number) =>
    (m.toLowerCase() === 'kod' ? KOD_PREPOSITION : KOD_PREPOSITION_CYRILLIC).test(s.slice(at + 3, at + 27)) ? '' : m,
  );
  return mentionsCodeWord(t) || KEYWORD_TEST.test(t);
}

interface LayoutSeen {
  code: string;
  ownLine: boolean;
  source: CodeFoundIn;
  /** A code word right before it: on its line, or on the line above when it stands alone. */
  labelled: boolean;
  /** A code word in the lines around it (two above, two below). */
  near: boolean;
  /** An order / parcel / invoice / phone / meeting word introduces it, or №/#. */
  decoy: boolean;
  /** Inside a sentence, neither alone on its line nor after a label ("…: 482913") or a code word. */
  inSentence: boolean;
  /** Right after a label's colon. */
  colon: boolean;
  /** Alone on its line, under a line that ends with a colon. */
  introduced: boolean;
}

// A label's colon in the scripts that have their own (full-width, Ethiopic ፦, Armenian ՝), at the end of a line's text.
const LABEL_COLON = /[:：፦՝][ \t]*$/;

function layoutCandidates(text: string, source: CodeFoundIn): LayoutSeen[] {
  const masked = mask(text);
  const out: LayoutSeen[] = [];
  for (const c of candidates(masked)) {
    const after = masked.slice(c.end, c.end + 16);
    const before = masked.slice(Math.max(0, c.start - 24), c.start);
    if (c.digits && UNIT_AFTER.test(after)) continue;
    if (/^\s?[ap]\.?m\.?(?![a-z])/i.test(after)) continue;
    if (isYearLike(c.code)) continue;
    const line = shortLineAround(masked, c.start, c.end);
    const ownLine = line !== null && line.replace(/[\s"'“”‘’«»「」『』【】[\]()（）:：.。,，!！-]/g, '') === c.code.replace('-', '');
    const lineStart = masked.lastIndexOf('\n', c.start - 1) + 1;
    const prevStart = lineStart > 0 ? masked.lastIndexOf('\n', lineStart - 2) + 1 : lineStart;
    const lineEnd = masked.indexOf('\n', c.end);
    // The words just before it (its line, and the line above when it is alone) must not name an identifier.
    const context = masked.slice(ownLine ? prevStart : lineStart, lineEnd === -1 ? masked.length : lineEnd);
    const lead = ownLine ? masked.slice(prevStart, c.start) : masked.slice(Math.max(lineStart, c.start - 48), c.start);
    const labelled = codeWordIn(lead);
    // A dial-in or meeting number (three groups of digits) on its line or the line above makes it a meeting's passcode.
    const decoy =
      /(?:№|\bno\.|\bnr\.|#)\s*$/i.test(before) ||
      decoyWordLabels(context, c.start - (ownLine ? prevStart : lineStart), labelled) ||
      PROMO_NEAR.test(context) ||
      MEETING_NEAR.test(context) ||
      /(?<!\d)\d{2,4}[ .-]\d{3,4}[ .-]\d{4}(?!\d)/.test(text.slice(prevStart, lineEnd === -1 ? text.length : lineEnd));
    // A letters-and-digits token counts only alone on its line or labelled (else product names, ids).
    if (!c.digits && !ownLine && !labelled) continue;
    let from = lineStart;
    for (let k = 0; k < 2 && from > 0; k++) from = masked.lastIndexOf('\n', from - 2) + 1;
    let to = lineEnd === -1 ? masked.length : lineEnd;
    for (let k = 0; k < 2 && to < masked.length; k++) {
      const next = masked.indexOf('\n', to + 1);
      to = next === -1 ? masked.length : next;
    }
    const colon = LABEL_COLON.test(before);
    const introduced = ownLine && lineStart > 0 && LABEL_COLON.test(masked.slice(prevStart, lineStart - 1));
    const inSentence = !ownLine && !labelled && !colon;
    out.push({ code: c.code, ownLine, source, labelled, near: labelled || codeWordIn(masked.slice(from, to)), decoy, inSentence, colon, introduced });
  }
  return out;
}

// Typeset to be read digit by digit: letter-spaced, in a monospace face (vendors do this for codes, seldom for amounts
// or order numbers, which are merely bold or large).
const CODE_STYLE_TAG = /letter-spacing\s*:\s*(?!0|normal)|font-family\s*:[^;">]{0,80}(?:mono|courier|consolas|menlo)/i;
const BLOCK_OPEN = /<(?:td|th|div|p|h[1-6]|li|center)[\s>]/i;
const BLOCK_CLOSE = /<\/(?:td|th|div|p|h[1-6]|li|center)\s*>/i;

/**
 * How the HTML prints `code`: its style (3 typeset for reading digit by digit — letter-spaced, monospace, one box per
 * digit; 2 bold, large or a heading; 0 plain) and whether it is alone in its element (a table cell, a paragraph), with
 * nothing but tags between it and the text around it.
 */
function htmlLayout(html: string, code: string): { style: number; cell: boolean } {
  // `html` has its digits as the text reads them (native digits as ASCII), see layoutSteps.
  const chars = [...code.replace('-', '')].map((ch) => ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(chars.join('(?:\\s|&nbsp;|&#160;|<[^>]{0,300}>){0,8}'), 'g');
  let style = 0;
  let cell = false;
  for (const m of html.matchAll(re)) {
    const end = m.index + m[0].length;
    if (/[\dA-Za-z]/.test(html[m.index - 1] ?? '') || /[\dA-Za-z]/.test(html[end] ?? '')) continue;
    const head = /(?:<[^<>]{0,500}>|\s|&nbsp;)*$/.exec(html.slice(Math.max(0, m.index - 600), m.index))?.[0] ?? '';
    const tail = /^(?:<[^<>]{0,500}>|\s|&nbsp;)*/.exec(html.slice(end, end + 600))?.[0] ?? '';
    const boxed = (m[0].match(/</g)?.length ?? 0) >= 4;
    if (boxed || CODE_STYLE_TAG.test(head)) style = 3;
    else if (STYLED_TAG.test(head)) style = Math.max(style, 2);
    if (BLOCK_OPEN.test(head) && BLOCK_CLOSE.test(tail)) cell = true;
  }
  return { style, cell };
}

function* layoutSteps(segments: { text: string; source: CodeFoundIn }[], html: string | null): Steps<FoundCode | null> {
  const body = segments.filter((s) => s.source !== 'subject');
  if (body.length === 0 || body.some((s) => s.text.length > LAYOUT_MAX_BODY)) return null;
  const subject = segments.find((s) => s.source === 'subject')?.text ?? '';
  const bodyText = body.map((s) => s.text).join('\n');
  const valid = mentionsValidity(bodyText) || mentionsValidity(subject);
  const money = hasMoney(bodyText);
  // A mail that names an amount of money is an order, an invoice, a receipt or a gift card unless it says how long its
  // number is valid (a payment's one-time code does).
  if (money && !valid) return null;
  const seen: LayoutSeen[] = [];
  for (const seg of segments) {
    seen.push(...layoutCandidates(seg.text, seg.source));
    yield;
  }
  // A number set apart (or labelled) that an identifier word introduces makes the mail an order, parcel or
  // invoice mail: nothing in it is taken.
  if (seen.some((s) => s.decoy && (s.ownLine || s.source === 'subject' || s.labelled))) return null;
  // A date in a mail that names no validity: a booking, an appointment, an invoice's due date, points that expire.
  const penalty =
    (PERCENT_NEAR.test(`${subject}\n${bodyText}`) ? 3 : 0) +
    (body.some((s) => s.text.length > LAYOUT_SHORT_BODY) ? 1 : 0) +
    (!valid && DATE_NEAR.test(bodyText) ? 2 : 0);

  // Three numbers or more each alone on its line: a list (backup codes, a table of figures), not one code; and a mail
  // of many numbers is a statement or a table, whatever its layout.
  if (new Set(seen.filter((s) => s.ownLine && s.source !== 'subject').map((s) => s.code)).size >= 3) return null;
  if (new Set(seen.map((s) => s.code)).size > LAYOUT_MAX_NUMBERS) return null;
  const byCode = new Map<string, LayoutSeen[]>();
  // The HTML with its digits as the text reads them (native digits as ASCII), for htmlLayout.
  html = html?.slice(0, MAX_SCANNED_HTML).replace(NATIVE_DIGIT, nativeDigit) ?? null;
  yield;
  for (const s of seen) if (!s.decoy) byCode.set(s.code, [...(byCode.get(s.code) ?? []), s]);
  // Numbers that stand in a sentence with no code word before them: they do not compete, but many of them make a
  // mail a newsletter or a statement.
  let loose = 0;
  const scored: { code: string; signs: number; source: CodeFoundIn; short: boolean; subjectOnly: boolean }[] = [];
  for (const [code, all] of byCode) {
    const inSubject = all.some((s) => s.source === 'subject');
    const inBody = all.some((s) => s.source !== 'subject');
    const printed = html !== null && inBody ? htmlLayout(html, code) : { style: 0, cell: false };
    yield;
    // Alone on its line, or alone in its table cell or paragraph (cells of one row share a line of the text).
    const ownLine = all.some((s) => s.source !== 'subject' && s.ownLine) || printed.cell;
    // After a label's colon ("Lambar tabbatarwa: 968486"), whatever the label says: set apart, more weakly.
    const colon = all.some((s) => s.colon);
    if (!ownLine && !inSubject && !colon && !all.some((s) => s.labelled)) {
      loose++;
      continue;
    }
    // In a subject, a code word anywhere labels the number ("820531 ni kodi yako ya kuingia").
    const near = all.some((s) => s.near);
    const labelled = all.some((s) => s.labelled || (s.source === 'subject' && s.near));
    // The subject opens or closes with the number ("820531 is your code", "[Brand] 448201", "Mewngofnodi – 582013").
    const leads =
      subject.length <= 80 &&
      (new RegExp(`^\\W{0,2}${code}(?![A-Za-z0-9])`).test(subject) ||
        new RegExp(`^(?:\\[[^\\]]{1,40}\\]|\\p{L}+:|[^\\d]{1,60}\\s[:|\\-–—])\\s*${code}\\W{0,2}$`, 'u').test(subject));
    // Alone on its line under a line that ends with a colon ("Enter this number to continue:").
    const introduced = all.some((s) => s.ownLine && s.introduced);
    // Used in a sentence with no code word before it, the number is a quantity ("we now have 48213 customers").
    const inSentence = all.some((s) => s.source !== 'subject' && s.inSentence);
    const digits = code.replace('-', '').length;
    let signs =
      printed.style +
      (ownLine ? 1 : 0) +
      (colon && !ownLine ? (labelled ? 1 : 2) : 0) +
      (introduced ? 1 : 0) +
      (inSubject && inBody ? 1 : 0) +
      (leads ? 1 : 0) +
      (labelled ? 3 : near ? 1 : 0) +
      (valid ? 2 : 0);
    if (/[A-Z]/.test(code)) signs -= 1;
    // Eight digits and more, set apart with no code word, are more often an order or parcel number than a code; not
    // when a line ending in a colon or a code word introduces them in a mail with a validity phrase.
    if (digits >= 8 && !(valid && (introduced || labelled))) signs -= 2;
    if (inSentence) signs -= 2;
    // Money in the mail (a payment's code, or a top-up's reference that arrives within hours) costs 2; nothing for a
    // number a code word labels. (A mail with money and no validity was never read this far.)
    if (money && !labelled) signs -= 2;
    const source = inBody
      ? (all.find((s) => s.source !== 'subject' && (s.ownLine || s.labelled))?.source ?? all.find((s) => s.source !== 'subject')!.source)
      : 'subject';
    scored.push({ code, signs, source, short: digits <= 6 && (valid || !inBody || labelled), subjectOnly: !inBody && leads && !/000$/.test(code) });
  }
  if (scored.length === 0) return null;
  // The mail's only number gains a sign when it is given only in the subject or a validity phrase names it.
  // Opening or closing the subject and in no other place of a mail that has no other number: an order, a parcel or a
  // count in a subject is repeated in the body; a code the body refers to is not. (A round number, "5000 free spins",
  // is a promotion's.)
  const alone = scored.length === 1 && loose === 0;
  for (const s of scored) s.signs += (alone && s.short ? 1 : 0) + (alone && s.subjectOnly && !money ? 2 : 0) - penalty - (loose >= 2 ? 2 : 0);
  scored.sort((a, b) => b.signs - a.signs || (a.code < b.code ? -1 : 1));
  const [best, second] = scored;
  if (best!.signs < LAYOUT_MIN_SIGNS) return null;
  // Two numbers set apart with about the same signs: no way to tell which one is the code.
  if (second && second.signs >= best!.signs - 1) return null;
  return {
    code: best!.code,
    score: Math.round((Math.min(MAX_SCORE, MIN_SCORE + 5 * best!.signs) / MAX_SCORE) * 1000) / 1000,
    source: best!.source,
    keyword: '',
  };
}

/** The most likely verification code in a message, or null. Runs to the end in one go: for tests and tools. */
export function extractCode(msg: CodeSource): FoundCode | null {
  return drain(extractSteps(msg));
}

/** extractCode for servers: the same answer, but the event loop gets a turn every few milliseconds of scanning. */
export function extractCodeAsync(msg: CodeSource): Promise<FoundCode | null> {
  return drainYielding(extractSteps(msg));
}
